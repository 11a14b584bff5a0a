import { escapeHtml } from '../core/html.js'
import type { Rule } from '../core/request/field-rules.js'
import { schemePage } from './pages-layout.js'
import { DEFAULT_USD_TO_MYR_RATE } from './config.js'
import { ApiError, invalidParameters, notFound } from './errors.js'
import { basicAuth, type Context, type FormBody, type Reply, type Route, readForm } from './http.js'
import { randomDigits } from './ids.js'
import { bankPagePath } from './pages.js'
import { mytIso } from './records.js'
import type { PaymentSession } from './state.js'
import { buyerPhone, type Notes, partnerOf, transactionAmount } from './tolerance.js'
import { check, checkNested, rulesOf } from './validation.js'

/**
 * Payment sessions (beta): POST {base}/apis/payments with Basic auth answers a hosted form address; the buyer
 * fills in what the merchant did not send, and the form creates the payment and goes on to bank selection.
 */
const BUYER_RULES = rulesOf('buyer_name', 'buyer_email')
type BuyerField = keyof typeof BUYER_RULES | 'buyer_phone'
const BUYER_FIELDS: readonly BuyerField[] = ['buyer_name', 'buyer_email', 'buyer_phone']

/** buyer_phone and transaction_amount are read by tolerance.ts, strictly or as the real service takes them. */
const OPTIONAL: Record<string, Rule> = {
  ...BUYER_RULES,
  ...rulesOf('order_number', 'product_description', 'callback_url', 'redirect_url', 'cancel_url', 'timeout_url', 'partner_uid', 'currency'),
}

const BUYER_LABELS: Record<BuyerField, [string, string]> = {
  buyer_name: ['Full name', 'text'],
  buyer_email: ['E-mail address', 'email'],
  buyer_phone: ['Phone number', 'tel'],
}

function optional(form: FormBody, name: string): string | null {
  const value = form.fields.get(name)
  return value === undefined || value === '' ? null : value
}

/**
 * amount × rate to whole sen, rounded half up. BigInt on cents and a rate in millionths, so neither binary
 * fractions (0.1 + 0.2) nor nine-digit amounts lose a sen.
 */
export function convertToMyr(usd: string, rate: number): string {
  const cents = BigInt(usd.replace('.', ''))
  const sen = (cents * BigInt(Math.round(rate * 1_000_000)) + 500_000n) / 1_000_000n
  return `${sen / 100n}.${String(sen % 100n).padStart(2, '0')}`
}

export function sessionView(session: PaymentSession, baseUrl: string): Record<string, unknown> {
  return {
    payment_url: `${baseUrl}/apis/${session.slug}/payment_session`,
    data: {
      buyer_name: session.buyerName,
      buyer_email: session.buyerEmail,
      buyer_phone: session.buyerPhone,
      transaction_amount: session.transactionAmount,
      order_number: session.orderNumber,
      product_description: session.productDescription,
      slug: session.slug,
      callback_url: session.callbackUrl,
      redirect_url: session.redirectUrl,
      cancel_url: session.cancelUrl,
      timeout_url: session.timeoutUrl,
      currency: session.currency,
      currency_amount: session.currencyAmount,
      partner_uid: session.partnerUid,
      other_params: session.otherParams,
      created_at: mytIso(new Date(session.createdAt)),
      updated_at: mytIso(new Date(session.updatedAt)),
    },
  }
}

