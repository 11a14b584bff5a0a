import { type PaymentState, STATE_RANK } from '../core/payment.js'
import type { InboxQueue } from './inbox-queue.js'
import type { BookedPayment, FailureNote, PaymentBook, SeenResult, SweepLock } from './payment-book.js'
import type { TimelineEntry, TimelineQuery } from './timeline.js'

/**
 * Where the receiver records which payment states were handled. A delivery claims its (exchange_number, state)
 * with a lease owned by a random token, runs the handlers, then completes or releases the claim. Leases make the
 * same contract work across processes: only one delivery of an exchange_number works at a time, a crashed owner's
 * lease expires and the next delivery takes over, and only the owner may complete or release.
 *
 * Every store is used through these methods and nothing else: the claim also answers what the handlers need to
 * know of the order (is it paid already, what did the merchant's client record), and the completion also
 * settles it, so a new delivery costs the store two round trips and a duplicate one. The whole contract is in
 * src/contract; test/stores/contract.ts runs it against every store.
 */
export interface ReceiverStore<TTransaction = undefined> {
  /**
   * Optional: how long this store holds a claim whatever leaseMs the claim asks for (a store's own `leaseMs`
   * option). The receiver then times a delivery by the shorter of it and its own leaseMs: a confirmation given half
   * of a longer lease than the store holds would let the claim run out while the API is asked, and a duplicate
   * delivery take the payment over and run its handlers a second time.
   */
  readonly leaseMs?: number
  claim(request: ClaimRequest): Promise<Claim<TTransaction>>
  /**
   * Records `state` as handled (and, for a transactional claim, commits the handlers' writes with it); a success
   * marks the order paid, and a booked payment is settled. False, changing nothing, when `owner` no longer holds
   * the lease: another delivery claimed the payment after the lease ran out, or it was completed or released. An
   * owner whose lease ran out while nobody claimed the payment still holds it (its completion is still the only
   * one), except where the lease ended with the store's record of it (Redis, for a payment with nothing handled:
   * the receiver then claims again as the same owner) or with the claim's transaction (a transactional store).
   * The same completion sent again may answer true (Redis: a client resends a command whose reply a restart cut off).
   */
  complete(lease: Completion): Promise<boolean>
  /**
   * Gives the lease up without recording any state (rolling a transactional claim back). False when not held
   * (held as for complete).
   * With `failure` (a handler threw), the booked payment of the order counts it, in the same statement (a
   * transactional store: right after the rollback); an order the book does not hold gets a `result` record.
   */
  release(lease: Release): Promise<boolean>
  /**
   * Optional: resolves when the lease another delivery holds on `exchangeNumber` may have ended, or after
   * `timeoutMs`, whichever comes first; never rejects. A delivery that finds its payment busy in another process
   * waits here, without asking the store again and again, then claims again (the claim decides). Resolve with
   * nothing: whatever else it resolves with is ignored, except the mark only this package's own stores make (the
   * holder that their busy claim named was heard completing a state; contract/lease-ends.ts), which answers a
   * delivery of that state as a duplicate with no second claim. Without it, a callback held elsewhere is answered
   * 409 at once and a redirect asks once more after a pause.
   */
  awaitLeaseEnd?(exchangeNumber: string, timeoutMs: number): Promise<unknown>
  /**
   * Optional: the exchange_number of another payment of the order whose success was handled (as a claim's `paidBy`),
   * or null. Of an order paid more than once, the latest payment; asked for that payment itself, a store that keeps
   * only the latest (memory, Redis) answers null where PostgreSQL names the earlier one (no receiver asks it: that
   * payment's failed or pending result is stale once its success is handled). A failed or pending result whose handlers wait for the API asks again just before they run, since the
   * order may have been paid meanwhile; without it, only the claim's answer counts.
   */
  paidBy?(claim: LeaseRef & OrderRef): Promise<string | null>
  /** The durable queue of inbox mode, for stores that have one (PostgreSQL, Redis). */
  openInbox?(): InboxQueue
  /**
   * Optional: appends entries to the per-order timeline, kept as long as handled states. The receiver calls it
   * in the background (never before answering) and logs a failure. Without it, no timeline is kept.
   */
  appendTimeline?(entries: readonly TimelineEntry[]): Promise<void>
  /** Optional: the latest entries of one order_number or exchange_number, oldest first. Needed by receiver.timeline(). */
  readTimeline?(query: TimelineQuery): Promise<TimelineEntry[]>
  /** Optional: payments known from creation (contract/payment-book.ts). Without it nothing is checked or swept. */
  paymentBook?(): PaymentBook
  /** Optional: the lock that keeps one sweeper at a time across the processes sharing this store. */
  sweepLock?(): SweepLock
}

export interface LeaseRef {
  readonly exchangeNumber: string
  readonly state: PaymentState
  readonly owner: string
}

/** Which order a payment is for: its order_number, and the API UID of the merchant it belongs to when known. */
export interface OrderRef {
  readonly orderNumber?: string
  readonly uid?: string
}

export interface ClaimRequest extends LeaseRef, OrderRef {
  readonly leaseMs: number
}

export interface Completion extends LeaseRef, OrderRef {
  /**
   * The result handled: with an order the book does not hold, the completion's statement records it too (kind
   * `result`); with one it holds, the buyer's e-mail and name fill what the record lacks.
   */
  readonly seen?: SeenResult
}

export interface Release extends LeaseRef, OrderRef {
  readonly failure?: FailureNote
}

export type Claim<TTransaction = undefined> =
  /**
   * The caller holds the lease and must run the handlers. previousState is the latest state handled before.
   * A transactional store also hands over the open transaction that holds the claim, for the handlers' writes.
   */
  | {
      readonly outcome: 'claimed'
      readonly previousState: PaymentState | null
      readonly transaction?: TTransaction
      /** The exchange_number of another payment of the same order whose success was handled, if any. */
      readonly paidBy?: string | null
      /** The order as the merchant's client recorded it, when the store's payment book holds it. */
      readonly booked?: BookedPayment
    }
  /** This state was handled already. */
  | { readonly outcome: 'duplicate' }
  /** A later state was handled already (a 99 after its 00, a failure after a success): never regress. */
  | { readonly outcome: 'stale'; readonly currentState: PaymentState }
  /**
   * Another delivery holds a live lease; the sender may retry after `retryAfterMs`. Checked before stale and
   * duplicate, except in a transactional store, which cannot see the holder's lease without waiting for its row: it
   * may answer at once the stale or duplicate that the states already recorded decide (the holder can only add a
   * later state: the result stays stale, or a duplicate, whatever it does).
   */
  | { readonly outcome: 'busy'; readonly retryAfterMs: number }

/**
 * Whether `incoming` would move a payment backwards from `current`: a pending result after a final one, or a
 * failure after a success: a lower rank. A success after a failure is let through: money arriving must never be ignored.
 */
export function isRegression(current: PaymentState | null, incoming: PaymentState): boolean {
  return current !== null && STATE_RANK[incoming] < STATE_RANK[current]
}

/** The key of an order in a store: its number, under the merchant's API UID when the result names one. */
export function orderKey(order: OrderRef): string | undefined {
  if (order.orderNumber === undefined) return undefined
  return order.uid === undefined ? order.orderNumber : `${order.uid}\u0000${order.orderNumber}`
}
