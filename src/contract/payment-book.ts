import type { PaymentState } from '../core/payment.js'

/**
 * The payment book: payments known from the moment the merchant created them, so that a result can be checked
 * against what was asked and a payment nothing was heard of is looked up instead of forgotten. Optional for a
 * store (`ReceiverStore.paymentBook`); without it, results are handled exactly as before and nothing is swept.
 *
 * Keyed by the credential set's API UID and order_number, the merchant's own reference: it is known before the
 * service assigns an exchange_number (a payment form is built before the buyer reaches the service) and the status
 * search takes it. order_number is unique per merchant only (spec: "Merchant-generated unique"), so two merchants
 * of one receiver (a partner's, several credential sets) may each record the same one.
 */

/** Which booked payment: the credential set it was created with, and its order_number. */
export interface PaymentRef {
  readonly uid: string
  readonly orderNumber: string
}

export interface FindOptions {
  /**
   * The API UID of the credential set the payment was created with. Without it: the payment of that order_number
   * created most recently, whichever credential set made it (the only one, for a single merchant).
   */
  readonly uid?: string
}

/** How the payment was started: a signed form the buyer posts, the API, or a payment session. */
export type CreationKind = 'form' | 'payment' | 'session'

/**
 * How the book came to know a payment: created by the merchant's client (CreationKind), or `result`: first known
 * from a verified result of an order the client did not record (triggered, created elsewhere, another system's).
 */
export type SeenKind = CreationKind | 'result'

/** What the merchant attached to a payment at creation: kept as given, returned by find and list. */
export type AttachedData = Readonly<Record<string, string | number | boolean | null>>

/** A payment as it was asked for. Recording it costs one store write. */
export interface CreatedPayment {
  readonly orderNumber: string
  /** The amount asked, in sen (integer), as the request's transaction_amount. */
  readonly amountSen: number
  /** The API UID of the credential set the payment was created with. */
  readonly uid: string
  readonly kind: CreationKind
  readonly createdAt: Date
  /** The service's exchange_number, when creation returned one (createPayment); null for forms and sessions. */
  readonly exchangeNumber: string | null
  readonly attached: AttachedData
  /** The buyer's e-mail and name as the request gave them, when known: the operator searches by e-mail. */
  readonly buyerEmail?: string | null
  readonly buyerName?: string | null
}

/**
 * - `open`: no final result yet (none at all, or a B2B1 pending 99);
 * - `succeeded` / `failed`: a final result was handled;
 * - `abandoned`: the sweeper gave up after the horizon (no result ever, or a 99 that never turned final).
 */
export type BookStatus = 'open' | 'succeeded' | 'failed' | 'abandoned'

/** The most amounts a booked payment keeps as asked: a loop re-creating an order cannot grow its record. */
export const MAX_ASKED_AMOUNTS = 10

/**
 * What a record did: `created` a new one; or the order was held already and now shows this creation (amount,
 * kind, exchange_number, createdAt, attached; status, state and lookups stay), its amount `known` among those asked
 * before or `added` to them.
 */
export type RecordOutcome = 'created' | 'known' | 'added'

export interface BookedPayment extends Omit<CreatedPayment, 'kind' | 'buyerEmail' | 'buyerName'> {
  /**
   * How the book knows it. A `result` record: uid is the credential set the result was verified with ('' when the
   * receiver cannot tell, one bare checksumToken), createdAt when the store first saw it, amountSen the result's
   * (0, and askedSen empty, when the result carried no amount), attached empty.
   */
  readonly kind: SeenKind
  /**
   * Every amount asked for the order, oldest first, the latest (amountSen) last; the last MAX_ASKED_AMOUNTS
   * distinct ones. A result carrying any of them matches: the service takes a reused order_number, and the buyer
   * may pay an earlier creation.
   */
  readonly askedSen: readonly number[]
  readonly status: BookStatus
  /** The latest state handled for it (pending included), or null before any result. */
  readonly state: PaymentState | null
  /** Sweeper lookups so far, the last one's time, and when the next one is due (null once closed). */
  readonly lookups: number
  readonly lastLookupAt: Date | null
  readonly nextLookupAt: Date | null
  /** From the creation when it gave them, else from the first handled result that carried them; null when unknown. */
  readonly buyerEmail: string | null
  readonly buyerName: string | null
  /**
   * Handler failures since a state of the same rank or higher was handled (a handled success clears every one,
   * a handled failure those of failures and pendings), and the latest one: its message only, never a field value.
   */
  readonly failures: number
  readonly lastFailure: HandlerFailure | null
  /** When the latest state was handled (null before any result). */
  readonly settledAt: Date | null
}

