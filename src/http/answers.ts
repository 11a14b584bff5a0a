import { escapeHtml, htmlPage } from './html-page.js'
import type { Payment, PaymentState } from '../core/payment.js'
import type { Delivery, DeliveryHandler, ReceiverResponse } from '../receiver/receiver.js'
import { type Recheck, recheckOf, refused } from '../receiver/responses.js'
import { type Logger, RECEIVER_LOGGER, safeLogger } from '../core/logger.js'
import { ReceiverError } from '../core/result/errors.js'

/** What an adapter sends back: framework-neutral. */
export interface HttpAnswer {
  status: number
  headers: Record<string, string>
  body: string
}

/** The URL for a payment's state, or a function of the payment giving it (async, when it looks something up). */
export type PaymentUrl = string | ((payment: Payment) => string | Promise<string>)

export interface RedirectResult {
  /** The receiver's verdict, as a callback would get it. */
  response: ReceiverResponse
  /** The verified payment; absent when the delivery was refused before its checksum matched. */
  payment: Payment | undefined
}

/**
 * How `fpxRedirect` answers the buyer's browser once the delivery was verified and handled. By default a 303 to
 * the URL for the payment's state, or a small built-in result page when no URL is given for that state.
 * `TContext` is the framework's request object (Express `req`, Koa `ctx`, Fastify `request`, fetch `Request`).
 */
export interface RedirectOptions<TContext = unknown> {
  successUrl?: PaymentUrl
  failureUrl?: PaymentUrl
  /** B2B1 payments awaiting corporate approval. Without it, the built-in page explains the wait. */
  pendingUrl?: PaymentUrl
  /** Answer the browser yourself (render your own page). Called for every redirect, refused ones included. */
  onResult?: (result: RedirectResult, context: TContext) => Partial<HttpAnswer> | Promise<Partial<HttpAnswer>>
}

const HTML = { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }

const TITLES: Record<PaymentState, string> = {
  succeeded: 'Payment successful',
  failed: 'Payment unsuccessful',
  pending: 'Payment awaiting approval',
}

const EXPLANATIONS: Record<PaymentState, string> = {
  succeeded: 'Thank you. Your payment was received.',
  failed: 'Your payment did not go through. No money was taken; you may try again.',
  pending: 'Your corporate account must approve this payment. We will confirm your order once it is approved.',
}

function isWebUrl(text: string): boolean {
  try {
    const { protocol } = new URL(text)
    return protocol === 'https:' || protocol === 'http:'
  } catch {
    return false
  }
}

// Everything but visible ASCII: the header cannot carry it (CR/LF, controls, non-Latin-1) or would garble it.
const NOT_IN_LOCATION = /[^\x21-\x7e]/gu

/**
 * A redirect URL as a valid Location header value: characters a header cannot carry are percent-encoded as
 * UTF-8, as a browser would encode them, so `/orders/${orderNumber}` with any signed order number never makes
 * the framework throw (and never splits the header).
 */
export function locationHeader(url: string): string {
  return url.replace(NOT_IN_LOCATION, (character) => {
    let encoded = ''
    // A lone surrogate becomes U+FFFD's bytes, as TextEncoder does; encodeURIComponent would throw.
    for (const byte of new TextEncoder().encode(character)) encoded += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
    return encoded
  })
}

function resultPage(payment: Payment): HttpAnswer {
  const rows: [string, string][] = [['Order', payment.orderNumber]]
  // A minimal redirect may carry no amount: then the page shows none rather than a made-up one.
  if (payment.amountSen !== undefined) rows.push(['Amount', `RM ${(payment.amountSen / 100).toFixed(2)}`])
  rows.push(['Reference', payment.merchantReferenceNumber ?? payment.exchangeNumber])
  if (payment.failureCode !== null) rows.push(['Bank code', payment.failureCode])
  const list = rows.map(([term, value]) => `<dt>${escapeHtml(term)}</dt><dd>${escapeHtml(value)}</dd>`).join('')
  // Only a web address is linked: the URL is signed, but a `javascript:` or `data:` one would run in the shop's page.
  const receipt =
    payment.receiptUrl !== null && payment.state === 'succeeded' && isWebUrl(payment.receiptUrl)
      ? `<p><a href="${escapeHtml(payment.receiptUrl)}">Download the receipt</a></p>`
      : ''
  const title = TITLES[payment.state]
  const body = `<h1>${escapeHtml(title)}</h1>\n<p>${escapeHtml(EXPLANATIONS[payment.state])}</p>\n<dl>${list}</dl>\n${receipt}`
  return { status: 200, headers: { ...HTML }, body: htmlPage(title, body) }
}

