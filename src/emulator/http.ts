import type { IncomingMessage } from 'node:http'
import { ApiError, type FieldErrors, invalidParameters, unauthorized } from './errors.js'
import type { EmulatorState, Principal } from './state.js'

export const MAX_BODY_BYTES = 64 * 1024

export interface Context {
  readonly req: IncomingMessage
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

export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > MAX_BODY_BYTES) throw new ApiError(413, 'body_too_large', `the request body is larger than ${MAX_BODY_BYTES} bytes`)
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}

function mediaType(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? '').replace(/;.*$/s, '').trim().toLowerCase()
}

export interface FormBody {
  /** Plain fields; a name sent twice is an error. */
  readonly fields: Map<string, string>
  /** Bracketed fields such as params[reference1], by outer name. */
  readonly nested: Map<string, Map<string, string>>
}

/** A form-encoded body, as the spec's POST endpoints take. An empty body with no Content-Type is an empty form. */
export async function readForm(req: IncomingMessage): Promise<FormBody> {
  const text = await readBody(req)
  const type = mediaType(req)
  if (type !== 'application/x-www-form-urlencoded' && !(type === '' && text === ''))
    throw new ApiError(415, 'unsupported_media_type', 'send the fields form-encoded (application/x-www-form-urlencoded)')
  const fields = new Map<string, string>()
  const nested = new Map<string, Map<string, string>>()
  const problems: FieldErrors = {}
  for (const [name, value] of new URLSearchParams(text)) {
    const [, outer, inner] = /^([a-z_]+)\[([A-Za-z0-9_]+)\]$/.exec(name) ?? []
    const target = outer === undefined ? fields : (nested.get(outer) ?? new Map<string, string>())
    const key = inner ?? name
    if (outer !== undefined) nested.set(outer, target)
    if (target.has(key)) problems[name] = 'sent more than once'
    target.set(key, value)
  }
  if (Object.keys(problems).length > 0) throw invalidParameters(problems)
  return { fields, nested }
}

/** A JSON body for the control API; an empty body is an empty object. */
export async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const text = await readBody(req)
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

export interface CompiledRoute extends Route {
  readonly pattern: RegExp
  readonly names: readonly string[]
}

export function compile(routes: readonly Route[]): CompiledRoute[] {
  return routes.map((route) => {
    const names: string[] = []
    const source = route.path
      .split('/')
      .map((segment) => {
        if (!segment.startsWith(':')) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
        names.push(segment.slice(1))
        return '([^/]+)'
      })
      .join('/')
    return { ...route, pattern: new RegExp(`^${source}$`), names }
  })
}

/** The route for a path, or why there is none: 404 for an unknown path, 405 (with Allow) for a wrong method. */
export function match(routes: readonly CompiledRoute[], method: string, path: string): { route: CompiledRoute; params: Record<string, string> } {
  const allowed: string[] = []
  for (const route of routes) {
    const found = route.pattern.exec(path)
    if (found === null) continue
    if (route.method !== method && !(method === 'HEAD' && route.method === 'GET')) {
      allowed.push(route.method)
      continue
    }
    const params: Record<string, string> = {}
    let valid = true
    route.names.forEach((name, index) => {
      try {
        params[name] = decodeURIComponent(found[index + 1] ?? '')
      } catch {
        valid = false
      }
    })
    if (!valid) throw new ApiError(400, 'malformed_request', 'the path has invalid percent-encoding')
    return { route, params }
  }
  if (allowed.length > 0) throw new ApiError(405, 'method_not_allowed', `use ${allowed.join(' or ')}`, undefined, { allow: allowed.join(', ') })
  throw new ApiError(404, 'not_found', `no endpoint ${method} ${path}`)
}
