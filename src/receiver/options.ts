/*
 * What a receiver is made with and what it offers: the public types of createReceiver (receiver.ts).
 */
import type { RawDelivery } from '../core/result/body.js'
import type { FieldInput } from '../core/values.js'
import type { VerifiedPayment, VerifyOptions } from '../core/result/verify.js'
import type { ReceiverStore } from '../contract/store.js'
import type { TimelineEntry, TimelineQuery } from '../contract/timeline.js'
import type { InboxOptions, ReceiverInbox } from '../inbox/inbox.js'
import type { ConfirmingClients } from './confirmation.js'
import type { Delivery, ErrorHandler, PaymentEventName, PaymentHandler, ReceiverResponse } from './events.js'
import type { ExpectHook } from './expectations.js'
import type { ReceiverPayments } from './payments.js'
import type { RefusalSummary } from './refusals.js'
import type { SweepOptions } from './sweep-options.js'
import type { SweepReport } from './sweeper.js'
import type { TelemetryOptions } from './telemetry.js'

export type ReceiverOptions<TTransaction = undefined> = VerifyOptions & {
  store?: ReceiverStore<TTransaction>
  /**
   * How long a delivery may hold an exchange_number while its handlers run, and how long a concurrent
   * duplicate in the same process waits for it. Keep handlers well under it. Default 60 s.
   */
  leaseMs?: number
  /**
   * How long a delivery keeps asking when another process holds the payment, before it answers 409. The holder
   * usually finishes within milliseconds, and a 409 sends the buyer's browser an error page. Default 2000 ms.
   */
  busyWaitMs?: number
  /**
   * Inbox mode (PostgreSQL or Redis store): a verified result is written to the store's inbox and answered 200 at
   * once; the handlers run from the inbox with retries, backoff and a dead-letter state. See ReceiverInbox.
   */
  inbox?: InboxOptions
  /**
   * Fields a verified result must carry beyond exchange_number, order_number and payment_status, or it is refused
   * (400 `invalid_fields`), e.g. `['transaction_amount']`. The service's checksum signs the values in name order,
   * not the names, so a result without an amount deserves a status check before fulfilment (README, "What a
   * result must carry"). Default none: a genuine minimal result is never refused.
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
   * What you asked for, by order_number (amount, and any field you keep): a result that disagrees is refused
   * (400 `result_mismatch`) before any handler runs. Stops a genuine result replayed under another order's
   * number (docs/security.md). Return nothing for an order you do not know.
   */
  expect?: ExpectHook
  /**
   * The API client (`createClient()` from fpx-collect/client). With it, every new payment state is confirmed
   * through the authenticated API before its handlers run, and they get the API's record: a result the API does
   * not know yet is answered 503 so the service retries. On whenever `client` is given; `confirm: false` turns
   * it off. Results from `handleTrusted` (reconciliation) came from the API and are not asked about again.
   * Partners with several merchants' credential sets pass a function that returns the client of the set whose
   * Checksum Token matched (`credential.uid`); one merchant's sets all see its payments, so one client serves.
   */
  client?: ConfirmingClients
  confirm?: boolean
  /**
   * A result with neither status_url nor receipt_url naming its exchange_number, and fields sorting before or
   * between exchange_number, order_number and payment_status, cannot be told from a genuine result whose names were
   * rearranged (docs/security.md): without
   * `client` it is refused (400 `inconsistent_result`). The service's results carry status_url, so only results
   * built by hand have this shape; `'accept'` takes them as before, for tests of such shapes.
   */
  unpinnedResults?: 'refuse' | 'accept'
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
  /** Parse and verify only: no store, no handlers. Throws ReceiverError. */
  verify(delivery: RawDelivery): Promise<VerifiedPayment>
  /** The body limit, for adapters whose framework reads the body itself. */
  readonly maxBodyBytes: number
  /** How long a body may take to arrive (`bodyTimeoutMs`), for adapters whose framework reads the body itself. */
  readonly bodyTimeoutMs: number
  /** Inbox mode's workers and operator API; every method throws when the receiver was made without `inbox`. */
  readonly inbox: ReceiverInbox
  /** The payment book: open payments, oldest first, and their counts. Methods reject when the store has no book. */
  readonly payments: ReceiverPayments
  /**
   * One sweep now: looks up the open payments that are due (through `client`), hands what the API shows to the
   * handlers, and closes those past their horizon. Does nothing (`swept: false`) while another process sweeps.
   * Rejects with a TypeError when the receiver has no `client` or the store no payment book and sweep lock.
   */
  sweep(): Promise<SweepReport>
  /** At shutdown: stops the in-process sweeper (giving its lock back) and writes the timeline still queued. */
  close(): Promise<void>
}

/**
 * What adapters need of a receiver: the part that does not depend on the store's transaction type, so one
 * adapter serves receivers with any store.
 */
export type DeliveryHandler = Pick<Receiver<unknown>, 'handle' | 'maxBodyBytes'> & Partial<Pick<Receiver<unknown>, 'bodyTimeoutMs'>>
