import type { IncomingHttpHeaders } from 'node:http'
import { ReceiverError } from '../core/result/errors.js'
import { decodeForm } from '../core/result/body.js'
import { ApiError, type FieldErrors, invalidParameters, unauthorized } from './errors.js'
import type { EmulatorState, Principal } from './state.js'

export const MAX_BODY_BYTES = 64 * 1024

/** What handlers read of a request: its headers and the body the server collected (a string, or none). */
export interface EmulatorRequest {
  readonly method: string
  readonly headers: IncomingHttpHeaders
  readonly body?: unknown
}

export interface Context {
  readonly req: EmulatorRequest
  /** The request's URL; outside strict mode a query name with an empty value (`?status=`) is left out: no filter. */
  readonly url: URL
  readonly params: Readonly<Record<string, string>>
  readonly state: EmulatorState
  readonly clientIp: string
}

export type Reply =
  | { status?: number; json: unknown; headers?: Record<string, string> }
  | { status?: number; html: string; headers?: Record<string, string> }
  /** A file such as a receipt PDF; its headers name the content-type. */
  | { status?: number; bytes: Uint8Array; headers: Record<string, string> }

export type Handler = (context: Context) => Reply | Promise<Reply>

export interface Route {
  readonly method: 'GET' | 'POST'
  /** Relative to the mount point; `:name` segments capture one path segment. */
  readonly path: string
  readonly handler: Handler
}

function mediaType(req: EmulatorRequest): string {
  return (req.headers['content-type'] ?? '').replace(/;.*$/s, '').trim().toLowerCase()
}

/** The body as the server read it (at most MAX_BODY_BYTES); none for a request without one. */
function bodyText(req: EmulatorRequest): string {
  return typeof req.body === 'string' ? req.body : ''
}

export interface FormBody {
  /** Plain fields; a name sent twice is an error. */
  readonly fields: Map<string, string>
  /** Bracketed fields such as params[reference1], by outer name. */
  readonly nested: Map<string, Map<string, string>>
}

/** The core's form parser, with its encoding errors answered 400 like a malformed path. */
function decode(text: string): { names: readonly string[]; value: (i: number) => string } {
  try {
    const form = decodeForm(text)
    return { names: form.names, value: (i) => form.values[i] as string }
  } catch (error) {
    if (error instanceof ReceiverError) throw new ApiError(400, 'malformed_request', error.message)
    throw error
  }
}

/** A form-encoded body, as the spec's POST endpoints take. An empty body with no Content-Type is an empty form. */
export async function readForm(req: EmulatorRequest): Promise<FormBody> {
  const text = bodyText(req)
  const type = mediaType(req)
  if (type !== 'application/x-www-form-urlencoded' && !(type === '' && text === ''))
    throw new ApiError(415, 'unsupported_media_type', 'send the fields form-encoded (application/x-www-form-urlencoded)')
  const fields = new Map<string, string>()
  const nested = new Map<string, Map<string, string>>()
  const problems: FieldErrors = {}
  const form = decode(text)
  form.names.forEach((name, i) => {
    const [, outer, inner] = /^([a-z_]+)\[([A-Za-z0-9_]+)\]$/.exec(name) ?? []
    const target = outer === undefined ? fields : (nested.get(outer) ?? new Map<string, string>())
    const key = inner ?? name
    if (outer !== undefined) nested.set(outer, target)
    if (target.has(key)) problems[name] = 'sent more than once'
    target.set(key, form.value(i))
  })
  if (Object.keys(problems).length > 0) throw invalidParameters(problems)
  return { fields, nested }
}

/** 415 unless the request says its body is JSON: every control API POST, even one without a body, must. */
export function requireJsonType(req: EmulatorRequest): void {
  if (mediaType(req) !== 'application/json')
    throw new ApiError(415, 'unsupported_media_type', 'send Content-Type: application/json (with a body of {} or none when there is nothing to send)')
}

/** A JSON body for the control API; an empty body is an empty object. */
export async function readJson(req: EmulatorRequest): Promise<Record<string, unknown>> {
  const text = bodyText(req)
  if (text.trim() === '') return {}
  if (mediaType(req) !== 'application/json') throw new ApiError(415, 'unsupported_media_type', 'send JSON (application/json)')
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new ApiError(400, 'malformed_request', 'the body is not valid JSON')
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ApiError(400, 'malformed_request', 'send a JSON object')
  return value as Record<string, unknown>
}

/** The credential set named by an HTTP Basic header (username API UID, password Auth Token), if any. */
export function basicPrincipal(context: Context): Principal | undefined {
  const [, encoded] = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(context.req.headers.authorization ?? '') ?? []
  if (encoded === undefined) return undefined
  const decoded = Buffer.from(encoded, 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  return colon < 0 ? undefined : context.state.authenticate(decoded.slice(0, colon), decoded.slice(colon + 1))
}

/** Basic authentication or 401: a missing header and wrong credentials get the same answer. */
export function basicAuth(context: Context): Principal {
  const principal = basicPrincipal(context)
  if (principal === undefined) throw unauthorized()
  return principal
}