async function createSession(context: Context): Promise<Reply> {
  const principal = basicAuth(context)
  // Partners act for merchants with the merchants' own credentials plus partner_uid, as in payment creation.
  if (principal.kind !== 'merchant')
    throw new ApiError(403, 'partner_not_authorized', "use the merchant's API UID and Auth Token, with partner_uid to act as its partner")
  const form = await readForm(context.req)
  const strict = context.state.strict
  const notes: Notes = []
  const problems = check(form.fields, {}, OPTIONAL)
  const original = transactionAmount(form.fields.get('transaction_amount'), strict, problems, notes) as string
  const phone = buyerPhone(form.fields.get('buyer_phone'), strict, false, problems, notes)
  checkNested(form.nested, problems, strict, notes)
  for (const name of form.nested.keys()) if (name !== 'params') problems[name] = 'only params is taken by payment sessions'
  if (Object.keys(problems).length > 0) throw invalidParameters(problems)
  const partnerUid = partnerOf(context.state, principal.merchant, principal.credential, form.fields.get('partner_uid') ?? '', true, notes)
  const currency = optional(form, 'currency') === 'USD' ? 'USD' : 'MYR'
  const myr = currency === 'USD' ? convertToMyr(original, context.state.setup.usdToMyrRate ?? DEFAULT_USD_TO_MYR_RATE) : original
  if (myr === '0.00') throw invalidParameters({ transaction_amount: 'converts to 0.00 MYR' })
  const orderNumber = optional(form, 'order_number') ?? `PS${randomDigits(10)}`
  const params = form.nested.get('params')
  const now = context.state.now().toISOString()
  const session: PaymentSession = {
    slug: context.state.newSessionSlug(),
    merchantId: principal.merchant.id,
    credentialUid: principal.credential.uid,
    partnerUid,
    orderNumber,
    buyerName: optional(form, 'buyer_name'),
    buyerEmail: optional(form, 'buyer_email'),
    buyerPhone: phone === '' ? null : phone,
    transactionAmount: myr,
    currency,
    currencyAmount: original,
    productDescription: optional(form, 'product_description') ?? `Payment for order no. ${orderNumber}`,
    callbackUrl: optional(form, 'callback_url'),
    redirectUrl: optional(form, 'redirect_url'),
    cancelUrl: optional(form, 'cancel_url'),
    timeoutUrl: optional(form, 'timeout_url'),
    otherParams: params === undefined || params.size === 0 ? null : Object.fromEntries(params),
    createdAt: now,
    updatedAt: now,
    attempts: [],
  }
  context.state.addSession(session)
  context.state.warnings.add('request', 'POST /apis/payments', null, notes.map((note) => `${note} (payment session ${session.slug})`))
  return { json: sessionView(session, context.state.baseUrl) }
}

function findSession(context: Context): PaymentSession {
  const session = context.state.session(context.params.slug ?? '')
  if (session === undefined) throw notFound('no such payment session')
  return session
}

function paid(context: Context, session: PaymentSession): boolean {
  return session.attempts.some((exchangeNumber) => context.state.payment(exchangeNumber)?.paymentStatus === true)
}

function missingBuyerFields(session: PaymentSession): BuyerField[] {
  const given = { buyer_name: session.buyerName, buyer_email: session.buyerEmail, buyer_phone: session.buyerPhone }
  return BUYER_FIELDS.filter((name) => given[name] === null)
}

function sessionPage(context: Context, session: PaymentSession, problems: Record<string, string> = {}, entered: FormBody['fields'] = new Map()): string {
  const summary = `<h1>Pay RM ${escapeHtml(session.transactionAmount)}</h1>
<dl>
<dt>Order</dt><dd data-order-number>${escapeHtml(session.orderNumber)}</dd>
<dt>For</dt><dd>${escapeHtml(session.productDescription)}</dd>
${session.currency === 'MYR' ? '' : `<dt>Charged as</dt><dd>${escapeHtml(session.currency)} ${escapeHtml(session.currencyAmount)}</dd>`}
${session.buyerName === null ? '' : `<dt>Name</dt><dd>${escapeHtml(session.buyerName)}</dd>`}
${session.buyerEmail === null ? '' : `<dt>E-mail</dt><dd>${escapeHtml(session.buyerEmail)}</dd>`}
${session.buyerPhone === null ? '' : `<dt>Phone</dt><dd>${escapeHtml(session.buyerPhone)}</dd>`}
</dl>`
  if (paid(context, session)) return schemePage('Payment session', `<div class="card">\n${summary}\n<p role="status">This order is already paid.</p>\n</div>`)
  const inputs = missingBuyerFields(session)
    .map((name) => {
      const [label, type] = BUYER_LABELS[name]
      const problem = problems[name] === undefined ? '' : `<small class="problem" role="alert" id="${name}-error">${escapeHtml(label)} ${escapeHtml(problems[name])}</small>`
      return `<p><label for="${name}">${escapeHtml(label)}</label><input id="${name}" name="${name}" type="${type}" required value="${escapeHtml(entered.get(name) ?? '')}">${problem}</p>`
    })
    .join('\n')
  const action = `${context.state.baseUrl}/apis/${encodeURIComponent(session.slug)}/payment_session`
  return schemePage(
    'Payment session',
    `<div class="card">
${summary}
<form id="session" method="post" action="${escapeHtml(action)}">
${inputs}
<div class="actions"><button type="submit" class="btn btn-primary">Continue to bank selection</button></div>
</form>
</div>`,
  )
}

