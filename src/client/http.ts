import type { ResolvedConfig } from './config.js'
import { FpxApiError, FpxAuthenticationError, FpxNetworkError, FpxTimeoutError, FpxValidationError } from './errors.js'
import { base64 } from '../core/base64.js'
import { Redactor } from './redact.js'

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

/** An answer as the client keeps it: any written form of a secret in its text and headers is already [redacted]. */
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

const EXCERPT_LENGTH = 200
// Markup is dropped from this much of the text only: an unclosed `<` makes the pattern scan to the end.
const EXCERPT_SOURCE_LENGTH = 4096

/** A body's text for a message: markup dropped, on one line, cut to a readable length. */
function excerpt(text: string): string {
  const line = text.slice(0, EXCERPT_SOURCE_LENGTH).replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim()
  return line.length > EXCERPT_LENGTH ? `${line.slice(0, EXCERPT_LENGTH)}…` : line
}

/** What an error answer says about itself: its `code`, and its `error` or `message`, or the text that is not JSON. */
function said(body: unknown): { code: string | undefined; text: string | undefined } {
  const fields = typeof body === 'object' && body !== null ? (body as { code?: unknown; error?: unknown; message?: unknown }) : {}
  const text = typeof body === 'string' ? body : typeof fields.error === 'string' ? fields.error : typeof fields.message === 'string' ? fields.message : undefined
  return { code: typeof fields.code === 'string' ? fields.code : undefined, text: text === undefined || text.trim() === '' ? undefined : excerpt(text) }
}

export class HttpClient {
  /**
   * Everything read from the network passes through it before anyone keeps it: an upstream that echoes the
   * request must not put the credentials into an error, a log line or a return value (redact.ts).
   */
  readonly redactor: Redactor

  constructor(private readonly config: ResolvedConfig) {
    this.redactor = new Redactor(config)
  }

  /** Removes the secrets from text that goes into an error message or a log line. */
  redact(text: string): string {
    return this.redactor.text(text)
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
      headers.authorization = `Basic ${base64(`${this.config.uid}:${this.config.authToken}`)}`
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
      const text = this.redactor.text(await response.text())
      const kept = new Headers()
      response.headers.forEach((value, name) => kept.append(name, this.redactor.text(value)))
      return { status: response.status, headers: kept, text }
    } catch (error) {
      // fetch's error, or a fetch wrapper's, may hold the request itself: the cause kept is a redacted copy.
      const cause = this.redactor.error(error)
      if (signal.aborted) throw new FpxTimeoutError(`${what}: no answer within ${this.config.timeoutMs} ms`, this.config.timeoutMs, { cause })
      const reason = error instanceof Error ? ((error.cause as { code?: string } | undefined)?.code ?? error.message) : String(error)
      throw new FpxNetworkError(this.redact(`${what}: the request failed (${String(reason)})`), { cause })
    }
  }

  /** The answer's body for an error: parsed JSON redacted again after parsing, or the (redacted) text. */
  body(answer: ApiAnswer): unknown {
    return this.redactor.value(parseBody(answer.text))
  }

  private failure(what: string, answer: ApiAnswer): Error {
    const body = this.body(answer)
    const { code, text } = said(body)
    // Redacted after the excerpt is made: dropping tags and squeezing line breaks can join a secret back together.
    const message = this.redact(`${what} answered ${answer.status}${code === undefined ? '' : ` (${code})`}${text === undefined ? '' : `: ${text}`}`)
    if (answer.status === 401) return new FpxAuthenticationError(message, answer.status, body)
    const fields = (body as { fields?: unknown } | null)?.fields
    if (answer.status === 422 && typeof fields === 'object' && fields !== null)
      return new FpxValidationError(fields as Record<string, string>, { status: 422, body, prefix: this.redact(`${what} answered 422`) })
    return new FpxApiError(message, answer.status, body)
  }

  /** A 2xx JSON answer, parsed; a body that is not JSON is an API error (a proxy page, say). */
  json(what: string, answer: ApiAnswer): unknown {
    let parsed: unknown
    try {
      parsed = JSON.parse(answer.text) as unknown
    } catch (error) {
      const text = answer.text.trim() === '' ? '' : `: ${excerpt(answer.text)}`
      // Redacted again: the excerpt drops tags and squeezes line breaks, which can join a secret back together.
      throw new FpxApiError(this.redact(`${what} answered ${answer.status} with a body that is not JSON${text}`), answer.status, answer.text, { cause: this.redactor.error(error) })
    }
    // The text was redacted as read; this catches the forms that only parsing reveals (JSON escapes).
    return this.redactor.value(parsed)
  }
}
