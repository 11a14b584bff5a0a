/**
 * The emulator's HTTP layer on Fastify: the routes of the API and of the control API, the body as text, one JSON
 * error shape for everything (404, 405 with Allow, 413, 415, 400 for a malformed path), and paths normalised as a
 * Rails router does. Fastify is an optional peer dependency: it is imported when an emulator starts, never when
 * the package loads, so the receiver's users do not need it.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from './errors.js'
import { type Handler, MAX_BODY_BYTES, type Reply, type Route } from './http.js'
import type { EmulatorState } from './state.js'

type FastifyFactory = typeof import('fastify').default

const FASTIFY_PACKAGE = 'fastify'
const BASE = 'http://emulator.invalid'
/** Under the API, the service's `/public/` endpoints (the bank lists) need no credentials; shop pages read them from the browser. */
const PUBLIC_PREFIX = '/public/'
/** Methods a path answers 405 to when no route takes them (HEAD comes with GET). */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const

export interface Mount {
  /** Such as `/api`. */
  readonly prefix: string
  readonly routes: readonly Route[]
}

function isMissingModule(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown }
  return (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && String(message).includes(`'${FASTIFY_PACKAGE}'`)
}

/** Fastify, or an error naming the package to install. */
export async function loadFastify(): Promise<FastifyFactory> {
  try {
    return (await import('fastify')).default
  } catch (error) {
    if (!isMissingModule(error)) throw error
    throw new Error(
      `the emulator needs the optional package ${FASTIFY_PACKAGE}, which is not installed: npm install --save-dev ${FASTIFY_PACKAGE} (or npx -p fpx-collect -p ${FASTIFY_PACKAGE} fpx-collect emulator)`,
      { cause: error },
    )
  }
}

/** The path as sent. */
function rawPath(request: FastifyRequest): string {
  const query = request.url.indexOf('?')
  return query < 0 ? request.url : request.url.slice(0, query)
}

/** The path with repeated slashes collapsed, as the router sees it. */
function routedPath(request: FastifyRequest): string {
  return rawPath(request).replace(/\/{2,}/g, '/')
}

/**
 * The request's URL for handlers. Outside strict mode a query name with only empty values (`?status`,
 * `?status=`) is dropped, so it filters nothing, and each drop is noted; strict mode keeps them (and refuses).
 */
function handlerUrl(request: FastifyRequest, strict: boolean, notes: string[]): URL {
  const url = new URL(request.url.replace(/^\/{2,}/, '/'), BASE)
  if (strict) return url
  const query = url.searchParams
  for (const name of new Set(query.keys()))
    if (query.getAll(name).every((value) => value === '')) {
      query.delete(name)
      notes.push(`query parameter ${JSON.stringify(name)} was empty; treated as absent`)
    }
  return url
}

function clientIp(request: FastifyRequest): string {
  const address = request.socket.remoteAddress ?? ''
  return address.startsWith('::ffff:') ? address.slice(7) : address
}

function isPublic(request: FastifyRequest, apiPrefix: string): boolean {
  return routedPath(request).startsWith(`${apiPrefix}${PUBLIC_PREFIX}`)
}

/** Fastify's own refusals (body too large, bad Content-Type, bad path) in the emulator's terms. */
function asApiError(error: unknown): ApiError | undefined {
  if (error instanceof ApiError) return error
  const { code, statusCode, message } = (error ?? {}) as { code?: unknown; statusCode?: unknown; message?: unknown }
  if (code === 'FST_ERR_BAD_URL') return new ApiError(400, 'malformed_request', 'the path has invalid percent-encoding')
  if (typeof statusCode !== 'number' || statusCode < 400 || statusCode >= 500) return undefined
  if (statusCode === 413) return new ApiError(413, 'body_too_large', `the request body is larger than ${MAX_BODY_BYTES} bytes`)
  if (statusCode === 415) return new ApiError(415, 'unsupported_media_type', 'the Content-Type is not one the emulator reads')
  return new ApiError(400, 'malformed_request', typeof message === 'string' ? message : 'the request is malformed')
}

