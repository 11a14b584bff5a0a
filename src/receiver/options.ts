/*
 * What a receiver is made with and what it offers: the public types of createReceiver (receiver.ts).
 */
import type { RawDelivery } from '../core/result/body.js'
import type { FieldInput } from '../core/values.js'
import type { VerifiedPayment, VerifyOptions } from '../core/result/verify.js'
import type { ReceiverStore } from '../contract/store.js'
import type { TimelineEntry, TimelineQuery } from '../contract/timeline.js'
import type { InboxOptions, ReceiverInbox } from '../inbox/inbox.js'
import type { EnvironmentName } from '../client/config.js'
import type { ConfirmingClients } from './confirm.js'
import type { Delivery, ErrorHandler, PaymentEventName, PaymentHandler, ReceiverResponse } from './events.js'
import type { ExpectHook } from './expectations.js'
import type { ReceiverOperator } from './operator.js'
import type { ReceiverPayments } from './payments.js'
import type { RefusalSummary } from './refusals.js'
import type { SweepOptions } from './sweep-options.js'
import type { SweepReport } from './sweeper.js'
import type { TelemetryOptions } from './telemetry.js'

export type ReceiverOptions<TTransaction = undefined> = VerifyOptions & {
  /**
   * The service's environment (`{ baseUrl }` from the dashboard, or the emulator's): with `credentials` that carry
   * the Auth Token, every new payment state is confirmed over the authenticated API before any handler runs, and
   * handlers get the API's record. This is the way to build a receiver (docs/security.md).
   */
  environment?: EnvironmentName | { baseUrl: string }
  /**
   * The API client to confirm with instead (`createClient()` from fpx-collect/client), or a function that returns
   * the client of the credential set whose Checksum Token matched (partners). Confirms like `environment`.
   */
  client?: ConfirmingClients
  /**
   * Act on the checksum alone, without asking the API: say so with `true`. A buyer holding their own signed result
   * can rename its fields; this mode acts only on results whose payment, order, amount and state could stand under
   * no other name, and refuses the rest (400 `needs_confirmation`). Events carry `confirmed: false`. Warns once, at
   * creation. docs/security.md says exactly what it guarantees.
   */
  signatureOnly?: boolean
  store?: ReceiverStore<TTransaction>
  /**
   * How long a delivery may hold an exchange_number while its handlers run, and how long a concurrent
   * duplicate in the same process waits for it. Keep handlers well under it. Default 60 s.
   */
  leaseMs?: number
  /**
   * Inbox mode (PostgreSQL or Redis store): a verified result is written to the store's inbox and answered 200 at
   * once; the handlers run from the inbox with retries, backoff and a dead-letter state. See ReceiverInbox.
   */
  inbox?: InboxOptions
  /**
   * Fields a delivered result must carry beyond exchange_number, order_number and payment_status, or it is refused
   * (400 `invalid_fields`), e.g. `['transaction_amount']`. Default none: a genuine minimal result is never refused.
   */
  requireFields?: readonly string[]
  /**
   * Keep the per-order timeline in the store (when the store has one: memory, Redis and PostgreSQL do). Written
   * in the background, after the answer. Default true.
   */
  timeline?: boolean
  /**
   * OpenTelemetry spans and metrics. By default on when `@opentelemetry/api` is installed (imported when the
   * receiver is created), off otherwise; `false` turns them off, an object passes the API or providers in.
   */
  telemetry?: boolean | TelemetryOptions
  /**
   * What you asked for, by order_number (amount, and any field you keep): a result that disagrees (the API's
   * record, when confirming) is refused (400 `result_mismatch`) before any handler runs. Return nothing for an
   * order you do not know.
   */
  expect?: ExpectHook
  /**
   * Use the store's payment book (payments the client recorded at creation, docs/payment-lifecycle.md): a new
   * state of a recorded order is checked against it (amount, credential set) before the handlers run, and the
   * book is settled after them. Default true when the store has one (memory, Redis, PostgreSQL); `false` ignores it.
   */
  book?: boolean
  /**
   * The sweeper, which looks open payments up through the status API (needs `client` and a store with a payment
   * book). In-process by default; `false`, or `{ inProcess: false }`, leaves it to `receiver.sweep()` or
   * `fpx-collect sweep` on your own schedule. See SweepOptions for the horizons, backoff and rate bound.
   */
  sweep?: SweepOptions | false
}

