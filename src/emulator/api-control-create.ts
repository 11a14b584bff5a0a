import { readParams } from '../core/request/field-rules.js'
import type { CredentialSet, Merchant } from './config.js'
import { type FieldErrors, invalidParameters } from './errors.js'
import type { Context } from './http.js'
import { randomDigits } from './ids.js'
import type { Model, PaymentRecord } from './state.js'
import { buyerPhone, type Notes, transactionAmount } from './tolerance.js'
import { check, rulesOf } from './validation.js'

/**
 * POST /__emulator/payments: a payment made for a tester, without a signed request, with the credentials of a
 * configured merchant. `fpx-collect trigger --emulator` uses it so that the result it has the emulator send is
 * one the emulator's status and search API know: a receiver that confirms results over the API handles it, where
 * a result made up and signed elsewhere is answered 503 `confirmation_pending`. The payment then lives as any
 * other: POST /__emulator/payments/:exchange_number/complete gives it the bank's answer and sends the callback.
 */
const DEFAULTS = {
  buyer_name: 'Nur Aisyah binti Ahmad',
  buyer_email: 'aisyah@example.com',
  buyer_phone: '+60123456789',
  transaction_amount: '100.20',
  product_description: 'Payment made through the emulator control API',
} as const

const TEXT_FIELDS = ['uid', 'order_number', 'callback_url', 'redirect_url', 'model', ...Object.keys(DEFAULTS)] as const
type TextField = (typeof TEXT_FIELDS)[number]

/** The same rules as POST /v1/payments (buyer_phone and transaction_amount by tolerance.ts, as there). */
const RULES = rulesOf('order_number', 'buyer_name', 'buyer_email', 'product_description', 'callback_url', 'redirect_url', 'model')

/** The merchant credential set named by `uid`, or the first set of the only merchant. */
function credentialOf(context: Context, uid: string | undefined, problems: FieldErrors): { merchant: Merchant; credential: CredentialSet } | undefined {
  const merchants = context.state.setup.merchants
  if (uid === undefined) {
    const [only] = merchants
    if (merchants.length === 1 && only !== undefined) return { merchant: only, credential: only.credentials[0] as CredentialSet }
    problems.uid = `${merchants.length} merchants are configured: name one by the API UID of one of its credential sets`
    return undefined
  }
  for (const merchant of merchants) {
    const credential = merchant.credentials.find((set) => set.uid === uid)
    if (credential !== undefined) return { merchant, credential }
  }
  problems.uid = 'no merchant credential set has this API UID'
  return undefined
}

/** The body's text fields; anything else (another name, a value that is not text) is a problem. */
function textFields(body: Record<string, unknown>, problems: FieldErrors): Map<string, string> {
  const fields = new Map<string, string>()
  for (const [name, value] of Object.entries(body)) {
    if (name === 'params') continue
    if (!(TEXT_FIELDS as readonly string[]).includes(name)) problems[name] = `unknown; expected ${[...TEXT_FIELDS, 'params'].join(', ')}`
    else if (typeof value !== 'string') problems[name] = 'must be text'
    else fields.set(name, value)
  }
  return fields
}

function paramsOf(value: unknown, strict: boolean, problems: FieldErrors, notes: Notes): Record<string, string> | null {
  if (value === undefined) return null
  const entries = typeof value === 'object' && value !== null && !Array.isArray(value) ? Object.entries(value) : undefined
  if (entries === undefined || entries.some(([, text]) => typeof text !== 'string')) {
    problems.params = 'must be an object of text values, such as { "reference1": "A-1" }'
    return null
  }
  const reading = readParams(entries as [string, string][], strict ? 'strict' : 'lenient')
  for (const [key, problem] of Object.entries(reading.problems)) problems[`params[${key}]`] = problem
  notes.push(...reading.notes)
  return entries.length === 0 ? null : Object.fromEntries(entries as [string, string][])
}

export function createControlPayment(context: Context, body: Record<string, unknown>): PaymentRecord {
  const state = context.state
  const problems: FieldErrors = {}
  const notes: Notes = []
  const fields = textFields(body, problems)
  const text = (name: TextField) => fields.get(name)
  const found = credentialOf(context, text('uid'), problems)
  Object.assign(problems, check(fields, {}, RULES))
  const phone = buyerPhone(text('buyer_phone') ?? DEFAULTS.buyer_phone, state.strict, true, problems, notes)
  const amount = transactionAmount(text('transaction_amount') ?? DEFAULTS.transaction_amount, state.strict, problems, notes)
  const params = paramsOf(body.params, state.strict, problems, notes)
  const model = (text('model') || 'B2C') as Model
  if (found !== undefined && model === 'B2B1' && !found.merchant.b2b1) problems.model = 'B2B1 needs the B2B1 module enabled for this merchant'
  if (found === undefined || amount === undefined || Object.keys(problems).length > 0) throw invalidParameters(problems)
  const url = (name: 'callback_url' | 'redirect_url') => text(name) || null
  const record = state.addPayment({
    merchantId: found.merchant.id,
    credentialUid: found.credential.uid,
    partnerUid: null,
    orderNumber: text('order_number') || `EMU-${randomDigits(10)}`,
    buyerName: text('buyer_name') || DEFAULTS.buyer_name,
    buyerEmail: text('buyer_email') || DEFAULTS.buyer_email,
    buyerPhone: phone,
    transactionAmount: amount,
    productDescription: text('product_description') || DEFAULTS.product_description,
    callbackUrl: url('callback_url'),
    redirectUrl: url('redirect_url'),
    cancelUrl: null,
    timeoutUrl: null,
    redirectPost: false,
    model,
    bankSelection: 'dropdown',
    buyerBankCode: null,
    params,
    shippingAddress: null,
    billingAddress: null,
    clientIp: context.clientIp,
  })
  state.warnings.add('request', 'POST /__emulator/payments', record.exchangeNumber, notes)
  return record
}