/** How long the "being confirmed" page waits before it sends the result again, and how many times it does. */
const RECHECK_AFTER_S = 3
const MAX_RECHECKS = 20

/**
 * The page for a verified result that is not handled yet (being confirmed, confirmed elsewhere right now, kept to
 * be confirmed later): it says so and follows the receiver's signed check-again link in a moment (the redirect
 * route takes it as a GET), until it is handled; after MAX_RECHECKS, it stops and says the order will follow.
 */
function confirmingPage(recheck: Recheck): HttpAnswer {
  const more = recheck.attempt <= MAX_RECHECKS
  const title = 'Confirming your payment'
  const text = more
    ? 'Your payment result has arrived and is being confirmed with the bank. This page checks again in a few seconds; please do not pay again.'
    : 'Your payment result has arrived and is still being confirmed. Your order will be updated as soon as it is; you may close this page, and please do not pay again.'
  const head = more ? `<meta http-equiv="refresh" content="${RECHECK_AFTER_S};url=?${escapeHtml(recheck.query)}">` : undefined
  const link = more ? `\n<p><a href="?${escapeHtml(recheck.query)}">Check now</a></p>` : ''
  return { status: 200, headers: { ...HTML }, body: htmlPage(title, `<h1>${escapeHtml(title)}</h1>\n<p>${escapeHtml(text)}</p>${link}`, head) }
}

/** Refusals are shown to a person, in words, not as JSON; the code is there for support staff. */
export function errorPage(status: number, code: string): HttpAnswer {
  const [title, text] =
    status === 401
      ? ['Payment result not verified', 'This payment result could not be verified, so it was not accepted.']
      : status === 410
        ? ['Confirming your payment', 'This page has stopped checking. Your order will be updated as soon as the payment is confirmed; please do not pay again.']
      : status >= 500 || status === 409
        ? ['Payment result not recorded yet', 'Your payment result arrived but could not be recorded yet. Your order will be updated shortly; please do not pay again.']
        : ['Invalid payment result', 'This payment result was incomplete or malformed, so it was not accepted.']
  const body = `<h1>${escapeHtml(title)}</h1>\n<p>${escapeHtml(text)}</p>\n<p><small>Error code: ${escapeHtml(code)}</small></p>`
  return { status, headers: { ...HTML }, body: htmlPage(title, body) }
}

async function urlFor(options: RedirectOptions<never>, payment: Payment): Promise<string | undefined> {
  const chosen =
    payment.state === 'succeeded' ? options.successUrl : payment.state === 'failed' ? options.failureUrl : options.pendingUrl
  return typeof chosen === 'function' ? await chosen(payment) : chosen
}

/** The browser's answer for a redirect delivery the receiver has handled. */
export async function answerRedirect<TContext>(
  response: ReceiverResponse,
  options: RedirectOptions<TContext>,
  context: TContext,
): Promise<HttpAnswer> {
  const payment = response.payment
  if (options.onResult !== undefined) {
    const answer = sendable(await options.onResult({ response, payment }, context))
    if (typeof answer === 'string') throw new TypeError(`onResult's answer cannot be sent: ${answer}`)
    return answer
  }
  // Verified but not handled yet: the buyer is told it is being confirmed, and the page checks again.
  const recheck = recheckOf(response)
  if (recheck !== undefined) return confirmingPage(recheck)
  // A verified state no handler listens to was not recorded (503 no_handler, retried by the callback), but the
  // bank's verdict stands: the buyer sees the page for it.
  const shown = response.status === 200 || response.error?.code === 'no_handler'
  if (!shown || payment === undefined) return errorPage(response.status, response.error?.code ?? 'unknown')
  const location = await urlFor(options as RedirectOptions<never>, payment)
  if (location === undefined) return resultPage(payment)
  if (typeof location !== 'string') throw new TypeError(`the redirect URL for a ${payment.state} payment is ${location === null ? 'null' : typeof location}, not text`)
  return { status: 303, headers: { location: locationHeader(location), 'cache-control': 'no-store' }, body: '' }
}

/** The answer for a callback: the receiver's own. */
export function answerCallback(response: ReceiverResponse): HttpAnswer {
  return { status: response.status, headers: response.headers, body: response.body }
}

// A header name is a token; a value is what every platform can send: no CR, LF, NUL or other control but tab, and
// no character past Latin-1 (Node refuses controls, the fetch API characters past U+00FF).
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/
// Statuses whose answer carries no body: Node drops one, the fetch API's Response refuses one.
const NO_BODY = new Set([204, 205, 304])

