import type { ResolvedConfig } from './config.js'
import { FpxApiError, FpxAuthenticationError, FpxNetworkError, FpxTimeoutError, FpxValidationError } from './errors.js'

export interface ApiRequest {
  method: 'GET' | 'POST'
  /** Relative to the base URL, starting with /. */
  path: string
  query?: Record<string, string | undefined>
  form?: Record<string, string>
  /** Send HTTP Basic (API UID, Auth Token). */
  basicAuth: boolean
  /**
   * Whether the request may be sent again after a failure. True for reads; false for anything that creates
   * something, where a retry after a lost answer could create it twice.
   */
  retry: boolean
  /** Return a 3xx answer instead of failing (redirects are never followed: the caller decides). */
  acceptRedirect?: boolean
}

export interface ApiAnswer {
  status: number
  headers: Headers
  text: string
}

const MAX_BACKOFF_MS = 10_000
// A Retry-After far in the future is the service asking to stop; waiting minutes inside one call helps no one.
const MAX_RETRY_AFTER_MS = 30_000

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** Retry-After as seconds or an HTTP date, in ms, or undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (header === null || header.trim() === '') return undefined
  const trimmed = header.trim()
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000
  const date = Date.parse(trimmed)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

/** Exponential back-off with full jitter: a random wait up to base·2^attempt, so many clients do not retry in step. */
export function backoffMs(attempt: number, baseMs: number, random = Math.random): number {
  return Math.floor(random() * Math.min(MAX_BACKOFF_MS, baseMs * 2 ** attempt))
}

function retryableStatus(status: number): boolean {
  return status === 429 || status >= 500
}

function parseBody(text: string): unknown {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
  }
}

export class HttpClient {
  constructor(private readonly config: ResolvedConfig) {}

  /** Removes the secrets from text that goes into an error message or a log line. */
  redact(text: string): string {
    let result = text
    for (const secret of [this.config.authToken, this.config.checksumToken])
      if (secret.length > 0) result = result.split(secret).join('[redacted]')
    return result
  }

  url(path: string, query?: Record<string, string | undefined>): string {
    const url = new URL(this.config.baseUrl + path)
    for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined) url.searchParams.set(name, value)
    return url.toString()
  }

  /** Sends the request (retrying reads) and returns a 2xx answer; anything else becomes a typed error. */
  async send(request: ApiRequest): Promise<ApiAnswer> {
    const attempts = request.retry ? this.config.maxRetries + 1 : 1
    const what = `${request.method} ${request.path}`
    for (let attempt = 0; ; attempt++) {
      const last = attempt + 1 >= attempts
      let answer: ApiAnswer
      try {
        answer = await this.once(request)
      } catch (error) {
        if (last) throw error
        const wait = backoffMs(attempt, this.config.retryDelayMs)
        this.config.logger.warn({ request: what, attempt: attempt + 1, waitMs: wait, error: (error as Error).name }, 'request failed; retrying')
        await sleep(wait)
        continue
      }
      if (answer.status >= 200 && answer.status < 300) return answer
      if (request.acceptRedirect === true && answer.status >= 300 && answer.status < 400) return answer
      if (last || !retryableStatus(answer.status)) throw this.failure(what, answer)
      const wait = Math.min(MAX_RETRY_AFTER_MS, retryAfterMs(answer.headers.get('retry-after')) ?? backoffMs(attempt, this.config.retryDelayMs))
      this.config.logger.warn({ request: what, attempt: attempt + 1, status: answer.status, waitMs: wait }, 'the service answered with a retryable status; retrying')
      await sleep(wait)
    }
  }

  private async once(request: ApiRequest): Promise<ApiAnswer> {
    const headers: Record<string, string> = { accept: 'application/json, text/html;q=0.9' }
    if (request.basicAuth)
      headers.authorization = `Basic ${Buffer.from(`${this.config.uid}:${this.config.authToken}`).toString('base64')}`
    let body: string | undefined
    if (request.form !== undefined) {
      headers['content-type'] = 'application/x-www-form-urlencoded'
      body = new URLSearchParams(request.form).toString()
    }
    const what = `${request.method} ${request.path}`
    const signal = AbortSignal.timeout(this.config.timeoutMs)
    try {
      const response = await this.config.fetch(this.url(request.path, request.query), { method: request.method, headers, body, signal, redirect: 'manual' })
      // The body is read under the same time limit: a server that sends headers and then stalls is a time-out too.
      return { status: response.status, headers: response.headers, text: await response.text() }
    } catch (error) {
      if (signal.aborted) throw new FpxTimeoutError(`${what}: no answer within ${this.config.timeoutMs} ms`, this.config.timeoutMs, { cause: error })
      const reason = error instanceof Error ? ((error.cause as { code?: string } | undefined)?.code ?? error.message) : String(error)
      throw new FpxNetworkError(this.redact(`${what}: the request failed (${reason})`), { cause: error })
    }
  }

  private failure(what: string, answer: ApiAnswer): Error {
    const body = parseBody(answer.text)
    const said = (body as { error?: unknown } | null)?.error
    const detail = typeof said === 'string' ? `: ${said}` : ''
    const message = this.redact(`${what} answered ${answer.status}${detail}`)
    if (answer.status === 401) return new FpxAuthenticationError(message, answer.status, body)
    const fields = (body as { fields?: unknown } | null)?.fields
    if (answer.status === 422 && typeof fields === 'object' && fields !== null)
      return new FpxValidationError(fields as Record<string, string>, { status: 422, body, prefix: this.redact(`${what} answered 422`) })
    return new FpxApiError(message, answer.status, body)
  }

  /** A 2xx JSON answer, parsed; a body that is not JSON is an API error (a proxy page, say). */
  json(what: string, answer: ApiAnswer): unknown {
    try {
      return JSON.parse(answer.text) as unknown
    } catch (error) {
      throw new FpxApiError(`${what} answered ${answer.status} with a body that is not JSON`, answer.status, answer.text, { cause: error })
    }
  }
}
