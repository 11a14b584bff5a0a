/**
 * The fetch API (`Request` → `Response`): Next.js route handlers, Hono, Bun, Deno.
 * `export const POST = fpxCallback(receiver)`.
 * @module fpx-collect/web
 */
import type { DeliveryHandler } from '../src/receiver/receiver.js'
import { answerDelivery, type RedirectOptions } from '../src/receiver/answers.js'

export type WebHandler = (request: Request) => Promise<Response>

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

function route(receiver: DeliveryHandler, kind: 'callback' | 'redirect', redirect?: RedirectOptions<Request>): WebHandler {
  return async (request) => {
    const base = {
      kind,
      contentType: request.headers.get('content-type'),
      contentEncoding: request.headers.get('content-encoding'),
      query: new URL(request.url).search,
    }
    // A fetch body can be read only once: when the app read it first, explain that instead of failing the read.
    const delivery = request.bodyUsed
      ? { ...base, consumedBy: 'request.formData(), request.text() or request.json() before fpx-collect (read a request.clone() there instead)' }
      : { ...base, readBody: (limit: number) => readLimited(request, limit) }
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
export function fpxCallback(receiver: DeliveryHandler): WebHandler {
  return route(receiver, 'callback')
}

/** The route the buyer's browser is sent to (redirect_url): verifies like the callback, then answers the browser. */
export function fpxRedirect(receiver: DeliveryHandler, options: RedirectOptions<Request> = {}): WebHandler {
  return route(receiver, 'redirect', options)
}

export type { HttpAnswer, RedirectOptions, RedirectResult } from '../src/receiver/answers.js'
