/**
 * Koa 2 and 3: `router.post('/fpx/callback', fpxCallback(receiver))`. Mount the routes before koa-bodyparser or
 * @koa/bodyparser; both keep `ctx.request.rawBody`, which the adapter uses when they ran first.
 * @module fpx-collect/koa
 */
import type { IncomingMessage } from 'node:http'
import { nodeDelivery } from '../src/http/node-delivery.js'
import type { DeliveryHandler, DeliveryKind } from '../src/receiver/receiver.js'
import { answerDelivery, type RedirectOptions } from '../src/http/answers.js'

/** The parts of Koa's context the adapter reads and writes; Koa 2 and 3 both have them. */
export interface KoaContext {
  req: IncomingMessage
  originalUrl: string
  request: { body?: unknown; rawBody?: unknown }
  status: number
  body: unknown
  set(field: Record<string, string>): void
}

export type KoaMiddleware = (context: KoaContext, next: () => Promise<unknown>) => Promise<void>

function route(receiver: DeliveryHandler, kind: DeliveryKind, redirect?: RedirectOptions<KoaContext>): KoaMiddleware {
  return async (context) => {
    const { body, rawBody } = context.request
    const kept = { raw: rawBody ?? body, parser: 'a body parser such as koa-bodyparser or @koa/bodyparser' }
    const delivery = nodeDelivery(kind, context.req, kept, context.originalUrl)
    const answer = await answerDelivery(receiver, delivery, redirect, context)
    context.status = answer.status
    context.set(answer.headers)
    context.body = answer.body
  }
}

/** The route for server-to-server callbacks (callback_url). */
export function fpxCallback(receiver: DeliveryHandler): KoaMiddleware {
  return route(receiver, 'callback')
}

/** The route the buyer's browser is sent to (redirect_url): verifies like the callback, then answers the browser. */
export function fpxRedirect(receiver: DeliveryHandler, options: RedirectOptions<KoaContext> = {}): KoaMiddleware {
  return route(receiver, 'redirect', options)
}

export type { HttpAnswer, RedirectOptions, RedirectResult } from '../src/http/answers.js'
