/**
 * Fastify 4 and 5: `app.register(fpxCollect, { receiver, callbackPath: '/fpx/callback', redirectPath: '/fpx/redirect' })`.
 * The plugin is encapsulated: inside it, and only there, every body reaches the receiver as raw bytes, so it
 * neither leaks a parser into the app nor clashes with the app's own (@fastify/formbody, JSON).
 * The operator's console: `app.register(fpxConsole, { receiver, authorize, prefix: '/admin/payments' })`.
 * @module fpx-collect/fastify
 */
import type { Readable } from 'node:stream'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { DELIVERY_MEDIA_TYPES } from '../src/core/result/body.js'
import { rawQuery, readNodeBody, spent } from '../src/http/node-delivery.js'
import type { Delivery, DeliveryHandler, DeliveryKind } from '../src/receiver/receiver.js'
import { answerDelivery, type HttpAnswer, type RedirectOptions } from '../src/http/answers.js'
import { createConsole } from '../src/console/console.js'
import type { Authorization, ConsoleOptions } from '../src/console/options.js'
import type { ConsoleReceiver } from '../src/console/source.js'
import { fetchRequest, responseParts } from '../src/http/node-fetch.js'

export interface FpxCollectOptions extends RedirectOptions<FastifyRequest> {
  receiver: DeliveryHandler
  /** Default `/fpx/callback`. */
  callbackPath?: string
  /** Default `/fpx/redirect`; `false` for no redirect route. */
  redirectPath?: string | false
  /** Registration prefix, as for any encapsulated plugin. */
  prefix?: string
}

const FASTIFY_ADVICE =
  'Leave request.body of the fpx-collect routes as the plugin set it (the unread request stream): a hook of the app that ' +
  'reads or replaces it should skip these routes.'

async function fpxCollectPlugin(fastify: FastifyInstance, options: FpxCollectOptions): Promise<void> {
  const { receiver, callbackPath = '/fpx/callback', redirectPath = '/fpx/redirect', prefix: _prefix, ...redirect } = options
  if (typeof receiver?.handle !== 'function') throw new TypeError('fpx-collect: the receiver option is required (createReceiver(...))')
  fastify.removeAllContentTypeParsers()
  // The stream is handed on unread: the receiver reads it (raw-body) within its own size and time limits, which
  // Fastify's reader has no time limit for, and judges the content type and encoding itself.
  fastify.addContentTypeParser(['*', ...DELIVERY_MEDIA_TYPES], (_request, payload, done) => done(null, payload))

  const deliveryOf = (request: FastifyRequest, kind: DeliveryKind): Delivery => {
    const base = {
      kind,
      contentType: request.headers['content-type'] ?? null,
      contentEncoding: request.headers['content-encoding'] ?? null,
      query: rawQuery(request.raw.url ?? ''),
    }
    const body = request.body as Readable | null | undefined
    const hook = 'an app hook that read or replaced request.body'
    if (body === undefined || body === null) {
      // Fastify gives a request that declares a body its stream (the parser above): none left means a hook took it,
      // and the signed bytes are gone. Not the sender's fault, so not the 400 an empty body gets. Fastify parses no
      // body of a GET or HEAD: a redirect by GET reads its query whatever its headers declare.
      const bodiless = request.method === 'GET' || request.method === 'HEAD'
      const declared = !bodiless && (Number(request.headers['content-length'] ?? 0) > 0 || request.headers['transfer-encoding'] !== undefined)
      return declared ? { ...base, consumedBy: hook, consumedAdvice: FASTIFY_ADVICE } : { ...base, body: new Uint8Array(0) }
    }
    // Raw bytes or text an app hook read the stream into are the body, as express.raw()'s Buffer is for Express.
    if ((body as unknown) instanceof Uint8Array || typeof (body as unknown) === 'string') return { ...base, body: body as unknown as Uint8Array | string }
    // An app hook (preValidation, preHandler) that read the stream, or put something else in its place, left no bytes.
    if (typeof body.on !== 'function' || spent(body)) return { ...base, consumedBy: hook, consumedAdvice: FASTIFY_ADVICE }
    return { ...base, readBody: (limit) => readNodeBody(body, request.headers, limit, hook, FASTIFY_ADVICE) }
  }
  const send = (reply: FastifyReply, answer: HttpAnswer) => reply.code(answer.status).headers(answer.headers).send(answer.body)

  const route = (path: string, kind: DeliveryKind) => {
    fastify.route({
      // The spec has the browser POST the fields; a redirect that arrives as a GET with them in the query is
      // verified the same way (the query is used whenever the body is empty).
      method: kind === 'redirect' ? ['GET', 'POST'] : 'POST',
      url: path,
      handler: async (request: FastifyRequest, reply: FastifyReply) => {
        send(reply, await answerDelivery(receiver, deliveryOf(request, kind), kind === 'redirect' ? redirect : undefined, request))
      },
    })
  }
  route(callbackPath, 'callback')
  if (redirectPath !== false) route(redirectPath, 'redirect')
}

export const fpxCollect = fp(fpxCollectPlugin, { name: 'fpx-collect', fastify: '4.x || 5.x', encapsulate: true })
export default fpxCollect

export interface FpxConsoleOptions extends Omit<ConsoleOptions, 'authorize' | 'basePath'> {
  receiver: ConsoleReceiver
  /** Who may use the console; also gets Fastify's own request. Without it, every request is refused (403). */
  authorize?: (request: Request, fastifyRequest: FastifyRequest) => Authorization | Promise<Authorization>
  /** Where it is mounted, as for any plugin: its links start with it. */
  prefix?: string
}

/**
 * The operator's console, an encapsulated plugin under its prefix. Inside it every body stays raw for the console
 * (its forms are small); the app's own parsers are untouched.
 */
async function fpxConsolePlugin(fastify: FastifyInstance, options: FpxConsoleOptions): Promise<void> {
  const { receiver, authorize, prefix: _prefix, ...rest } = options
  const natives = new WeakMap<Request, FastifyRequest>()
  const handler = createConsole(receiver, {
    ...rest,
    basePath: fastify.prefix,
    authorize: authorize === undefined ? undefined : (request) => authorize(request, natives.get(request) as FastifyRequest),
  })
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser('*', (_request, payload, done) => done(null, payload))
  const serve = async (request: FastifyRequest, reply: FastifyReply) => {
    const fetched = await fetchRequest({ request: request.raw, url: request.raw.url ?? '/', ...(request.body === undefined ? {} : { stream: request.body as Readable }) })
    natives.set(fetched, request)
    const answer = await responseParts(await handler(fetched))
    if (answer.cookies.length > 0) reply.header('set-cookie', answer.cookies)
    return reply.code(answer.status).headers(answer.headers).send(answer.body)
  }
  fastify.route({ method: ['GET', 'POST'], url: '/', handler: serve })
  fastify.route({ method: ['GET', 'POST'], url: '/*', handler: serve })
}

export const fpxConsole = fpxConsolePlugin

export type { Authorization, ConsoleOptions } from '../src/console/options.js'
export type { HttpAnswer, RedirectOptions, RedirectResult } from '../src/http/answers.js'