/** The buyer's submission: checks the fields the session lacked, then makes the payment and sends the buyer to the bank page. */
async function submitSession(context: Context): Promise<Reply> {
  const session = findSession(context)
  const form = await readForm(context.req)
  if (paid(context, session)) throw new ApiError(409, 'conflict', 'this payment session is already paid')
  const missing = missingBuyerFields(session)
  const rules = Object.fromEntries(missing.filter((name) => name !== 'buyer_phone').map((name) => [name, BUYER_RULES[name as keyof typeof BUYER_RULES]]))
  const problems = check(form.fields, rules, {})
  const notes: Notes = []
  // The buyer types the phone the way people do; only strict mode insists on +60... (the form asks for it).
  const phone = missing.includes('buyer_phone') ? buyerPhone(form.fields.get('buyer_phone'), context.state.strict, true, problems, notes) : session.buyerPhone
  if (Object.keys(problems).length > 0) return { status: 422, html: sessionPage(context, session, problems, form.fields) }
  const value = (name: keyof typeof BUYER_RULES, given: string | null) => given ?? (form.fields.get(name) as string)
  const record = context.state.addPayment({
    merchantId: session.merchantId,
    credentialUid: session.credentialUid,
    partnerUid: session.partnerUid,
    orderNumber: session.orderNumber,
    buyerName: value('buyer_name', session.buyerName),
    buyerEmail: value('buyer_email', session.buyerEmail),
    buyerPhone: phone ?? '',
    transactionAmount: session.transactionAmount,
    productDescription: session.productDescription,
    callbackUrl: session.callbackUrl,
    redirectUrl: session.redirectUrl,
    cancelUrl: session.cancelUrl,
    timeoutUrl: session.timeoutUrl,
    redirectPost: false,
    model: 'B2C',
    bankSelection: 'dropdown',
    buyerBankCode: null,
    params: session.otherParams,
    shippingAddress: null,
    billingAddress: null,
    clientIp: context.clientIp,
  })
  context.state.warnings.add('request', `POST /apis/${session.slug}/payment_session`, record.exchangeNumber, notes)
  session.attempts.push(record.exchangeNumber)
  session.updatedAt = context.state.now().toISOString()
  context.state.changed()
  const location = `${context.state.baseUrl}${bankPagePath(record.exchangeNumber)}`
  // 303: the browser follows with GET, so reloading the bank page never posts the form again.
  return { status: 303, html: schemePage('Continue', `<div class="card"><p><a href="${escapeHtml(location)}">Continue to bank selection</a></p></div>`), headers: { location, 'x-exchange-number': record.exchangeNumber } }
}

export const sessionRoutes: Route[] = [
  { method: 'POST', path: '/apis/payments', handler: createSession },
  { method: 'GET', path: '/apis/:slug/payment_session', handler: (context) => ({ html: sessionPage(context, findSession(context)) }) },
  { method: 'POST', path: '/apis/:slug/payment_session', handler: submitSession },
]
