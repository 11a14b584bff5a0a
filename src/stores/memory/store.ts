import { detached } from '../../contract/detached.js'
import { currentOfBits, type PaymentState, STATE_BIT } from '../../core/payment.js'
import { acceptTraces } from '../../contract/delivery-trace.js'
import { type LocalClaims, offerLocalClaims, type OwningClaimRequest } from '../../contract/local-claims.js'
import { DEFAULT_RETENTION_MS } from '../../contract/store-options.js'
import { MemoryPaymentBook, MemorySweepLock } from './payment-book.js'
import { Lease, Payments } from './payments.js'
import { handledOf } from './record-clock.js'
import { MemoryTimeline } from './timeline.js'
import { recordOf, type Timeline, withRecord } from './trail.js'
import { type Claim, type ClaimRequest, isRegression, type LeaseRef, type ReceiverStore } from '../../contract/store.js'

export interface MemoryStoreOptions {
  /** How long handled states are remembered. Default 30 days: the service's redelivery window is not stated. */
  retentionMs?: number
  /**
   * At most this many payments are remembered (default 1,000,000: about 110 MB of heap, 300 MB with the receiver's timeline). Past it, the payments
   * touched longest ago are forgotten first, whatever their retention, so that memory stays bounded; a payment
   * whose claim is in flight is never forgotten. A redelivery of a forgotten payment runs its handlers again:
   * keep the cap above the payments you receive within the service's redelivery window, or use a shared store.
   */
  maxEntries?: number
}

const SWEEP_EVERY = 1024

// The answers that carry nothing of a delivery's own, shared (frozen): most claims make no object for their answer.
const DUPLICATE: Claim = Object.freeze({ outcome: 'duplicate' })
const CLAIMED_NEW: Claim = Object.freeze({ outcome: 'claimed', previousState: null })
const CLAIMED_AFTER: Readonly<Record<PaymentState, Claim>> = {
  pending: Object.freeze({ outcome: 'claimed', previousState: 'pending' }),
  succeeded: Object.freeze({ outcome: 'claimed', previousState: 'succeeded' }),
  failed: Object.freeze({ outcome: 'claimed', previousState: 'failed' }),
}
export const DEFAULT_MAX_ENTRIES = 1_000_000

/**
 * The default store: one process, nothing survives a restart. Fine for development and single-instance apps;
 * use a Redis or PostgreSQL store when several processes receive deliveries.
 */
