/** What handlers and callers of the receiver see: deliveries, events and answers (types only). */
import type { RawDelivery } from '../core/result/body.js'
import type { MatchedCredential } from '../core/result/credentials.js'
import type { Diagnosis } from '../core/result/diagnosis.js'
import type { ReceiverErrorCode } from '../core/result/errors.js'
import type { Rendering } from '../core/result/message.js'
import type { Payment, PaymentState } from '../core/payment.js'
import type { DeliveryKind, Outcome, ResultSource } from '../contract/delivery-result.js'
import type { BookedPayment } from '../contract/payment-book.js'
import type { HandlerError } from './hooks.js'

export type { DeliveryKind, Outcome, ResultSource } from '../contract/delivery-result.js'

export interface Delivery extends RawDelivery {
  /** Server-to-server callback, or the buyer's browser coming back through redirect_url. */
  kind: DeliveryKind
}

export type PaymentEventName = 'payment.succeeded' | 'payment.failed' | 'payment.pending'

/** The state each event is named after: `payment.succeeded` carries `succeeded`, and so on. */
export interface PaymentEventStates {
  'payment.succeeded': 'succeeded'
  'payment.failed': 'failed'
  'payment.pending': 'pending'
}

/**
 * The event of one name, its `name`, `state` and `payment.state` narrowed to it. `PaymentEvent` is the union of
 * the three, so `event.name === 'payment.succeeded'` narrows an onAny handler's event too.
 */
export interface PaymentEventOf<TTransaction, TName extends PaymentEventName> {
  /** `exchange_number:state`: the deduplication key, stable across redeliveries. */
  readonly id: string
  /**
   * True when the payment was confirmed over the service's authenticated API (the default, and every result from
   * reconciliation and the sweeper): `payment` and `fields` are then the API's record. False only for a receiver
   * made with `signatureOnly: true`, whose events carry the delivered names (docs/security.md).
   */
  readonly confirmed: boolean
  readonly name: TName
  readonly state: PaymentEventStates[TName]
  /** The state handled before this one for the same exchange_number (pending before a B2B1 success), or null. */
  readonly previousState: PaymentState | null
  readonly delivery: ResultSource
  readonly payment: Payment & { readonly state: PaymentEventStates[TName] }
  /** All fields, prototype-free: the API's record when `confirmed`, else as received. */
  readonly fields: Readonly<Record<string, unknown>>
  readonly rendering: Rendering
  /**
   * The callback or redirect URL's own query parameters (`?shop=42`): not signed, never in `fields`. Empty when
   * there are none, and for results read over the API.
   */
  readonly unsignedQuery: Readonly<Record<string, string>>
  /** With `credentials`: which configured set's Checksum Token matched, and how it was chosen; else undefined. */
  readonly credential: MatchedCredential | undefined
  /**
   * With a transactional store: the database client inside the open transaction that holds the claim. Writes
   * made through it commit together with the completion when the handlers return, and roll back when one throws.
   */
  readonly transaction: TTransaction | undefined
  /**
   * The payment as the merchant's client created it (amount, credential set, what you attached), when the store's
   * payment book has it; the result was checked against it before the handlers ran. Undefined for payments
   * created elsewhere.
   */
  readonly booked: BookedPayment | undefined
}

/** A payment event: by default any of the three (a union discriminated by `name`), or the one named. */
export type PaymentEvent<TTransaction = undefined, TName extends PaymentEventName = PaymentEventName> = TName extends PaymentEventName
  ? PaymentEventOf<TTransaction, TName>
  : never

/*
 * Written as a method, so that its parameter is compared both ways: a handler for one event is then accepted
 * where handlers of every event are kept (the receiver's own lists), while on('payment.failed', handler) still
 * refuses a handler typed for payment.succeeded (neither event is the other).
 */
export type PaymentHandler<TTransaction = undefined, TName extends PaymentEventName = PaymentEventName> = {
  handle(event: PaymentEvent<TTransaction, TName>): void | Promise<void>
}['handle']

/** What onError handlers receive: the handler's error in `errors` (and as `cause`), and the event it failed on. */
export type PaymentHandlerError<TTransaction = undefined> = HandlerError<PaymentEvent<TTransaction>>

export type ErrorHandler<TTransaction = undefined> = (error: PaymentHandlerError<TTransaction>) => void | Promise<void>

export interface ReceiverResponse {
  status: number
  headers: Record<string, string>
  body: string
  outcome: Outcome
  /** The verified payment, whenever the checksum matched. */
  payment?: Payment
  /**
   * Why it was refused or failed. `diagnosis`: for a refused checksum, what would have made it verify (see
   * ReceiverError.diagnosis); never in `body`, which is all the sender gets.
   */
  error?: { code: ReceiverErrorCode; message: string; diagnosis?: Diagnosis }
}
