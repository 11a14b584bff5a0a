import { requestChecksum } from '../core/request/request-checksum.js'
import { type Buyer, type CreationOptions, mayHaveCreated, withRecorded } from './booking.js'
import type { ClientContext } from './context.js'
import { FpxApiError } from './errors.js'
import { REDACTED } from './redact.js'
import { formFields } from './form-fields.js'
import { type PaymentInput, paymentInputSchema, validate } from './schemas.js'

export interface PaymentForm {
  /** {base_url}/v1/payments */
  readonly action: string
  readonly method: 'POST'
  /** Form fields as the browser posts them, nested objects as `params[reference1]`. */
  readonly fields: Readonly<Record<string, string>>
  /**
   * With a `book`: settles once the payment book holds the payment, true, or false when the store could not take
   * it (logged as an error). Never rejects. Not enumerable: copies and JSON of the form leave it out.
   */
  readonly recorded?: Promise<boolean>
}

export interface CreatedPayment {
  /** Where the buyer goes next (the bank-selection page), read from the service's answer (a redirect or its page). */
  readonly nextUrl: string
  /** From the X-Exchange-Number header when the service sends it (the emulator does), else null. */
  readonly exchangeNumber: string | null
  /** The page the service answered with, any written form of a credential in it [redacted]. */
  readonly html: string
}

/**
 * The signed request fields. The merchant variant sends `uid` too: it is inside the signed string, and sending
 * it lets the service tell a wrong credential set from a wrong checksum. The partner variant adds `partner_uid`,
 * which is not signed.
 */
export function paymentFields(context: ClientContext, input: PaymentInput): Record<string, string> {
  const valid = validate(paymentInputSchema, input, 'payment')
  const { uid, authToken, checksumToken } = context.config
  const signed = {
    buyer_email: valid.buyer_email,
    buyer_name: valid.buyer_name,
    buyer_phone: valid.buyer_phone,
    callback_url: valid.callback_url || null,
    order_number: valid.order_number,
    product_description: valid.product_description,
    redirect_url: valid.redirect_url || null,
    transaction_amount: valid.transaction_amount,
    uid,
  }
  const fields = formFields(valid, ['partner_uid'])
  const partnerUid = valid.partner_uid === undefined || valid.partner_uid === '' ? context.config.partnerUid : valid.partner_uid
  if (partnerUid !== undefined) fields.partner_uid = partnerUid
  fields.uid = uid
  fields.token = authToken
  fields.checksum = requestChecksum(signed, checksumToken)
  return fields
}

/**
 * The second argument of buildPaymentForm: `exposeAuthToken: true` is required, so every call site says that the
 * buyer's page will hold the Auth Token (see buildPaymentForm).
 */
export interface PaymentFormOptions extends CreationOptions {
  /**
   * `true`: you accept that the buyer's browser receives your API UID and Auth Token, with which anyone can read
   * your whole transaction list over Basic auth (other buyers' names, e-mails and phones included). Prefer
   * createPayment on the server.
   */
  exposeAuthToken: true
}

const EXPOSURE_REQUIRED =
  "buildPaymentForm puts your API UID and Auth Token in the buyer's page, and with them anyone can read your whole " +
  "transaction list (other buyers' e-mails and phones included): create the payment from your server with " +
  'createPayment and send the buyer to its nextUrl, or pass { exposeAuthToken: true } to accept that risk'

/**
 * The signed payment request as a form for the buyer's browser to POST. The fields hold `uid` and the Auth
 * Token, because the spec makes payment creation authenticate with `token` in the body; the Checksum Token never
 * leaves. A buyer who reads the page holds Basic-auth credentials of the merchant's API, hence the required
 * `exposeAuthToken: true` (a TypeError without it). createPayment keeps both on the server.
 */