export function buildApp(
  Fastify: FastifyFactory,
  mounts: readonly Mount[],
  state: EmulatorState,
  log: (line: string) => void,
): FastifyInstance {
  const apiPrefix = mounts[0]?.prefix ?? ''

  const send = (request: FastifyRequest, reply: FastifyReply, answer: Reply): FastifyReply => {
    const isJson = 'json' in answer
    const body = isJson ? JSON.stringify(answer.json) : 'bytes' in answer ? Buffer.from(answer.bytes) : answer.html
    return reply
      .code(answer.status ?? 200)
      .headers({
        'content-type': isJson ? 'application/json; charset=utf-8' : 'text/html; charset=utf-8',
        'cache-control': 'no-store',
        ...(isPublic(request, apiPrefix) ? { 'access-control-allow-origin': '*' } : {}),
        ...answer.headers,
      })
      .send(body)
  }

  const fail = (request: FastifyRequest, reply: FastifyReply, error: unknown): FastifyReply => {
    const known = asApiError(error)
    if (known === undefined) log(`fpx-collect emulator: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
    const answer = known ?? new ApiError(500, 'internal_error', 'the emulator failed to handle the request')
    // The body may be half read; closing avoids reading the rest of a refused large upload.
    if (answer.status === 413) reply.header('connection', 'close')
    return send(request, reply, { status: answer.status, json: answer.toJSON(), headers: answer.headers })
  }

  const options = {
    bodyLimit: MAX_BODY_BYTES,
    forceCloseConnections: true,
    frameworkErrors: (error: unknown, request: FastifyRequest, reply: FastifyReply) => void fail(request, reply, error),
  }
  // Paths normalised as a Rails router does, except in strict mode. Order numbers and references travel in
  // paths percent-encoded; Fastify's default limit is 100 characters.
  const lenient = !state.strict
  const routing = { ignoreTrailingSlash: lenient, ignoreDuplicateSlashes: lenient, maxParamLength: 4096 }
  let app = Fastify({ ...options, routerOptions: routing })
  // Fastify 4 takes the router's options at the top level, where Fastify 5 deprecates them.
  if (Number.parseInt(app.version, 10) < 5) app = Fastify({ ...options, ...routing })
  // Handlers read the body as text (readForm, readJson) and judge its type themselves, like the service.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body))
  app.setErrorHandler((error, request, reply) => fail(request, reply, error))
  app.setNotFoundHandler((request, reply) => {
    const path = routedPath(request)
    const mount = mounts.find(({ prefix }) => path.startsWith(`${prefix}/`))
    const error =
      mount === undefined
        ? new ApiError(404, 'not_found', `no endpoint here; the API is under ${apiPrefix}`)
        : new ApiError(404, 'not_found', `no endpoint ${request.method} ${path.slice(mount.prefix.length)}`)
    return fail(request, reply, error)
  })

  const run = (prefix: string, handler: Handler) => async (request: FastifyRequest, reply: FastifyReply) => {
    const params = request.params as Record<string, string>
    const notes: string[] = []
    const url = handlerUrl(request, state.strict, notes)
    const path = routedPath(request).replace(/(.)\/$/, '$1')
    if (path !== rawPath(request)) notes.push(`path ${rawPath(request)} was read as ${path}`)
    // Oddities of calls to the service's API are reported like the fields' (GET /__emulator/warnings).
    if (prefix === apiPrefix && notes.length > 0) state.warnings.add('request', `${request.method} ${path.slice(prefix.length)}`, null, notes)
    return send(request, reply, await handler({ req: request, url, params, state, clientIp: clientIp(request) }))
  }

  for (const { prefix, routes } of mounts) {
    const byPath = new Map<string, Route[]>()
    for (const route of routes) byPath.set(route.path, [...(byPath.get(route.path) ?? []), route])
    for (const [path, sharing] of byPath) {
      const url = `${prefix}${path}`
      for (const route of sharing) app.route({ method: route.method, url, handler: run(prefix, route.handler) })
      const allowed = sharing.map((route) => route.method)
      const preflight = path.startsWith(PUBLIC_PREFIX) && allowed.every((method) => method === 'GET')
      if (preflight)
        app.options(url, (request, reply) =>
          reply
            .code(204)
            .headers({
              'access-control-allow-origin': '*',
              'access-control-allow-methods': 'GET, HEAD, OPTIONS',
              'access-control-allow-headers': request.headers['access-control-request-headers'] ?? 'Accept',
              'access-control-max-age': '86400',
            })
            .send(),
        )
      const other = METHODS.filter(
        (method) => !allowed.includes(method as Route['method']) && !(method === 'HEAD' && allowed.includes('GET')) && !(preflight && method === 'OPTIONS'),
      )
      const refusal = new ApiError(405, 'method_not_allowed', `use ${allowed.join(' or ')}`, undefined, { allow: allowed.join(', ') })
      app.route({ method: [...other], url, handler: (request, reply) => fail(request, reply, refusal) })
    }
  }
  return app
}