export function memoryStore(options: MemoryStoreOptions = {}): ReceiverStore {
  const retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS
  const maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES
  if (!(Number.isInteger(maxEntries) && maxEntries > 0)) throw new TypeError('maxEntries must be a positive integer')
  // NaN (Number() of an unset variable) would make every record read as nothing handled: no duplicate ever caught.
  if (!(typeof retentionMs === 'number' && retentionMs > 0)) throw new TypeError('retentionMs must be a positive number of milliseconds')
  const payments = new Payments(retentionMs, maxEntries)
  const { entries, clock } = payments
  const timeline = new MemoryTimeline(payments)
  const sweepLock = new MemorySweepLock()
  const book = new MemoryPaymentBook(retentionMs, maxEntries, sweepLock)
  let operations = 0

  function heldBy(ref: LeaseRef): Lease | undefined {
    const held = entries.get(ref.exchangeNumber)
    return held instanceof Lease && held.owner === ref.owner && held.state === ref.state ? held : undefined
  }

  /** What a payment's entry becomes when no claim holds it: its record alone, or its timeline holding the record. */
  function settledEntry(record: number | undefined, lease: Lease): number | Timeline | undefined {
    const timeline = lease.timeline
    return timeline === undefined ? record : withRecord(timeline, record)
  }

  /**
   * A claim of `request`; when it is taken, the store keeps the exchange_number as `owner.ownExchangeNumber()`, a
   * string of its own (the receiver's, local-claims.ts, or a copy, contract/detached.ts).
   */
  function claim(request: ClaimRequest, owner: Pick<OwningClaimRequest, 'ownExchangeNumber'>): Claim {
    const now = Date.now()
    if (++operations % SWEEP_EVERY === 0) payments.sweep(now)
    const key = request.exchangeNumber
    const found = entries.get(key)
    let record: number | undefined
    let kept
    if (typeof found === 'number') record = found
    else if (found instanceof Lease) {
      if (found.expiresAt > now && found.owner !== request.owner) {
        found.settled ??= new Promise<void>((resolve) => (found.settle = resolve))
        return { outcome: 'busy', retryAfterMs: found.expiresAt - now, settled: found.settled }
      }
      record = found.previous
      kept = found.timeline
    } else if (found !== undefined) {
      record = recordOf(found)
      kept = found
    }
    // Past retention: forgotten, as if never seen, unless a live lease (its own owner's, claiming again) holds it.
    if (record !== undefined && !(found instanceof Lease && found.expiresAt > now) && clock.expired(record, now)) record = undefined
    const handled = record === undefined ? 0 : handledOf(record)
    const current = currentOfBits(handled)
    if (current !== null && isRegression(current, request.state)) return { outcome: 'stale', currentState: current }
    if (handled & STATE_BIT[request.state]) return DUPLICATE
    // An expired lease belongs to a delivery that outlived leaseMs; its waiters are woken to re-check.
    if (found instanceof Lease) found.settle?.()
    // The key its completion or release re-inserts (an existing key stays the map's own until then).
    const ownKey = owner.ownExchangeNumber()
    entries.set(ownKey, new Lease(ownKey, request.owner, request.state, now + request.leaseMs, now, record, found !== undefined, kept))
    return current === null ? CLAIMED_NEW : CLAIMED_AFTER[current]
  }

  const local: LocalClaims = {
    claim: (request) => claim(request, request),

    complete(ref: LeaseRef): boolean {
      const lease = heldBy(ref)
      if (lease === undefined) return false
      const key = ref.exchangeNumber
      const now = Date.now()
      const completed = settledEntry(clock.record((lease.previous === undefined ? 0 : handledOf(lease.previous)) | STATE_BIT[lease.state], now), lease) as number | Timeline
      // A payment seen before moves to the end, and so does a new one whose handlers ran past the tick it was
      // claimed in: the cap forgets from the front, and must not take a payment completed just now before ones
      // completed while its handlers ran. A new payment claimed within the tick is replaced where its claim
      // appended it (no delete and re-insert for nearly every delivery). Only now does it count against the cap,
      // so a released claim pushes nobody out.
      if (lease.existed || !clock.sameTick(lease.claimedAt, now)) {
        entries.delete(key)
        if (entries.size >= maxEntries) payments.makeRoom(now, key, maxEntries - 1)
        entries.set(lease.key, completed)
      } else {
        if (entries.size > maxEntries) payments.makeRoom(now, key, maxEntries)
        entries.set(key, completed)
      }
      lease.settle?.()
      return true
    },
  }

  const store: ReceiverStore = {
    claim: async (request) => claim(request, { ownExchangeNumber: () => detached(request.exchangeNumber) }),
    complete: async (lease) => local.complete(lease),

    async release(ref: LeaseRef): Promise<boolean> {
      const lease = heldBy(ref)
      if (lease === undefined) return false
      // Back to what it was: its record, touched now as a completion would (a redelivery is coming, and its states
      // must not be forgotten meanwhile), and its timeline; or nothing (a released claim of a new payment with no
      // timeline takes no slot).
      entries.delete(ref.exchangeNumber)
      const restored = settledEntry(lease.previous === undefined ? undefined : clock.record(handledOf(lease.previous), Date.now()), lease)
      if (restored !== undefined) entries.set(lease.key, restored)
      lease.settle?.()
      return true
    },

    appendTimeline: async (entries) => timeline.append(entries),
    readTimeline: async (query) => timeline.read(query),
    paymentBook: () => book,
    sweepLock: () => sweepLock,
  }
  // The receiver's own writes: deliveries as traces, their entries made only when read.
  return offerLocalClaims(acceptTraces(store, (items) => timeline.append(items)), local)
}