export interface Receiver<TTransaction = undefined> {
  /** The handler's event is narrowed by `name`: on('payment.succeeded', e => ...) has `e.state` 'succeeded'. */
  on<TName extends PaymentEventName>(name: TName, handler: PaymentHandler<TTransaction, TName>): () => void
  /** A handler for every payment event, run after the event's own handlers. Returns a function that removes it. */
  onAny(handler: PaymentHandler<TTransaction>): () => void
  /**
   * Told (not awaited) when a handler threw, with an AggregateError holding the error and `event`. The delivery
   * still fails (500) and is handled again on redelivery. Returns a function that removes it.
   */
  onError(handler: ErrorHandler<TTransaction>): () => void
  /**
   * The timeline of one payment, oldest first: every delivery (received, verified or refused, then its outcome)
   * and every inbox attempt. By order_number (a string, or `{ orderNumber }`) or `{ exchangeNumber }`.
   * Rejects with a TypeError when the store keeps no timeline.
   */
  timeline(query: string | TimelineQuery): Promise<TimelineEntry[]>
  /**
   * Refused deliveries, which are never stored per payment (anyone can send them): counts per error code since the
   * receiver was made, and the latest 100 (when the store keeps a timeline), oldest first. In this process only.
   */
  refusals(): RefusalSummary
  /** Writes the timeline entries still queued. At shutdown, await it before closing the store's client. */
  flush(): Promise<void>
  /** Parse, verify, deduplicate, run the handlers, and say what to answer. Never throws. */
  handle(delivery: Delivery): Promise<ReceiverResponse>
  /**
   * A payment record read over the authenticated API (reconciliation), as JSON values or form text: checked,
   * classified, deduplicated and handled like a delivery, with no checksum. Never pass it anything a browser
   * or another server sent. Never throws.
   */
  handleTrusted(fields: Readonly<Record<string, FieldInput>>): Promise<ReceiverResponse>
  /** Parse and verify the checksum only: no store, no API, no handlers. Throws ReceiverError. */
  verify(delivery: RawDelivery): Promise<VerifiedPayment>
  /** Whether results are confirmed over the service's API before handlers run (false: `signatureOnly`). */
  readonly confirming: boolean
  /** The body limit, for adapters whose framework reads the body itself. */
  readonly maxBodyBytes: number
  /** How long a body may take to arrive (`bodyTimeoutMs`), for adapters whose framework reads the body itself. */
  readonly bodyTimeoutMs: number
  /**
   * Inbox mode's workers and operator API. With a Redis or PostgreSQL store and confirmation but no `inbox`, the
   * results kept until the API confirms them. Every method throws when the receiver has neither.
   */
  readonly inbox: ReceiverInbox
  /** The payment book: open payments, oldest first, and their counts. Methods reject when the store has no book. */
  readonly payments: ReceiverPayments
  /**
   * What an operator does to one payment (the console's actions): read the API's records of it, look it up now,
   * make its inbox entries due again; each change noted on the payment's timeline with who made it.
   */
  readonly operator: ReceiverOperator
  /**
   * One sweep now: looks up the open payments that are due (through `client`), hands what the API shows to the
   * handlers, and closes those past their horizon. Does nothing (`swept: false`) while another process sweeps.
   * Rejects with a TypeError when the receiver has no `client` or the store no payment book and sweep lock.
   */
  sweep(): Promise<SweepReport>
  /**
   * At shutdown: stops the in-process sweeper (giving its lock back) and the inbox's workers, and writes the timeline
   * still queued. Waits for a sweep pass under way a sweep lock's lease at most, and for inbox attempts under way a
   * lease at most (what it leaves is logged, and taken again later); a store that does not answer is not waited for.
   */
  close(): Promise<void>
}

/**
 * What adapters need of a receiver: the part that does not depend on the store's transaction type, so one
 * adapter serves receivers with any store.
 */
export type DeliveryHandler = Pick<Receiver<unknown>, 'handle' | 'maxBodyBytes'> & Partial<Pick<Receiver<unknown>, 'bodyTimeoutMs'>>
