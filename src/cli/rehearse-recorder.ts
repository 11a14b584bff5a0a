/**
 * Where the rehearsal's payments point their callback_url: a small server that forwards every callback attempt
 * the emulator makes (originals, duplicates, retries) to the merchant's own callback URL unchanged, and times the
 * app's answer. The emulator's delivery log says the same only after the fact; this sees each answer as it comes,
 * for the progress line. The app gets exactly what the emulator sent: the same body, and the same fields after
 * its URL's own query when the emulator also puts them there.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { callbackRequestUrl } from '../emulator/delivery.js'
import { answerCode, type Poster } from './rehearse-http.js'

export interface AppAnswer {
  route: 'callback' | 'redirect'
  /** When the answer came, performance.now(). */
  at: number
  ms: number
  /** 0: no answer (see `code`). */
  status: number
  /** The refusal's code (store_unavailable, handler_failed, ...) or why there was no answer (ECONNREFUSED, timeout). */
  code: string | undefined
}

export interface Recorder {
  /** The callback_url to give the emulator. */
  readonly url: string
  /** Callbacks being forwarded now. */
  readonly inFlight: number
  close(): Promise<void>
}

const PATH = '/callback'
/** Longer than the emulator waits, so the app's late answer is still timed (the emulator has given up on it). */
const FORWARD_TIMEOUT_MS = 30_000

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => void chunks.push(chunk))
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    request.on('error', reject)
  })
}

/** The app's answer, passed back to the emulator as it was: the status decides whether the emulator retries. */
function reply(response: ServerResponse, status: number, contentType: string | undefined, body: string): void {
  response.statusCode = status
  if (contentType !== undefined) response.setHeader('content-type', contentType)
  response.end(body)
}

export async function startRecorder(callbackUrl: string, http: Poster, onAnswer: (answer: AppAnswer) => void): Promise<Recorder> {
  let inFlight = 0
  const server = createServer((request, response) => {
    const [path = '', query = ''] = (request.url ?? '').split(/\?(.*)/s)
    if (request.method !== 'POST' || path !== PATH) return reply(response, 404, 'text/plain', 'not a rehearsal callback')
    inFlight++
    void (async () => {
      try {
        const body = await readBody(request)
        const headers: Record<string, string> = {}
        for (const name of ['content-type', 'user-agent']) if (typeof request.headers[name] === 'string') headers[name] = request.headers[name]
        const started = performance.now()
        const answer = await http.post(callbackRequestUrl(callbackUrl, 'both', query), body, headers, FORWARD_TIMEOUT_MS)
        const at = performance.now()
        onAnswer({ route: 'callback', at, ms: at - started, status: answer.status, code: answer.status === 0 ? answer.error : answer.status >= 400 ? answerCode(answer.body) : undefined })
        // No answer from the app: the emulator sees a gateway error and retries, as it would have.
        if (answer.status === 0) reply(response, 502, 'text/plain', `no answer from the app: ${answer.error ?? 'unknown'}`)
        else reply(response, answer.status, answer.headers['content-type'], answer.body)
      } catch {
        response.destroy()
      } finally {
        inFlight--
      }
    })()
  })
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}${PATH}`,
    get inFlight() {
      return inFlight
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
