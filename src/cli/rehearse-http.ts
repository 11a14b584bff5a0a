/**
 * The rehearsal's own HTTP requests (to the emulator and to the merchant's app): node:http and node:https with
 * kept-alive connections, which cost the load generator less per request than fetch, so that at the rates a sale
 * reaches it measures the app rather than itself. Redirects are never followed: the app's 303 is its answer.
 */
import { Agent as HttpAgent, type IncomingHttpHeaders, request as httpRequest } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'

export interface PostAnswer {
  /** 0 when there was no answer; then `error` says why (ECONNREFUSED, timeout, ...). */
  status: number
  error?: string
  headers: IncomingHttpHeaders
  body: string
}

export interface Poster {
  post(url: string, body: string, headers: Record<string, string>, timeoutMs: number): Promise<PostAnswer>
  close(): void
}

/** At most this many connections per address: a browser crowd is many, but a load generator must not exhaust ports. */
const MAX_SOCKETS = 256

export function poster(): Poster {
  const http = new HttpAgent({ keepAlive: true, maxSockets: MAX_SOCKETS })
  const https = new HttpsAgent({ keepAlive: true, maxSockets: MAX_SOCKETS })
  return {
    post(url, body, headers, timeoutMs) {
      return new Promise((resolve) => {
        const failed = (error: NodeJS.ErrnoException) => resolve({ status: 0, error: error.code ?? error.message, headers: {}, body: '' })
        const secure = url.startsWith('https:')
        const send = secure ? httpsRequest : httpRequest
        const options = { method: 'POST', agent: secure ? https : http, timeout: timeoutMs, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }
        const outgoing = send(url, options, (response) => {
          const chunks: Buffer[] = []
          response.on('data', (chunk: Buffer) => void chunks.push(chunk))
          response.on('error', failed)
          response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks).toString('utf8') }))
        })
        outgoing.on('timeout', () => outgoing.destroy(Object.assign(new Error('timeout'), { code: 'timeout' })))
        outgoing.on('error', failed)
        outgoing.end(body)
      })
    },
    close() {
      http.destroy()
      https.destroy()
    },
  }
}

/**
 * The machine-readable code of a refusal, when the app's answer carries one: fpx-collect's receivers answer
 * `{"error":{"code":…}}` to a callback and an HTML page with "Error code: …" to a redirect.
 */
export function answerCode(body: string): string | undefined {
  const json = /"code"\s*:\s*"([a-z_]+)"/.exec(body)
  if (json !== null) return json[1]
  return /Error code:\s*([a-z_]+)/.exec(body)?.[1]
}
