/**
 * Errors of the API client. Every message is written for the merchant's developer and never contains the Auth
 * Token or the Checksum Token: the HTTP layer redacts them before an error is built (see `redact`).
 */
export class FpxError extends Error {
  override readonly name: string = 'FpxError'
}

/** The service answered with a status other than 2xx. `body` is the parsed JSON (or the text) of the answer. */
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

/** No answer within `timeoutMs` (after the retries a GET is allowed). */
export class FpxTimeoutError extends FpxError {
  override readonly name: string = 'FpxTimeoutError'
  readonly timeoutMs: number

  constructor(message: string, timeoutMs: number, options?: { cause?: unknown }) {
    super(message, options)
    this.timeoutMs = timeoutMs
  }
}

/** The request never got an HTTP answer: connection refused or reset, DNS failure, TLS failure. */
export class FpxNetworkError extends FpxError {
  override readonly name: string = 'FpxNetworkError'
}
