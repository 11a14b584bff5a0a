/**
 * Every refusal of the emulator is JSON `{ error, code, fields? }`: `error` for people, `code` for programs,
 * `fields` (name → problem) for invalid parameters. The spec shows only the 401 of credential validation; the
 * other statuses are the emulator's choices, listed in docs/emulator.md.
 */
export type ApiErrorCode =
  | 'unauthorized'
  | 'invalid_token'
  | 'checksum_mismatch'
  | 'not_partner'
  | 'b2b1_not_enabled'
  | 'partner_not_authorized'
  | 'forbidden_origin'
  | 'invalid_parameters'
  | 'malformed_request'
  | 'not_found'
  | 'method_not_allowed'
  | 'endpoint_removed'
  | 'conflict'
  | 'body_too_large'
  | 'unsupported_media_type'
  | 'internal_error'
  | 'missing_dependency'

export type FieldErrors = Record<string, string>

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ApiErrorCode,
    message: string,
    readonly fields?: FieldErrors,
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
    this.name = 'ApiError'
  }

  toJSON(): { error: string; code: ApiErrorCode; fields?: FieldErrors } {
    return this.fields === undefined
      ? { error: this.message, code: this.code }
      : { error: this.message, code: this.code, fields: this.fields }
  }
}

export function invalidParameters(fields: FieldErrors): ApiError {
  const names = Object.keys(fields).join(', ')
  return new ApiError(422, 'invalid_parameters', `invalid parameters: ${names}`, fields)
}

export function unauthorized(message = 'HTTP Basic authentication with a valid API UID and Auth Token is required'): ApiError {
  return new ApiError(401, 'unauthorized', message, undefined, { 'www-authenticate': 'Basic realm="api", charset="UTF-8"' })
}

export function notFound(what = 'no such resource'): ApiError {
  return new ApiError(404, 'not_found', what)
}