export interface HandlerFailure {
  readonly at: Date
  /** The state whose handlers failed. */
  readonly state: PaymentState
  readonly message: string
}

/** The longest failure message a store keeps: a sentence, not a stack trace. */
export const MAX_FAILURE_MESSAGE = 300

/**
 * What a completion (or a release after a handler failure) tells the book of the result it handled, so that the
 * same store statement records an order the book does not hold (a `result` record) and learns the buyer.
 */
export interface SeenResult {
  /** The credential set the result was verified (or confirmed) with; null when the receiver cannot tell. */
  readonly uid: string | null
  /** The result's transaction_amount in sen; null when it carried none (a minimal redirect, signature only). */
  readonly amountSen: number | null
  readonly buyerEmail: string | null
  readonly buyerName: string | null
}

/** A handler failure, for the release that follows it: counted on the booked payment in the release's statement. */
export interface FailureNote {
  /** At most MAX_FAILURE_MESSAGE characters (stores cut a longer one). */
  readonly message: string
  readonly seen?: SeenResult
}

/**
 * A list's status: a book status, or `paid_failing`: a success whose handlers failed and is not handled yet (the
 * most urgent line an operator can see), whatever the payment's status.
 */
export type ListStatus = BookStatus | 'paid_failing'

export interface ListQuery {
  readonly status?: ListStatus
  /** Created (a `result` record: first seen) at or after. */
  readonly from?: Date
  /** Created before. */
  readonly to?: Date
  /** An exact order_number, an exact exchange_number, or a buyer e-mail (case-insensitive): any of them matches. */
  readonly search?: string
  /** Default 50, at most 100 (MAX_LIST_LIMIT). */
  readonly limit?: number
  /** Opaque: the previous page's `next`. */
  readonly cursor?: string
}

/** Newest created first (then by order_number, then by uid, both descending); `next` is null on the last page. */
export interface PaymentPage {
  readonly payments: BookedPayment[]
  readonly next: string | null
}

export interface OverviewWindow {
  readonly from: Date
  readonly to: Date
}

export interface BookOverview {
  /** Payments created (first seen) in the window, by status. */
  readonly byStatus: Readonly<Record<BookStatus, number>>
  /** Any age: successes whose handlers are failing (ListStatus `paid_failing`). */
  readonly paidFailing: number
  /** Any age: payments with handler failures of any state. */
  readonly failing: number
  /** Every open payment (whatever the window) by the age of its creation. */
  readonly openByAge: { readonly underHour: number; readonly underDay: number; readonly underWeek: number; readonly older: number }
  /**
   * Handled results per UTC hour of settledAt in the window, by the payment's latest state; every hour of the
   * window, oldest first, zeros included.
   */
  readonly perHour: readonly HourCounts[]
}

export interface HourCounts {
  /** The start of the hour. */
  readonly hour: Date
  readonly succeeded: number
  readonly failed: number
  readonly pending: number
}

/** What one sweeper lookup changed: the next due time (backoff), or a close. */
export interface LookupNote {
  readonly at: Date
  readonly nextLookupAt: Date | null
  /** Set when the lookup closes the payment as abandoned. */
  readonly abandoned?: boolean
}

export interface OpenQuery {
  /** Only payments whose next lookup is due by then (the sweeper's question). Default: every open payment. */
  readonly dueBy?: Date
  /** The most to return, oldest created first. Default 100. */
  readonly limit?: number
}

export interface OpenSummary {
  readonly open: number
  /** Creation time of the oldest open payment, or null when none is open. */
  readonly oldestCreatedAt: Date | null
}

/**
 * Closed payments (succeeded, failed, abandoned) are kept for the store's retention after they closed, then
 * forgotten as if never recorded; open ones are kept until they close (the sweeper closes them in the end).
 */
