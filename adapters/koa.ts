/**
 * Koa 2 and 3: `router.post('/fpx/callback', fpxCallback(receiver))`. Mount the routes before koa-bodyparser or
 * @koa/bodyparser; both keep `ctx.request.rawBody`, which the adapter uses when they ran first.
 * The operator's console: `app.use(fpxConsole(receiver, { authorize, basePath: '/admin/payments' }))`.
 * @module fpx-collect/koa
 */
import type { IncomingMessage } from 'node:http'
import { nodeDelivery } from '../src/http/node-delivery.js'
import type { DeliveryHandler, DeliveryKind } from '../src/receiver/receiver.js'
import { answerDelivery, type RedirectOptions } from '../src/http/answers.js'
import { createConsole } from '../src/console/console.js'
import type { Authorization, ConsoleOptions } from '../src/console/options.js'
import type { ConsoleReceiver } from '../src/console/source.js'
import { fetchRequest, responseParts } from '../src/http/node-fetch.js'

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
    const kept = { raw: rawBody ?? body, parser: 'a body parser such as koa-bodyparser or @koa/bodyparser (or a middleware that read the request stream)' }
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

export interface KoaConsoleOptions extends Omit<ConsoleOptions, 'authorize' | 'basePath'> {
  /** Who may use the console; also gets Koa's context (its session, `ctx.state.user`). Without it, every request is refused. */
  authorize?: (request: Request, context: KoaContext) => Authorization | Promise<Authorization>
  /** The path it answers under, such as `/admin/payments`: Koa has no mount path of its own to tell it. */
  basePath: string
}

/** The operator's console: answers requests under `basePath` and passes every other request on. */
export function fpxConsole(receiver: ConsoleReceiver, options: KoaConsoleOptions): KoaMiddleware {
  const { authorize, ...rest } = options ?? ({} as KoaConsoleOptions)
  if (typeof rest.basePath !== 'string' || !rest.basePath.startsWith('/')) throw new TypeError("fpxConsole for Koa needs basePath, the path it answers under, such as '/admin/payments'")
  const natives = new WeakMap<Request, KoaContext>()
  const handler = createConsole(receiver, { ...rest, authorize: authorize === undefined ? undefined : (request) => authorize(request, natives.get(request) as KoaContext) })
  const basePath = rest.basePath.replace(/\/+$/, '')
  return async (context, next) => {
    const path = new URL(context.originalUrl, 'http://x').pathname
    if (path !== basePath && !path.startsWith(`${basePath}/`)) return void (await next())
    const { body, rawBody } = context.request
    const fetched = await fetchRequest({ request: context.req, url: context.originalUrl, parsed: rawBody ?? body })
    natives.set(fetched, context)
    const answer = await responseParts(await handler(fetched))
    context.status = answer.status
    context.set(answer.cookies.length > 0 ? { ...answer.headers, 'set-cookie': answer.cookies as unknown as string } : answer.headers)
    context.body = answer.body
  }
}

export type { Authorization, ConsoleOptions } from '../src/console/options.js'
export type { HttpAnswer, RedirectOptions, RedirectResult } from '../src/http/answers.js'