/**
 * An app's onResult answer as every adapter can send it alike, or why none can: an invalid status, header or body
 * would make one framework throw, another send it as JSON or text, the fetch API refuse it.
 */
function sendable(own: unknown): HttpAnswer | string {
  if (own === null || typeof own !== 'object') return `it answered ${own === null ? 'null' : typeof own}, not an object`
  const { status = 200, headers = {}, body = '' } = own as { status?: unknown; headers?: unknown; body?: unknown }
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 599) return 'its status is not an integer from 200 to 599'
  if (headers === null || typeof headers !== 'object') return 'its headers are not an object'
  if (typeof body !== 'string') return `its body is ${body === null ? 'null' : typeof body}, not text`
  const checked: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (!HEADER_NAME.test(name)) return `a header name is not a valid token (${JSON.stringify(name.slice(0, 64))})`
    if (typeof value !== 'string' || !HEADER_VALUE.test(value)) return `the value of its ${name} header is not header text`
    checked[name] = value
  }
  return { status, headers: { ...HTML, ...checked }, body: NO_BODY.has(status) ? '' : body }
}

/** The logger of the receiver an adapter was given (the merchant's, made safe), else the console's. */
function loggerOf(receiver: DeliveryHandler | undefined): Logger {
  const kept = (receiver as { [RECEIVER_LOGGER]?: Logger } | undefined)?.[RECEIVER_LOGGER]
  return kept ?? safeLogger(undefined)
}

/**
 * What a fault of the app's (or ours) around the receiver answers, on every adapter alike: 500 internal_error, as a
 * page for the buyer's browser, as the receiver's JSON for a callback. Never the framework's own error page, which
 * may show a stack, and never a throw: Express takes a thrown 'route' or undefined as "go on to the next route".
 */
function faultAnswer(kind: Delivery['kind']): HttpAnswer {
  if (kind === 'redirect') return errorPage(500, 'internal_error')
  const error = new ReceiverError('internal_error', 'unexpected error while answering a delivery')
  return answerCallback(refused(error, 'failed'))
}

/**
 * Everything an adapter does once it has the raw delivery: handle it, then answer as a callback or a redirect.
 * Adapters hold no other logic. `source` is the receiver, or the app's function that answers it (the fetch
 * adapter's, called per request). Never rejects: whatever that function, the app's onResult throws, or onResult
 * answers that HTTP cannot carry, is logged and answered 500 `internal_error`.
 */
export async function answerDelivery<TContext>(
  source: DeliveryHandler | (() => DeliveryHandler),
  delivery: Delivery,
  redirect: RedirectOptions<TContext> | undefined,
  context: TContext,
): Promise<HttpAnswer> {
  let receiver: DeliveryHandler | undefined
  let response: ReceiverResponse
  try {
    receiver = typeof source === 'function' ? source() : source
    response = await receiver.handle(delivery)
  } catch (error) {
    loggerOf(receiver).error({ err: error, delivery: delivery.kind }, 'the receiver could not be had (the function answering it threw) or threw while handling a delivery; answered 500 internal_error')
    return faultAnswer(delivery.kind)
  }
  if (delivery.kind !== 'redirect') return answerCallback(response)
  const options = redirect ?? {}
  const log = { delivery: delivery.kind, outcome: response.outcome, ...(response.payment === undefined ? {} : { exchangeNumber: response.payment.exchangeNumber }) }
  if (options.onResult === undefined) {
    // successUrl, failureUrl and pendingUrl may be the app's functions: one that throws, or answers no text, is the
    // app's fault like an onResult that throws, never the framework's error page (or, for a thrown null or 'route',
    // Express's next route and a Koa request left unanswered).
    try {
      return await answerRedirect(response, options, context)
    } catch (error) {
      loggerOf(receiver).error({ ...log, err: error }, "the app's successUrl, failureUrl or pendingUrl threw or answered no URL text; the browser was answered 500 internal_error")
      return faultAnswer(delivery.kind)
    }
  }
  let own: unknown
  try {
    own = await options.onResult({ response, payment: response.payment }, context)
  } catch (error) {
    loggerOf(receiver).error({ ...log, err: error }, "the app's onResult threw; the browser was answered 500 internal_error")
    return faultAnswer(delivery.kind)
  }
  const answer = sendable(own)
  if (typeof answer !== 'string') return answer
  const error = new TypeError(`onResult's answer cannot be sent: ${answer}`)
  loggerOf(receiver).error({ ...log, err: error }, `the app's onResult answered what HTTP cannot carry (${answer}); the browser was answered 500 internal_error`)
  return faultAnswer(delivery.kind)
}