export interface PaymentBook {
  /**
   * Records a created payment, in one store write. A second record of the same order_number (open or closed)
   * shows the later creation and adds its amount to those asked (askedSen), keeping status, state and lookups: a
   * rebuilt form must not reset its lookups, and a result of either creation is genuine.
   */
  record(payment: CreatedPayment): Promise<RecordOutcome>
  /** The booked payment of an order_number (see FindOptions), or undefined when this store never saw it created. */
  find(orderNumber: string, options?: FindOptions): Promise<BookedPayment | undefined>
  /**
   * Marks a handled state of the payment `payment` (its exchange_number `exchangeNumber` kept when the book had none):
   * `pending` keeps the payment open, `succeeded`/`failed` close it. A state below the one booked never moves it
   * back (the same ranks as claims); a final result after an abandon closes the payment with it (money arriving
   * is never ignored), and a pending one reopens a payment abandoned with no result, due for a lookup at once.
   * True when the book stands at `state` afterwards (moved now, or by an earlier settle of the same state); false
   * for an order number the book does not hold, or when a later state was booked already.
   */
  settle(payment: PaymentRef, state: PaymentState, exchangeNumber: string): Promise<boolean>
  /**
   * Records one sweeper lookup of an open payment, fenced: ignored (false) when the payment is no longer open, or
   * when `token` is older than the newest token the book's SweepLock has handed out (a sweeper whose lease ran out
   * while it worked must not write over its successor's bookkeeping).
   */
  noteLookup(payment: PaymentRef, note: LookupNote, token: number): Promise<boolean>
  /** Open payments, oldest created first (then by order_number, then by uid). */
  listOpen(query?: OpenQuery): Promise<BookedPayment[]>
  /** Counts for metrics and alerts. */
  summary(): Promise<OpenSummary>
  /** Every payment the book holds, filtered (ListQuery), a page at a time: the operator's search. */
  list(query?: ListQuery): Promise<PaymentPage>
  /** The counts of the operator's overview for a window (at most MAX_OVERVIEW_DAYS long). */
  overview(window: OverviewWindow): Promise<BookOverview>
}

/** A uid the book can key by: the stores join it with the order_number, so it holds no NUL. TypeError otherwise. */
export function checkedUid(uid: string): string {
  if (typeof uid !== 'string' || uid === '' || uid.includes('\0')) throw new TypeError('uid must be non-empty text without NUL characters')
  return uid
}

/** The amounts asked `amountSen` is asked again: moved (or added) last, the oldest dropped past the bound. */
export function askedAgain(asked: readonly number[], amountSen: number): number[] {
  return [...asked.filter((amount) => amount !== amountSen), amountSen].slice(-MAX_ASKED_AMOUNTS)
}

/**
 * One sweeper at a time across processes sharing a store. `acquire` hands out a fencing token that grows with
 * every new holder; a holder whose lease ran out may still be running, so the book's writes on its behalf
 * (noteLookup) carry the token and are refused once a newer one was handed out. What the sweeper hands to the
 * receiver needs no fence: claims deduplicate it like any delivery.
 */
export interface SweepLock {
  /** Takes the lock for ttlMs, or returns undefined while another holder's lease is live. */
  acquire(owner: string, ttlMs: number): Promise<{ readonly token: number } | undefined>
  /** Extends the lease; false when the lock was lost (expired and taken, or released). */
  renew(owner: string, token: number, ttlMs: number): Promise<boolean>
  release(owner: string, token: number): Promise<void>
  /** Keeps what the sweeper's latest pass did (replacing the one before), for the operator. */
  notePass(note: SweepPassNote): Promise<void>
  /** Who holds the lock now and until when, and the latest pass noted. */
  status(): Promise<SweepStatus>
}

export interface SweepPassNote {
  readonly at: Date
  readonly holder: string
  /** When the holder means to sweep next, if it knows. */
  readonly nextAt: Date | null
  readonly lookups: number
  readonly found: number
  readonly closed: number
  /** Each failing order and why (a sentence, never a field value or a secret). */
  readonly failures: readonly { readonly orderNumber: string; readonly message: string }[]
}

export interface SweepStatus {
  /** The holder of a live lease, or null. */
  readonly holder: string | null
  readonly heldUntil: Date | null
  readonly lastPass: SweepPassNote | null
}

export const DEFAULT_OPEN_LIMIT = 100

/** An OpenQuery checked: dueBy as epoch milliseconds (null when not given) and the limit. TypeError otherwise. */
export function openQuery(query: OpenQuery | undefined): { readonly dueBy: number | null; readonly limit: number } {
  const limit = query?.limit ?? DEFAULT_OPEN_LIMIT
  if (!(Number.isInteger(limit) && limit > 0)) throw new TypeError('limit must be a positive integer')
  const dueBy = query?.dueBy
  if (dueBy === undefined) return { dueBy: null, limit }
  if (!(dueBy instanceof Date && Number.isFinite(dueBy.getTime()))) throw new TypeError('dueBy must be a valid Date')
  return { dueBy: dueBy.getTime(), limit }
}
