/**
 * Fastify 4 and 5: `app.register(fpxCollect, { receiver, callbackPath: '/fpx/callback', redirectPath: '/fpx/redirect' })`.
 * The plugin is encapsulated: inside it, and only there, every body reaches the receiver as the untouched
 * stream, so it neither leaks a parser into the app nor clashes with the app's own (@fastify/formbody, JSON).
 * @module fpx-collect/fastify
 */
import type { Readable } from 'node:stream'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import getRawBody from 'raw-body'
import type { Delivery, Receiver } from '../src/receiver.js'
import { answerDelivery, type RedirectOptions } from '../src/redirect.js'

export interface FpxCollectOptions extends RedirectOptions<FastifyRequest> {
  receiver: Receiver
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
  fastify.addContentTypeParser('*', (_request: FastifyRequest, payload: Readable, done: (error: Error | null, body?: unknown) => void) => {
    done(null, payload)
  })

  const route = (kind: 'callback' | 'redirect') => async (request: FastifyRequest, reply: FastifyReply) => {
    const url = request.raw.url ?? ''
    const queryStart = url.indexOf('?')
    const stream = request.body as Readable | undefined
    const length = request.headers['content-length'] ?? null
    const delivery: Delivery = {
      kind,
      contentType: request.headers['content-type'] ?? null,
      query: queryStart < 0 ? '' : url.slice(queryStart + 1),
      ...(stream === undefined ? {} : { readBody: (limit: number) => getRawBody(stream, { limit, length }) }),
    }
    const answer = await answerDelivery(receiver, delivery, kind === 'redirect' ? redirect : undefined, request)
    return reply.code(answer.status).headers(answer.headers).send(answer.body)
  }

  fastify.post(callbackPath, route('callback'))
  if (redirectPath !== false) fastify.post(redirectPath, route('redirect'))
}

export const fpxCollect = fp(fpxCollectPlugin, { name: 'fpx-collect', fastify: '4.x || 5.x', encapsulate: true })
export default fpxCollect

export type { HttpAnswer, RedirectOptions, RedirectResult } from '../src/redirect.js'
