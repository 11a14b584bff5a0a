import { type PaymentState, STATE_RANK } from '../core/payment.js'
import type { InboxQueue } from './inbox-queue.js'
import type { PaymentBook, SweepLock } from './payment-book.js'
import type { TimelineEntry, TimelineQuery } from './timeline.js'

/**
 * Where the receiver records which payment states were handled. A delivery claims its exchange_number with a
 * lease owned by a random token, runs the handlers, then completes or releases the claim. Leases make the same
 * contract work across processes: only one delivery of an exchange_number works at a time, a crashed owner's
 * lease expires and the next delivery takes over, and only the owner may complete or release.
 *
 * The whole contract is in src/contract: this interface; the inbox queue (inbox-queue.ts), the timeline and its
 * limits and retention (timeline.ts), the payment book (payment-book.ts); what every store shares
 * (store-options.ts, once.ts, detached.ts); test/stores/contract.ts runs it against every store.
 *
 * Optional fast paths, for a store in the receiver's own process (the memory store): offered under symbols
 * (own-path.ts), taken only while the methods they stand for are still the store's own, so a wrapper that replaces
 * claim, complete or appendTimeline is always called. A store of yours needs none of them.
 * - local-claims.ts: claim and complete answered at once, without a promise each;
 * - local-book.ts: the payment book's find and settle answered at once;
 * - delivery-trace.ts: the timeline taking a delivery's DeliveryTrace whole, at once, instead of its entries.
 */
export interface ReceiverStore<TTransaction = undefined> {
  claim(request: ClaimRequest): Promise<Claim<TTransaction>>
  /**
   * Records `state` as handled (and, for a transactional claim, commits the handlers' writes with it).
   * Returns false, changing nothing, when `owner` no longer holds the lease.
   */
  complete(lease: LeaseRef): Promise<boolean>
  /** Gives the lease up without recording anything (rolling a transactional claim back). False when not held. */
  release(lease: LeaseRef): Promise<boolean>
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

export interface ClaimRequest extends LeaseRef {
  readonly leaseMs: number
}

export type Claim<TTransaction = undefined> =
  /**
   * The caller holds the lease and must run the handlers. previousState is the latest state handled before.
   * A transactional store also hands over the open transaction that holds the claim, for the handlers' writes.
   */
  | { readonly outcome: 'claimed'; readonly previousState: PaymentState | null; readonly transaction?: TTransaction }
  /** This state was handled already. */
  | { readonly outcome: 'duplicate' }
  /** A later state was handled already (a 99 after its 00, a failure after a success): never regress. */
  | { readonly outcome: 'stale'; readonly currentState: PaymentState }
  /**
   * Another delivery holds a live lease. `settled` resolves when it completes or releases, if the store can
   * tell (same process); otherwise the caller answers 409 and lets the sender retry after `retryAfterMs`.
   */
  | { readonly outcome: 'busy'; readonly retryAfterMs: number; readonly settled?: Promise<void> }

/**
 * Whether `incoming` would move a payment backwards from `current`: a pending result after a final one, or a
 * failure after a success: a lower rank. A success after a failure is let through: money arriving must never be ignored.
 */
export function isRegression(current: PaymentState | null, incoming: PaymentState): boolean {
  return current !== null && STATE_RANK[incoming] < STATE_RANK[current]
}
