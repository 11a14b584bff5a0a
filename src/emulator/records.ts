import type { FieldInput } from '../core/values.js'
import type { CredentialSet, Merchant } from './config.js'

export type Model = 'B2C' | 'B2B1'
export type PaymentStage = 'payment_pending' | 'payment_successful' | 'payment_unsuccessful'

/** What the bank reported, once the buyer finished the bank step. */
export interface BankResult {
  readonly debitAuthCode: string
  readonly statusMessage: string
  readonly fpxStatus: boolean
  readonly bankCode: string
  readonly bankName: string
  readonly fpxName: string
  readonly transactionId: string
  /** yyyymmddHHMMSS, Malaysian time. */
  readonly transactionTime: string
}

/** One payment attempt, as stored (and saved to the state file): plain JSON. */
export interface PaymentRecord {
  readonly paymentId: number
  readonly exchangeNumber: string
  readonly merchantReferenceNumber: string
  readonly merchantId: string
  /** The API UID of the credential set that created the payment. */
  readonly credentialUid: string
  readonly partnerUid: string | null
  readonly orderNumber: string
  readonly buyerName: string
  readonly buyerEmail: string
  readonly buyerPhone: string
  readonly transactionAmount: string
  readonly productDescription: string
  readonly callbackUrl: string | null
  readonly redirectUrl: string | null
  readonly cancelUrl: string | null
  readonly timeoutUrl: string | null
  readonly redirectPost: boolean
  readonly model: Model
  readonly bankSelection: 'dropdown' | 'grid'
  readonly buyerBankCode: string | null
  readonly params: Readonly<Record<string, string>> | null
  readonly shippingAddress: Readonly<Record<string, string>> | null
  readonly billingAddress: Readonly<Record<string, string>> | null
  readonly clientIp: string
  /** ISO 8601 instant (UTC); shown with the Malaysian offset. */
  readonly createdAt: string
  paymentStatus: boolean
  paymentStage: PaymentStage
  bank: BankResult | null
}

const MYT_OFFSET_MS = 8 * 3600 * 1000

/** ISO 8601 with the +08:00 offset of Malaysia, where the service runs. */
export function mytIso(date: Date): string {
  return `${new Date(date.getTime() + MYT_OFFSET_MS).toISOString().slice(0, 19)}+08:00`
}

/** The calendar date (yyyy-mm-dd) in Malaysia. */
export function mytDate(date: Date): string {
  return new Date(date.getTime() + MYT_OFFSET_MS).toISOString().slice(0, 10)
}

/** The Malaysian calendar day as a day number (whole days since 1970-01-01). */
export function mytDay(date: Date): number {
  return Math.floor((date.getTime() + MYT_OFFSET_MS) / 86_400_000)
}

/** yyyymmddHHMMSS in Malaysian time, the shape of fpx_transaction_time. */
export function fpxTime(date: Date): string {
  return new Date(date.getTime() + MYT_OFFSET_MS).toISOString().replace(/\D/g, '').slice(0, 14)
}

export interface RecordContext {
  readonly baseUrl: string
  readonly merchant: Merchant
  readonly credential: CredentialSet
}

function addressesOf(record: PaymentRecord, context: RecordContext) {
  const uid = encodeURIComponent(context.credential.uid)
  const failed = record.bank !== null && !record.paymentStatus && record.bank.debitAuthCode !== '99'
  return {
    status_url: `${context.baseUrl}/v1/status/${record.exchangeNumber}?uid=${uid}`,
    retry_url: failed ? `${context.baseUrl}/v1/retry/${record.merchantReferenceNumber}?uid=${uid}` : null,
    receipt_url: record.paymentStatus ? `${context.baseUrl}/v1/receipt/${record.exchangeNumber}.pdf?uid=${uid}` : null,
  }
}

/** The fields of the payment status endpoint (column S of the transaction record table). */
export function statusRecord(record: PaymentRecord, context: RecordContext): Record<string, unknown> {
  const created = new Date(record.createdAt)
  return {
    source: 'FPX',
    payment_status: record.paymentStatus,
    currency: 'MYR',
    transaction_amount: record.transactionAmount,
    transaction_amount_received: record.paymentStatus ? record.transactionAmount : '0.00',
    order_number: record.orderNumber,
    merchant_reference_number: record.merchantReferenceNumber,
    exchange_number: record.exchangeNumber,
    buyer_name: record.buyerName,
    buyer_phone: record.buyerPhone,
    buyer_email: record.buyerEmail,
    payment_id: record.paymentId,
    client_ip: record.clientIp,
    ...addressesOf(record, context),
    created_at: mytIso(created),
    created_at_unixtime: String(Math.floor(created.getTime() / 1000)),
    interface_name: context.credential.name,
    interface_uid: context.credential.uid,
  }
}

/** The fields of the transactions list and search (columns L and Q). */
export function listRecord(record: PaymentRecord, context: RecordContext): Record<string, unknown> {
  const bank = record.bank
  return {
    ...statusRecord(record, context),
    transaction_fee: context.merchant.transactionFee,
    fpx_model: record.model,
    payment_mode: context.merchant.paymentMode,
    payment_method: bank === null ? null : 'fpx_online_banking',
    payment_stage: record.paymentStage,
    fpx_status: bank?.fpxStatus ?? false,
    fpx_status_message: bank?.statusMessage ?? '',
    fpx_debit_auth_code: bank?.debitAuthCode ?? '',
    fpx_bank: bank?.bankName ?? '',
    fpx_name: bank?.fpxName ?? '',
    fpx_transaction_id: bank?.transactionId ?? '',
    fpx_transaction_time: bank?.transactionTime ?? '',
    merchant_name: context.merchant.name,
    merchant_co_number: context.merchant.coNumber,
    uid: context.credential.uid,
  }
}

/**
 * The fields of a redirect or callback (spec "Events"), unsigned, as form text: booleans as true/false and
 * nulls as empty text, which is how they are posted and signed.
 */
export function resultFieldsOf(record: PaymentRecord, context: RecordContext, includeToken: boolean): Record<string, FieldInput> {
  const listed = listRecord(record, context)
  const fields: Record<string, FieldInput> = {}
  const skip = new Set(['interface_name', 'interface_uid'])
  for (const [name, value] of Object.entries(listed)) {
    if (skip.has(name)) continue
    fields[name] = value === null ? '' : String(value)
  }
  fields.amount = record.transactionAmount
  if (record.params !== null && Object.keys(record.params).length > 0) fields.params = { ...record.params }
  if (includeToken) fields.token = context.credential.authToken
  return fields
}

/** A payment session (beta): what POST /apis/payments was given, until the buyer completes the hosted form. */
export interface PaymentSession {
  readonly slug: string
  readonly merchantId: string
  readonly credentialUid: string
  readonly partnerUid: string | null
  readonly orderNumber: string
  readonly buyerName: string | null
  readonly buyerEmail: string | null
  readonly buyerPhone: string | null
  /** In MYR, converted when the session was created in another currency. */
  readonly transactionAmount: string
  readonly currency: 'MYR' | 'USD'
  /** As supplied, in `currency`. */
  readonly currencyAmount: string
  readonly productDescription: string
  readonly callbackUrl: string | null
  readonly redirectUrl: string | null
  readonly cancelUrl: string | null
  readonly timeoutUrl: string | null
  readonly otherParams: Readonly<Record<string, string>> | null
  readonly createdAt: string
  updatedAt: string
  /** exchange_numbers of the payments made from this session, oldest first. */
  attempts: string[]
}
