/**
 * Express 4 and 5: `app.post('/fpx/callback', fpxCallback(receiver))`. Mount the routes before any body
 * parser, or let the parser keep the raw body: `express.urlencoded({ extended: false, verify: keepRawBody })`.
 * The operator's console: `app.use('/admin/payments', fpxConsole(receiver, { authorize }))`.
 * @module fpx-collect/express
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { nodeDelivery } from '../src/http/node-delivery.js'
import type { DeliveryHandler, DeliveryKind } from '../src/receiver/receiver.js'
import { answerDelivery, type HttpAnswer, type RedirectOptions } from '../src/http/answers.js'
import { type ConsoleHandler, createConsole } from '../src/console/console.js'
import type { Authorization, ConsoleOptions } from '../src/console/options.js'
import type { ConsoleReceiver } from '../src/console/source.js'
import { fetchRequest, responseParts, writeResponse } from '../src/http/node-fetch.js'

/** The parts of Express's request the adapter reads; Express 4 and 5 both have them. */
export interface ExpressRequest extends IncomingMessage {
  originalUrl?: string
  body?: unknown
}

export type ExpressMiddleware = (request: ExpressRequest, response: ServerResponse, next: (error?: unknown) => void) => void

function send(response: ServerResponse, answer: HttpAnswer): void {
  response.statusCode = answer.status
  for (const [name, value] of Object.entries(answer.headers)) response.setHeader(name, value)
  response.end(answer.body)
}

function route(receiver: DeliveryHandler, kind: DeliveryKind, redirect?: RedirectOptions<ExpressRequest>): ExpressMiddleware {
  return (request, response, next) => {
    // rawBody is not declared here: other packages' type augmentations of IncomingMessage declare it differently.
    const rawBody = (request as { rawBody?: unknown }).rawBody
    const kept = { raw: rawBody ?? request.body, parser: 'a body parser such as express.urlencoded() or express.json() (or a middleware that read the request stream)' }
    const delivery = nodeDelivery(kind, request, kept, request.originalUrl ?? request.url)
    // send() throws when an app's onResult gives a header Node refuses: that goes to next() too, never unhandled.
    answerDelivery(receiver, delivery, redirect, request)
      .then((answer) => send(response, answer))
      .catch(next)
  }
}

/**
 * For a body parser mounted before the payment routes: `express.urlencoded({ extended: false, verify: keepRawBody })`,
 * `express.json({ verify: keepRawBody })`. Keeps the bytes the parser read as `req.rawBody`, where the routes find
 * them, since the checksum is verified over the raw body, never over a re-serialised object. A function rather
 * than a global type augmentation of `req.rawBody`: other packages declare that property with other types, and
 * two augmentations that disagree break the app's build.
 */
export function keepRawBody(request: IncomingMessage, _response: ServerResponse, buffer: Buffer): void {
  Object.assign(request, { rawBody: buffer })
}

/** The route for server-to-server callbacks (callback_url). */
export function fpxCallback(receiver: DeliveryHandler): ExpressMiddleware {
  return route(receiver, 'callback')
}

/** The route the buyer's browser is sent to (redirect_url): verifies like the callback, then answers the browser. */
export function fpxRedirect(receiver: DeliveryHandler, options: RedirectOptions<ExpressRequest> = {}): ExpressMiddleware {
  return route(receiver, 'redirect', options)
}

export type { HttpAnswer, RedirectOptions, RedirectResult } from '../src/http/answers.js'

/** fpxConsole's options: authorize also gets Express's own request (its session, `req.user`). */
export interface ExpressConsoleOptions extends Omit<ConsoleOptions, 'authorize' | 'basePath'> {
  authorize?: (request: Request, expressRequest: ExpressRequest) => Authorization | Promise<Authorization>
}

const MOUNT_PATHS_KEPT = 16

/**
 * The operator's console, mounted under a path: `app.use('/admin/payments', fpxConsole(receiver, { authorize }))`.
 * Refuses every request until `authorize` lets it through (docs/operations.md, "The console").
 */
export function fpxConsole(receiver: ConsoleReceiver, options: ExpressConsoleOptions = {}): ExpressMiddleware {
  const natives = new WeakMap<Request, ExpressRequest>()
  const { authorize } = options
  const base = { ...options, authorize: authorize === undefined ? undefined : (request: Request) => authorize(request, natives.get(request) as ExpressRequest) }
  // One handler per mount path (Express tells it per request, as req.baseUrl): its links start with it. Kept for a
  // few paths only: a mount path with parameters, or another casing of a fixed one (Express matches either way),
  // lets anyone make new ones, and a request must not grow the process before it is authorized.
  const handlers = new Map<string, ConsoleHandler>()
  return (request, response, next) => {
    const basePath = (request as { baseUrl?: string }).baseUrl ?? ''
    let handler = handlers.get(basePath)
    if (handler === undefined) {
      handler = createConsole(receiver, { ...base, basePath })
      if (handlers.size < MOUNT_PATHS_KEPT) handlers.set(basePath, handler)
    }
    fetchRequest({ request, url: request.originalUrl ?? request.url ?? '/', parsed: request.body })
      .then((fetched) => {
        natives.set(fetched, request)
        return (handler as ConsoleHandler)(fetched)
      })
      .then(responseParts)
      .then((answer) => writeResponse(response, answer))
      .catch(next)
  }
}

export type { Authorization, ConsoleOptions } from '../src/console/options.js'
