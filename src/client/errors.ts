/**
 * Errors of the API client. Every message is written for the merchant's developer. No property of any of them
 * (message, stack, body, fields, cause chain) holds the Auth Token or the Checksum Token, in any written form, even
 * when the upstream echoed the request: they get logged whole, so the HTTP layer redacts everything it reads
 * before an error is built (redact.ts).
 */
export class FpxError extends Error {
  override readonly name: string = 'FpxError'
}

/**
 * The service answered with a status other than 2xx, or a 2xx the client cannot use. `body` is the parsed JSON
 * (or the text) of the answer, with every written form of a credential replaced by [redacted].
 */
export class FpxApiError extends FpxError {
  override readonly name: string = 'FpxApiError'
  readonly status: number
  /** The machine-readable `code` of a JSON error body, when there is one. */
  readonly code: string | undefined
  readonly body: unknown

  constructor(message: string, status: number, body: unknown, options?: { cause?: unknown }) {
    super(message, options)
    this.status = status
    this.body = body
    const code = (body as { code?: unknown } | null)?.code
    this.code = typeof code === 'string' ? code : undefined
  }
}

/** 401: wrong API UID, Auth Token, Checksum Token or checksum. */
export class FpxAuthenticationError extends FpxApiError {
  override readonly name: string = 'FpxAuthenticationError'
}

/**
 * Invalid input. Raised before any request when the client's own checks fail (`status` undefined), or for a
 * 422 answer of the service. `fields` maps each offending field name to what is wrong with it.
 */
export class FpxValidationError extends FpxError {
  override readonly name: string = 'FpxValidationError'
  readonly fields: Readonly<Record<string, string>>
  readonly status: number | undefined
  readonly body: unknown

  constructor(fields: Record<string, string>, options: { status?: number; body?: unknown; prefix?: string } = {}) {
    const list = Object.entries(fields)
      .map(([name, problem]) => `${name} ${problem}`)
      .join('; ')
    super(`${options.prefix ?? 'invalid input'}: ${list}`)
    this.fields = Object.freeze({ ...fields })
    this.status = options.status
    this.body = options.body
  }
}

/**
 * No answer within `timeoutMs` (after the retries a GET is allowed). `cause` is a redacted copy of fetch's error
 * (name, message, code, causes), not the error itself, which may hold the request.
 */
export class FpxTimeoutError extends FpxError {
  override readonly name: string = 'FpxTimeoutError'
  readonly timeoutMs: number

  constructor(message: string, timeoutMs: number, options?: { cause?: unknown }) {
    super(message, options)
    this.timeoutMs = timeoutMs
  }
}

/**
 * The request never got an HTTP answer: connection refused or reset, DNS failure, TLS failure. `cause` is a
 * redacted copy of fetch's error, as for FpxTimeoutError.
 */
export class FpxNetworkError extends FpxError {
  override readonly name: string = 'FpxNetworkError'
}
