/*
 * What the receiver hands out: its answers (ReceiverResponse) and the events its handlers get, as classes whose
 * payment and fields are built only when read.
 */
import { ReceiverError } from '../core/result/errors.js'
import type { MatchedCredential } from '../core/result/credentials.js'
import type { Rendering } from '../core/result/message.js'
import type { Payment, PaymentState } from '../core/payment.js'
import type { VerifiedPayment } from '../core/result/verify.js'
import type { BookedPayment } from '../contract/payment-book.js'
import type { Outcome, PaymentEvent, PaymentEventName, PaymentEventOf, ReceiverResponse, ResultSource } from './events.js'

/**
 * A receiver's answer. A class with the payment behind a prototype getter, so every answer has the same hidden
 * class and the typed payment is built only if someone reads it: most answers go out without anyone looking.
 */
/*
 * The verified result sits under a module Symbol, not a #private field: a copy that keeps the prototype
 * (lodash's cloneDeep, Object.assign onto Object.create) must still read `payment`, not throw.
 */
const VERIFIED = Symbol('verified')

export class Answer implements ReceiverResponse {
  // `declare`: no own `error: undefined` on successful answers ('error' in response stays false for them).
  declare error?: ReceiverResponse['error']
  readonly [VERIFIED]: VerifiedPayment | undefined

  constructor(
    public status: number,
    public headers: Record<string, string>,
    public body: string,
    public outcome: Outcome,
    verified: VerifiedPayment | undefined,
  ) {
    this[VERIFIED] = verified
  }

  get payment(): Payment | undefined {
    return this[VERIFIED]?.payment
  }

  /** JSON.stringify(response) shows the payment, as it did when it was an own property. */
  toJSON(): ReceiverResponse {
    const { status, headers, body, outcome, error, payment } = this
    return { status, headers, body, outcome, ...(payment === undefined ? {} : { payment }), ...(error === undefined ? {} : { error }) }
  }
}

export function acknowledged(outcome: Outcome, verified: VerifiedPayment): ReceiverResponse {
  return new Answer(200, { 'content-type': 'text/plain; charset=utf-8' }, 'OK', outcome, verified)
}

export function refused(error: ReceiverError, outcome: Outcome, verified?: VerifiedPayment): ReceiverResponse {
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' }
  // The rest of a late body may still be trickling in: closing the connection ends it.
  if (error.code === 'body_timeout') headers.connection = 'close'
  // The sender gets the code and message only: a diagnosis is for the merchant (logs, timeline, this object).
  const body = JSON.stringify({ error: { code: error.code, message: error.message } })
  const response = new Answer(error.status, headers, body, outcome, verified)
  const { diagnosis } = error
  response.error = diagnosis === undefined ? { code: error.code, message: error.message } : { code: error.code, message: error.message, diagnosis }
  return response
}

/** A refused checksum's diagnosis in a log line's details: its verdict and what matched, not the whole table. */
export function diagnosisDetails(error: ReceiverError): { diagnosis?: { verdict: string; kind?: string; field?: string; hmacs: number } } {
  const { diagnosis } = error
  if (diagnosis === undefined) return {}
  const { verdict, match, hmacs } = diagnosis
  return { diagnosis: { verdict, hmacs, ...(match === undefined ? {} : { kind: match.kind }), ...(match?.field === undefined ? {} : { field: match.field }) } }
}

/** The event handlers get: one class, the payment and fields behind prototype getters, built on first read. */
class AnyHandlerEvent<TTransaction> implements PaymentEventOf<TTransaction, PaymentEventName> {
  readonly id: string
  readonly state: PaymentState
  readonly rendering: Rendering
  readonly credential: MatchedCredential | undefined
  readonly [VERIFIED]: VerifiedPayment

  constructor(
    verified: VerifiedPayment,
    readonly name: PaymentEventName,
    readonly previousState: PaymentState | null,
    readonly delivery: ResultSource,
    readonly transaction: TTransaction | undefined,
    readonly booked: BookedPayment | undefined,
  ) {
    this[VERIFIED] = verified
    this.state = verified.state
    this.id = `${verified.exchangeNumber}:${verified.state}`
    this.rendering = verified.rendering
    this.credential = verified.credential
  }

  get payment(): Payment {
    return this[VERIFIED]?.payment as Payment
  }

  get fields(): Readonly<Record<string, unknown>> {
    return this[VERIFIED]?.fields as Readonly<Record<string, unknown>>
  }

  get unsignedQuery(): Readonly<Record<string, string>> {
    return this[VERIFIED]?.unsignedQuery as Readonly<Record<string, string>>
  }

  /** JSON.stringify(event) shows the payment and fields, as it did when they were own properties. */
  toJSON(): Record<string, unknown> {
    const { id, name, state, previousState, delivery, payment, fields, rendering, unsignedQuery, credential, transaction, booked } = this
    return { id, name, state, previousState, delivery, payment, fields, rendering, unsignedQuery, credential, transaction, booked }
  }
}

/**
 * The class as the receiver constructs it: its `name` and `state` always agree (both come from the verified
 * state), which the union PaymentEvent says and the class's own fields cannot.
 */
export const HandlerEvent = AnyHandlerEvent as new <TTransaction>(
  verified: VerifiedPayment,
  name: PaymentEventName,
  previousState: PaymentState | null,
  delivery: ResultSource,
  transaction: TTransaction | undefined,
  booked: BookedPayment | undefined,
) => PaymentEvent<TTransaction>

// The lease's remaining time can be a minute; the holder is usually done long before, so ask again sooner.
const MAX_RETRY_AFTER_S = 5

export function busy(retryAfterMs: number, verified: VerifiedPayment): ReceiverResponse {
  const error = new ReceiverError('in_progress', 'another delivery of this payment is being handled; retry later')
  const response = refused(error, 'busy', verified)
  response.headers['retry-after'] = String(Math.min(MAX_RETRY_AFTER_S, Math.max(1, Math.ceil(retryAfterMs / 1000))))
  return response
}