export function buildPaymentForm(context: ClientContext, input: PaymentInput, options: PaymentFormOptions): PaymentForm {
  // Checked at run time as well: JavaScript callers and casts do not see the type.
  if ((options as Partial<PaymentFormOptions> | undefined)?.exposeAuthToken !== true) throw new TypeError(EXPOSURE_REQUIRED)
  const attached = context.booking.attachment(options)
  const form: PaymentForm = { action: context.http.url('/v1/payments'), method: 'POST', fields: paymentFields(context, input) }
  if (!context.booking.enabled) return form
  // Written while the page goes out, long before the buyer is back from the bank; `recorded` says when it is.
  const { order_number, transaction_amount } = form.fields as { order_number: string; transaction_amount: string }
  return withRecorded(form, context.booking.recordQuietly('form', order_number, transaction_amount, null, attached, form.fields as Buyer))
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
    const code = name.startsWith('#x') || name.startsWith('#X') ? parseInt(name.slice(2), 16) : name.startsWith('#') ? Number(name.slice(1)) : undefined
    // A reference past Unicode's last code point names no character: kept as written, as a browser shows U+FFFD.
    if (code !== undefined) return code <= 0x10ffff ? String.fromCodePoint(code) : whole
    return ENTITIES[name.toLowerCase()] ?? whole
  })
}

/**
 * The page's next address: a form's action, else a meta refresh, else the first link. The spec does not show
 * the page, so this reads what any such page has to contain for a browser to move on.
 */
export function nextAddress(html: string, pageUrl: string): string | undefined {
  const patterns = [
    /<form\b[^>]*\baction\s*=\s*("([^"]*)"|'([^']*)')/i,
    /<meta\b[^>]*http-equiv\s*=\s*["']?refresh["']?[^>]*content\s*=\s*["'][^"']*url=([^"']+)["']/i,
    /<a\b[^>]*\bhref\s*=\s*("([^"]*)"|'([^']*)')/i,
  ]
  for (const pattern of patterns) {
    const match = pattern.exec(html)
    const raw = match?.[2] ?? match?.[3] ?? match?.[1]
    if (raw === undefined || raw.trim() === '') continue
    const decoded = decodeEntities(raw.trim())
    if (URL.canParse(decoded, pageUrl)) return new URL(decoded, pageUrl).toString()
  }
  return undefined
}

/**
 * Whether an address holds a credential, or the [redacted] put where one was. The page was redacted as it was
 * read, but its address was decoded since (character references, the URL parser dropping tabs and line breaks),
 * which can spell a secret again; so the address is checked as it leaves, and as the server it names reads it.
 */
function carriesCredential(context: ClientContext, url: string): boolean {
  let decoded = url
  try {
    decoded = decodeURIComponent(url)
  } catch {
    // A malformed percent escape: the address is checked as it is.
  }
  return [url, decoded].some((text) => text.includes(REDACTED) || text.includes(encodeURI(REDACTED)) || context.http.redact(text) !== text)
}

/**
 * POSTs the payment from the server and returns where the buyer goes next (`nextUrl`): the way to create
 * payments in production, since the Auth Token stays on the server. Never retried: after a lost answer a retry
 * could create a second payment.
 */
export async function createPayment(context: ClientContext, input: PaymentInput, options?: CreationOptions): Promise<CreatedPayment> {
  const attached = context.booking.attachment(options)
  const form = paymentFields(context, input)
  const { order_number, transaction_amount } = form as { order_number: string; transaction_amount: string }
  let answer
  try {
    answer = await context.http.send({ method: 'POST', path: '/v1/payments', form, basicAuth: false, retry: false, acceptRedirect: true })
  } catch (error) {
    // A lost answer may hide a payment made: recorded, the sweeper finds out (the caller still gets the error).
    if (mayHaveCreated(error)) await context.booking.recordQuietly('payment', order_number, transaction_amount, null, attached, form as Buyer)
    throw error
  }
  // Once the service took the payment, the book is told, whatever the page looks like.
  await context.booking.recordQuietly('payment', order_number, transaction_amount, answer.headers.get('x-exchange-number'), attached, form as Buyer)
  const action = context.http.url('/v1/payments')
  // The spec does not show the answer: a redirect to the hosted page is as plausible as a page that links to it.
  const location = answer.status >= 300 ? answer.headers.get('location') : null
  const nextUrl = location !== null && URL.canParse(location, action) ? new URL(location, action).toString() : nextAddress(answer.text, action)
  if (nextUrl === undefined)
    throw new FpxApiError(`POST /v1/payments answered ${answer.status} with a page that has no next address`, answer.status, context.http.body(answer))
  // An address that held a credential would hand it to the buyer.
  if (carriesCredential(context, nextUrl))
    throw new FpxApiError(
      `POST /v1/payments answered ${answer.status} with a next address that carries a credential; not sending a buyer there`,
      answer.status,
      context.http.body(answer),
    )
  return { nextUrl, exchangeNumber: answer.headers.get('x-exchange-number'), html: answer.text }
}
