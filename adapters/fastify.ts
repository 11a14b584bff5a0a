/**
 * Fastify 4 and 5: `app.register(fpxCollect, { receiver, callbackPath: '/fpx/callback', redirectPath: '/fpx/redirect' })`.
 * The plugin is encapsulated: inside it, and only there, every body reaches the receiver as raw bytes, so it
 * neither leaks a parser into the app nor clashes with the app's own (@fastify/formbody, JSON).
 * @module fpx-collect/fastify
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { checkEncoding, DEFAULT_BODY_TIMEOUT_MS, DELIVERY_MEDIA_TYPES } from '../src/core/result/body.js'
import { readBodyWithin } from '../src/http/body-reader.js'
import { rawQuery } from '../src/http/node-delivery.js'
import type { Delivery, DeliveryHandler, DeliveryKind } from '../src/receiver/receiver.js'
import { answerDelivery, type HttpAnswer, type RedirectOptions } from '../src/http/answers.js'

export interface FpxCollectOptions extends RedirectOptions<FastifyRequest> {
  receiver: DeliveryHandler
  /** Default `/fpx/callback`. */
  callbackPath?: string
  /** Default `/fpx/redirect`; `false` for no redirect route. */
  redirectPath?: string | false
  /** Registration prefix, as for any encapsulated plugin. */
  prefix?: string
}

async function fpxCollectPlugin(fastify: FastifyInstance, options: FpxCollectOptions): Promise<void> {
  const { receiver, callbackPath = '/fpx/callback', redirectPath = '/fpx/redirect', prefix: _prefix, ...redirect } = options
  if (typeof receiver?.handle !== 'function') throw new TypeError('fpx-collect: the receiver option is required (createReceiver(...))')
  fastify.removeAllContentTypeParsers()
  // The plugin reads the bytes, within the receiver's size and time limits (Fastify's own reader has no time
  // limit); the receiver judges the content type. An encoded body is refused unread (the error handler answers).
  const timeoutMs = receiver.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS
  // Under the types the service sends as well as `*`: Fastify remembers which parser a Content-Type gets only when one
  // is registered for it, and the catch-all alone cost a parse of the header on every request (1.2 µs).
  fastify.addContentTypeParser(['*', ...DELIVERY_MEDIA_TYPES], (request, payload, done) => {
    try {
      checkEncoding(request.headers['content-encoding'])
    } catch (error) {
      done(Object.assign(error as Error, { statusCode: 415 }), undefined)
      return
    }
    readBodyWithin(payload, request.headers, receiver.maxBodyBytes, timeoutMs, done)
  })

  const deliveryOf = (request: FastifyRequest, kind: DeliveryKind): Delivery => {
    const body = request.body
    const contentType = request.headers['content-type'] ?? null
    const contentEncoding = request.headers['content-encoding'] ?? null
    const query = rawQuery(request.raw.url ?? '')
    // Two literals rather than a spread of `{ body }`, which V8 copies on a slow path for every request.
    return body instanceof Uint8Array ? { kind, contentType, contentEncoding, query, body } : { kind, contentType, contentEncoding, query }
  }
  const send = (reply: FastifyReply, answer: HttpAnswer) => reply.code(answer.status).headers(answer.headers).send(answer.body)

  // Fastify refuses an oversize or malformed body before the route runs; the receiver still writes the answer,
  // so it looks the same as everywhere else (JSON for callbacks, a page for redirects).
  fastify.setErrorHandler(async (error: FastifyError, request, reply) => {
    const kind = (request.routeOptions.config as { fpxKind?: DeliveryKind }).fpxKind
    if (kind === undefined || error.statusCode === undefined || error.statusCode >= 500) throw error
    const readBody = () => Promise.reject(Object.assign(new Error(error.message), { status: error.statusCode }))
    const delivery: Delivery = { ...deliveryOf(request, kind), readBody }
    return send(reply, await answerDelivery(receiver, delivery, kind === 'redirect' ? redirect : undefined, request))
  })

  const route = (path: string, kind: DeliveryKind) => {
    fastify.route({
      // The spec has the browser POST the fields; a redirect that arrives as a GET with them in the query is
      // verified the same way (the query is used whenever the body is empty).
      method: kind === 'redirect' ? ['GET', 'POST'] : 'POST',
      url: path,
      config: { fpxKind: kind },
      // Resolves to nothing once sent: returning the reply, a thenable, costs Fastify one more job to adopt it.
      handler: (request: FastifyRequest, reply: FastifyReply) =>
        answerDelivery(receiver, deliveryOf(request, kind), kind === 'redirect' ? redirect : undefined, request).then((answer) => {
          send(reply, answer)
        }),
    })
  }
  route(callbackPath, 'callback')
  if (redirectPath !== false) route(redirectPath, 'redirect')
}

export const fpxCollect = fp(fpxCollectPlugin, { name: 'fpx-collect', fastify: '4.x || 5.x', encapsulate: true })
export default fpxCollect

export type { HttpAnswer, RedirectOptions, RedirectResult } from '../src/http/answers.js'
