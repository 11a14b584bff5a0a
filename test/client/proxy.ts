import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface FaultyProxy {
  /** The emulator's {base_url} as seen through the proxy. */
  readonly baseUrl: string
  /** Requests that reached the proxy, as "METHOD /path". */
  readonly requests: string[]
  /** Passes every later request through. */
  heal(): void
  /** Holds every later request this long before passing it on (a slow API under a sale's load). */
  slowDown(ms: number): void
  close(): Promise<void>
}

/**
 * A real HTTP proxy in front of the emulator (which has no HTTP-error fault): the first `failures` requests get
 * `status` (with `headers`), or no answer at all when status is 'hang'; the rest are passed through.
 */
export async function faultyProxy(target: string, failures: number, status: number | 'hang', headers: Record<string, string> = {}): Promise<FaultyProxy> {
  const requests: string[] = []
  let failing = failures
  let delayMs = 0
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    requests.push(`${req.method} ${req.url}`)
    if (failing > 0) {
      failing--
      if (status === 'hang') return
      res.writeHead(status, { 'content-type': 'application/json', ...headers })
      res.end(JSON.stringify({ error: 'the proxy says no', code: 'proxy_fault' }))
      return
    }
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs))
    const forwarded: Record<string, string> = {}
    for (const name of ['authorization', 'content-type', 'accept']) if (typeof req.headers[name] === 'string') forwarded[name] = req.headers[name]
    const answer = await fetch(`${target}${req.url}`, { method: req.method, headers: forwarded, body: chunks.length > 0 ? Buffer.concat(chunks) : undefined, redirect: 'manual' })
    const outHeaders: Record<string, string> = { 'content-type': answer.headers.get('content-type') ?? 'text/plain' }
    const exchange = answer.headers.get('x-exchange-number')
    if (exchange !== null) outHeaders['x-exchange-number'] = exchange
    res.writeHead(answer.status, outHeaders)
    res.end(Buffer.from(await answer.arrayBuffer()))
  }
  const server: Server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    baseUrl: `http://127.0.0.1:${port}/api`,
    requests,
    heal: () => {
      failing = 0
    },
    slowDown: (ms) => {
      delayMs = ms
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
