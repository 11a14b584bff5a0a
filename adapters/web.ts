/**
 * The fetch API (`Request` → `Response`): Next.js route handlers (Node.js and edge runtimes), Hono, Bun, Deno,
 * Cloudflare Workers (with or without nodejs_compat).
 * `export const POST = fpxCallback(receiver)`, or `fpxCallback(getReceiver)` with a function that creates the
 * receiver on first use, so that a build without the secrets (`next build`) never creates it (docs/nextjs.md).
 * The operator's console: `fpxConsole(receiver, { authorize, basePath: '/admin/payments' })`, one handler for every
 * method under that path.
 * @module fpx-collect/web
 */
import type { DeliveryHandler, DeliveryKind } from '../src/receiver/receiver.js'
import { answerDelivery, type RedirectOptions } from '../src/http/answers.js'
import { type ConsoleHandler, createConsole } from '../src/console/console.js'
import type { ConsoleOptions } from '../src/console/options.js'
import type { ConsoleReceiver } from '../src/console/source.js'

export type WebHandler = (request: Request) => Promise<Response>

/**
 * The receiver, or a function that answers it, called on every request and never before the first one. The
 * function must answer the same receiver each time (create it once and keep it): the callback and redirect
 * routes share its store, which is how a result is handled once.
 */
export type ReceiverSource = DeliveryHandler | (() => DeliveryHandler)

function tooLarge(): Error {
  return Object.assign(new Error('request body over the limit'), { status: 413 })
}

/**
 * Whether a failed read is the sender's connection being cut, as the runtimes report it: Node's streams with
 * ECONNRESET ("aborted"), Bun with an AbortError, Deno with BadResource, or the request's signal aborted. Anything
 * else (a platform API missing, a TypeError) is a fault of ours, never blamed on the sender.
 */
function connectionCut(request: Request, error: unknown): boolean {
  const { name, code } = (error ?? {}) as { name?: unknown; code?: unknown }
  return request.signal?.aborted === true || code === 'ECONNRESET' || name === 'AbortError' || name === 'BadResource'
}

/**
 * The body's bytes, refusing early by Content-Length and while streaming, so an oversize body is never buffered.
 * A read the connection cut short is the sender's (400); anything else thrown here is ours (500).
 */
async function readLimited(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length')
  if (declared !== null && Number(declared) > limit) throw tooLarge()
  if (request.body === null) return new Uint8Array(0)
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    let read: Awaited<ReturnType<typeof reader.read>>
    try {
      read = await reader.read()
    } catch (error) {
      if (!connectionCut(request, error)) throw error
      throw Object.assign(new Error('the request body could not be read', { cause: error }), { status: 400 })
    }
    if (read.done) break
    total += read.value.byteLength
    if (total > limit) {
      void reader.cancel().catch(() => undefined)
      throw tooLarge()
    }
    chunks.push(read.value)
  }
  const bytes = new Uint8Array(total)
  let at = 0
  for (const chunk of chunks) {
    bytes.set(chunk, at)
    at += chunk.byteLength
  }
  return bytes
}

const CONSUMED_BY = 'request.formData(), request.text(), request.json() or request.arrayBuffer() before fpx-collect'
// A fetch Request has no body parser to move or configure: code that needs the body reads a copy.
const CLONE_ADVICE =
  'Let fpx-collect read the Request first: code that runs before it (a middleware, your own route code) should ' +
  'read a copy, such as await request.clone().formData(), and leave the original Request unread for fpxCallback / fpxRedirect.'

function route(source: ReceiverSource, kind: DeliveryKind, redirect?: RedirectOptions<Request>): WebHandler {
  return async (request) => {
    const base = {
      kind,
      contentType: request.headers.get('content-type'),
      contentEncoding: request.headers.get('content-encoding'),
      query: new URL(request.url).search,
    }
    // A fetch body can be read only once: when the app read it first, explain that instead of failing the read.
    const delivery = request.bodyUsed ? { ...base, consumedBy: CONSUMED_BY, consumedAdvice: CLONE_ADVICE } : { ...base, readBody: (limit: number) => readLimited(request, limit) }
    // The function is called per request, inside answerDelivery: one that throws (no secrets yet) is answered 500.
    const answer = await answerDelivery(source, delivery, redirect, request)
    try {
      return new Response(answer.body === '' ? null : answer.body, { status: answer.status, headers: answer.headers })
    } catch {
      // A header the platform refuses (from an app's onResult): the payment is handled; the browser gets 500.
      return new Response('the answer could not be sent: a header value is invalid', { status: 500, headers: { 'content-type': 'text/plain; charset=utf-8' } })
    }
  }
}

/** The route for server-to-server callbacks (callback_url). */
export function fpxCallback(receiver: ReceiverSource): WebHandler {
  return route(receiver, 'callback')
}

/** The route the buyer's browser is sent to (redirect_url): verifies like the callback, then answers the browser. */
export function fpxRedirect(receiver: ReceiverSource, options: RedirectOptions<Request> = {}): WebHandler {
  return route(receiver, 'redirect', options)
}

/**
 * The operator's console as a fetch handler for every request under `basePath` (GET and POST). `receiver` may be
 * a function that answers it, made on the first request as for fpxCallback. Without `authorize`, every request
 * is refused (403).
 */
export function fpxConsole(receiver: ConsoleReceiver | (() => ConsoleReceiver), options: ConsoleOptions = {}): ConsoleHandler {
  let handler: ConsoleHandler | undefined
  return (request) => {
    handler ??= createConsole(typeof receiver === 'function' ? receiver() : receiver, options)
    return handler(request)
  }
}

export type { Authorization, ConsoleOptions } from '../src/console/options.js'
export type { HttpAnswer, RedirectOptions, RedirectResult } from '../src/http/answers.js'
