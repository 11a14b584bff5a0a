/**
 * The fetch API (`Request` → `Response`): Next.js route handlers (Node.js runtime), Hono, Bun, Deno.
 * `export const POST = fpxCallback(receiver)`, or `fpxCallback(getReceiver)` with a function that creates the
 * receiver on first use, so that a build without the secrets (`next build`) never creates it (docs/nextjs.md).
 * @module fpx-collect/web
 */
import type { DeliveryHandler, DeliveryKind } from '../src/receiver/receiver.js'
import { answerDelivery, type RedirectOptions } from '../src/http/answers.js'

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

/** The body's bytes, refusing early by Content-Length and while streaming, so an oversize body is never buffered. */
async function readLimited(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length')
  if (declared !== null && Number(declared) > limit) throw tooLarge()
  if (request.body === null) return new Uint8Array(0)
  const chunks: Uint8Array[] = []
  let total = 0
  for await (const chunk of request.body as AsyncIterable<Uint8Array>) {
    total += chunk.byteLength
    if (total > limit) throw tooLarge()
    chunks.push(chunk)
  }
  return Buffer.concat(chunks)
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
    const receiver = typeof source === 'function' ? source() : source
    const answer = await answerDelivery(receiver, delivery, redirect, request)
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

export type { HttpAnswer, RedirectOptions, RedirectResult } from '../src/http/answers.js'
