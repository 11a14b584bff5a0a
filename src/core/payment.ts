import type { FieldValue } from './values.js'
import { toPlain } from './values.js'

/** Where a payment stands. `pending` is a B2B1 payment awaiting corporate approval (fpx_debit_auth_code 99). */
export type PaymentState = 'pending' | 'succeeded' | 'failed'

/**
 * Success outranks failure outranks pending: the order a payment's states move in, never back. With the type above
 * (the compiler holds the two equal), the one place the states are written: everything below, and the stores' Lua
 * and SQL forms, derive from it. Ranks count up from 0 without a gap, so a state's rank is its index in PAYMENT_STATES.
 */
export const STATE_RANK: Readonly<Record<PaymentState, number>> = { pending: 0, failed: 1, succeeded: 2 }

/** Every state, by rank: a state's index is its rank. */
export const PAYMENT_STATES: readonly PaymentState[] = (Object.keys(STATE_RANK) as PaymentState[]).sort((a, b) => STATE_RANK[a] - STATE_RANK[b])

/** A state's bit where stores keep the states handled as one number: its rank's, so the highest bit set is the latest. */
export const STATE_BIT: Readonly<Record<PaymentState, number>> = Object.fromEntries(
  PAYMENT_STATES.map((state) => [state, 1 << STATE_RANK[state]]),
) as Record<PaymentState, number>

/** The state a payment stands at, given its handled states as STATE_BIT bits; null when none. */
export function currentOfBits(handled: number): PaymentState | null {
  return handled === 0 ? null : (PAYMENT_STATES[31 - Math.clz32(handled)] as PaymentState)
}

export const PENDING_APPROVAL_CODE = '99'

/** pending when the bank reports 99; otherwise payment_status decides. */
export function classify(paymentStatus: string, debitAuthCode: string | undefined): PaymentState {
  if (debitAuthCode === PENDING_APPROVAL_CODE) return 'pending'
  return paymentStatus === 'true' ? 'succeeded' : 'failed'
}

/** A typed view of a verified payment result. The untouched text stays in `fields`. */
export interface Payment {
  readonly state: PaymentState
  readonly exchangeNumber: string
  readonly orderNumber: string
  readonly merchantReferenceNumber: string | null
  /** payment_status as sent. */
  readonly paid: boolean
  /**
   * transaction_amount in sen (1/100 ringgit), exact; undefined when the message does not carry it (or carries
   * it empty), as some real redirects do. Compare it with the order before fulfilling when it is there.
   */
  readonly amountSen: number | undefined
  readonly amountReceivedSen: number | null
  readonly feeSen: number | null
  readonly currency: string | null
  readonly source: string | null
  readonly model: string | null
  readonly debitAuthCode: string | null
  /** Why a payment failed: the bank's code (for example 1C, buyer cancelled); null unless failed. */
  readonly failureCode: string | null
  readonly failureMessage: string | null
  readonly paymentId: number | null
  readonly paymentMode: string | null
  readonly paymentMethod: string | null
  readonly buyer: { readonly name: string | null; readonly email: string | null; readonly phone: string | null }
  readonly fpx: {
    readonly bank: string | null
    readonly name: string | null
    readonly transactionId: string | null
    readonly status: boolean | null
    readonly statusMessage: string | null
    /** yyyymmddHHMMSS as the bank reports it (its time zone is not stated). */
    readonly transactionTime: string | null
  }
  readonly statusUrl: string | null
  readonly retryUrl: string | null
  readonly receiptUrl: string | null
  readonly createdAt: Date | null
  /** The uid the message signed: usually your API UID, but real messages may carry another id (see `credential`). */
  readonly uid: string | null
  /** The `params` object sent with the payment request, if the result carries it. */
  readonly params: Readonly<Record<string, unknown>> | null
}

/** "100.2" → 10020. The text was validated as a decimal with at most two fraction digits. */
export function toSen(amount: string): number {
  const [whole = '0', fraction = ''] = amount.split('.')
  return Number(whole) * 100 + Number(fraction.padEnd(2, '0'))
}

function createdAt(iso: string | null, unix: string | null): Date | null {
  const fromIso = iso ? new Date(iso) : null
  if (fromIso !== null && !Number.isNaN(fromIso.getTime())) return fromIso
  return unix ? new Date(Number(unix) * 1000) : null
}

export function toPayment(
  state: PaymentState,
  text: (name: string) => string | undefined,
  get: (name: string) => FieldValue | undefined,
): Payment {
  const optional = (name: string): string | null => {
    const value = text(name)
    return value === undefined || value === '' ? null : value
  }
  const amountOrNull = (name: string): number | null => {
    const value = optional(name)
    return value === null ? null : toSen(value)
  }
  const debitAuthCode = optional('fpx_debit_auth_code')
  const fpxStatus = optional('fpx_status')
  const paymentId = optional('payment_id')
  const params = get('params')
  return {
    state,
    exchangeNumber: text('exchange_number') as string,
    orderNumber: text('order_number') as string,
    merchantReferenceNumber: optional('merchant_reference_number'),
    paid: text('payment_status') === 'true',
    amountSen: amountOrNull('transaction_amount') ?? undefined,
    amountReceivedSen: amountOrNull('transaction_amount_received'),
    feeSen: amountOrNull('transaction_fee'),
    currency: optional('currency'),
    source: optional('source'),
    model: optional('fpx_model'),
    debitAuthCode,
    failureCode: state === 'failed' ? debitAuthCode : null,
    failureMessage: state === 'failed' ? optional('fpx_status_message') : null,
    paymentId: paymentId === null ? null : Number(paymentId),
    paymentMode: optional('payment_mode'),
    paymentMethod: optional('payment_method'),
    buyer: { name: optional('buyer_name'), email: optional('buyer_email'), phone: optional('buyer_phone') },
    fpx: {
      bank: optional('fpx_bank'),
      name: optional('fpx_name'),
      transactionId: optional('fpx_transaction_id'),
      status: fpxStatus === null ? null : fpxStatus === 'true',
      statusMessage: optional('fpx_status_message'),
      transactionTime: optional('fpx_transaction_time'),
    },
    statusUrl: optional('status_url'),
    retryUrl: optional('retry_url'),
    receiptUrl: optional('receipt_url'),
    createdAt: createdAt(optional('created_at'), optional('created_at_unixtime')),
    uid: optional('uid'),
    params: params instanceof Map ? (toPlain(params) as Record<string, unknown>) : null,
  }
}

/*
 * A payment record read over the authenticated API (status, list, search) as the receiver takes it. Shared by
 * reconciliation, the sweeper and the receiver's confirmation of a delivery, so all read a record the same way.
 */

/** A record as the form text a callback carries: booleans as true/false, null as empty, nested values left out. */
export function apiRecordText(record: Readonly<Record<string, unknown>>): Record<string, string> {
  const fields: Record<string, string> = {}
  for (const [name, value] of Object.entries(record)) {
    if (value === undefined || typeof value === 'object') {
      if (value === null) fields[name] = ''
      continue
    }
    fields[name] = String(value)
  }
  return fields
}

/** A record with a bank answer (success, failure, or B2B1 pending approval); a payment still waiting has none. */
export function hasBankAnswer(record: Readonly<Record<string, unknown>>): boolean {
  const code = record.fpx_debit_auth_code
  return record.payment_status === true || (typeof code === 'string' && code !== '') || record.payment_stage === 'payment_unsuccessful'
}
