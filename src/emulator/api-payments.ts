import { timingSafeEqual } from 'node:crypto'
import { requestChecksum } from '../core/request/request-checksum.js'
import type { CredentialSet, Merchant } from './config.js'
import { ApiError, type FieldErrors, invalidParameters } from './errors.js'
import { type Context, type FormBody, type Reply, type Route, readForm } from './http.js'
import { bankPagePath, paymentCreatedPage } from './pages.js'
import type { Model, NewPayment } from './state.js'
import { buyerPhone, type Notes, partnerOf, requireUidWithPartner, transactionAmount } from './tolerance.js'
import { check, checkNested, rulesOf } from './validation.js'

/** buyer_phone and transaction_amount are read by tolerance.ts, strictly or as the real service takes them. */
const REQUIRED = {
  ...rulesOf('order_number', 'buyer_name', 'buyer_email', 'product_description'),
  checksum: (value: string) => (/^[0-9a-fA-F]{64}$/.test(value) ? undefined : 'must be 64 hexadecimal characters'),
}

const OPTIONAL = rulesOf(
  'uid',
  'partner_uid',
  'callback_url',
  'redirect_url',
  'cancel_url',
  'timeout_url',
  'redirect_post',
  'model',
  'fpx_bank_selection',
  'buyer_bank_code',
)

function invalidToken(message: string): ApiError {
  return new ApiError(401, 'invalid_token', message)
}

function sameHex(a: string, b: string): boolean {
  const left = Buffer.from(a.toLowerCase())
  const right = Buffer.from(b.toLowerCase())
  return left.length === right.length && timingSafeEqual(left, right)
}

/**
 * Which merchant pays, by the Auth Token in `token`. The merchant variant may also send `uid` (the shop
 * examples do); it must then be the token's own API UID. Strict mode wants `uid` with `partner_uid`;
 * otherwise partner_uid without uid, or equal to the merchant's own uid, is taken (tolerance.ts).
 */
function identify(context: Context, form: FormBody, notes: Notes): { merchant: Merchant; credential: CredentialSet; partnerUid: string | null } {
  const token = form.fields.get('token') ?? ''
  const found = token === '' ? undefined : context.state.merchantByAuthToken(token)
  if (found === undefined) throw invalidToken(token === '' ? 'the token field (Auth Token) is required' : 'the token is invalid or expired')
  const uid = form.fields.get('uid') ?? ''
  const partnerUid = form.fields.get('partner_uid') ?? ''
  requireUidWithPartner(context.state.strict, uid, partnerUid)
  if (uid !== '' && uid !== found.credential.uid) throw invalidToken('uid and token belong to different credential sets')
  return { ...found, partnerUid: partnerOf(context.state, found.merchant, found.credential, partnerUid, uid !== '', notes) }
}

function optional(form: FormBody, name: string): string | null {
  const value = form.fields.get(name)
  return value === undefined || value === '' ? null : value
}

function nested(form: FormBody, name: string): Record<string, string> | null {
  const values = form.nested.get(name)
  return values === undefined || values.size === 0 ? null : Object.fromEntries(values)
}

function checkBank(context: Context, merchant: Merchant, model: Model, bankCode: string | null, problems: FieldErrors): void {
  if (model === 'B2B1' && !merchant.b2b1) problems.model = 'B2B1 needs the B2B1 module enabled in the API settings'
  if (bankCode === null) return
  const bank = context.state.banks(model).find((candidate) => candidate.code === bankCode)
  if (bank === undefined) problems.buyer_bank_code = `not a bank of the ${model} list`
  else if (bank.status !== 'online') problems.buyer_bank_code = 'the bank is offline'
}

async function createPayment(context: Context): Promise<Reply> {
  const form = await readForm(context.req)
  const strict = context.state.strict
  const notes: Notes = []
  const { merchant, credential, partnerUid } = identify(context, form, notes)
  const problems = check(form.fields, REQUIRED, OPTIONAL)
  const buyerPhoneText = buyerPhone(form.fields.get('buyer_phone'), strict, true, problems, notes)
  const amountText = transactionAmount(form.fields.get('transaction_amount'), strict, problems, notes)
  checkNested(form.nested, problems, strict, notes)
  if (Object.keys(problems).length > 0) throw invalidParameters(problems)
  const text = (name: keyof typeof REQUIRED) => form.fields.get(name) as string
  // Signed as sent: a shop that sends 200 signs 200, even though the payment is recorded as 200.00.
  const signed = {
    buyer_email: text('buyer_email'),
    buyer_name: text('buyer_name'),
    buyer_phone: buyerPhoneText,
    callback_url: optional(form, 'callback_url'),
    order_number: text('order_number'),
    product_description: text('product_description'),
    redirect_url: optional(form, 'redirect_url'),
    transaction_amount: form.fields.get('transaction_amount') as string,
    uid: credential.uid,
  }
  if (!sameHex(requestChecksum(signed, credential.checksumToken), text('checksum')))
    throw new ApiError(401, 'checksum_mismatch', 'the checksum does not match the signed fields (spec, Authentication 5)')
  const model = (optional(form, 'model') ?? 'B2C') as Model
  const bankCode = optional(form, 'buyer_bank_code')
  checkBank(context, merchant, model, bankCode, problems)
  if (Object.keys(problems).length > 0) throw invalidParameters(problems)
  const input: NewPayment = {
    merchantId: merchant.id,
    credentialUid: credential.uid,
    partnerUid,
    orderNumber: signed.order_number,
    buyerName: signed.buyer_name,
    buyerEmail: signed.buyer_email,
    buyerPhone: signed.buyer_phone,
    transactionAmount: amountText as string,
    productDescription: signed.product_description,
    callbackUrl: signed.callback_url,
    redirectUrl: signed.redirect_url,
    cancelUrl: optional(form, 'cancel_url'),
    timeoutUrl: optional(form, 'timeout_url'),
    redirectPost: form.fields.get('redirect_post') === 'true',
    model,
    bankSelection: optional(form, 'fpx_bank_selection') === 'grid' ? 'grid' : 'dropdown',
    buyerBankCode: bankCode,
    params: nested(form, 'params'),
    shippingAddress: nested(form, 'shipping_address'),
    billingAddress: nested(form, 'billing_address'),
    clientIp: context.clientIp,
  }
  const record = context.state.addPayment(input)
  context.state.warnings.add('request', 'POST /v1/payments', record.exchangeNumber, notes)
  const bankPageUrl = `${context.state.baseUrl}${bankPagePath(record.exchangeNumber)}`
  return { status: 200, html: paymentCreatedPage(record, context.state.contextOf(record).merchant.name, bankPageUrl), headers: { 'x-exchange-number': record.exchangeNumber } }
}

export const paymentRoutes: Route[] = [
  { method: 'POST', path: '/v1/payments', handler: createPayment },
]
