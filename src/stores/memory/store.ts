import { detached } from '../../contract/detached.js'
import { currentOfBits, type PaymentState, STATE_BIT } from '../../core/payment.js'
import { acceptTraces } from '../../contract/delivery-trace.js'
import { type LocalClaims, offerLocalClaims } from '../../contract/local-claims.js'
import { MemoryPaymentBook, MemorySweepLock } from './payment-book.js'
import { MemoryTimeline } from './timeline.js'
import { type Claim, type ClaimRequest, isRegression, type LeaseRef, type ReceiverStore } from '../../contract/store.js'

export interface MemoryStoreOptions {
  /** How long handled states are remembered. Default 30 days: the service's redelivery window is not stated. */
  retentionMs?: number
  /**
   * At most this many payments are remembered (default 1,000,000: about 110 MB of heap, 420 MB with the receiver's timeline). Past it, the payments
   * touched longest ago are forgotten first, whatever their retention, so that memory stays bounded; a payment
   * whose claim is in flight is never forgotten. A redelivery of a forgotten payment runs its handlers again:
   * keep the cap above the payments you receive within the service's redelivery window, or use a shared store.
   */
  maxEntries?: number
}

/** A claim in flight: what a payment's entry holds from its claim until it is completed or released. */
interface Lease {
  readonly owner: string
  readonly state: PaymentState
  readonly expiresAt: number
  readonly claimedAt: number
  /** The payment's record when it was claimed (the states handled so far), if it had a live one. */
  readonly previous: number | undefined
  /** Whether the payment's key was in the map before the claim: then its completion moves it to the end. */
  readonly existed: boolean
  /** Made only when a duplicate waits: most leases end with nobody waiting. */
  settled?: Promise<void>
  settle?: () => void
}


const DAY_MS = 24 * 60 * 60 * 1000
const SWEEP_EVERY = 1024
export const DEFAULT_MAX_ENTRIES = 1_000_000

/**
 * A payment's record is one number: the states handled (three bits) and when it was last touched, in ticks since
 * the store was made. A number, not an object: an object (and the boxed timestamp it held) was ~50 bytes more
 * per payment kept for 30 days, and most of what the GC had to copy per delivery. A tick is a thousandth of the
 * retention, at least 1 ms and at most 1 s, so at the default retention the record stays a small integer for four
 * years of uptime (a larger one is as correct, only boxed), and a payment is kept at most one tick longer than
 * retentionMs, never shorter.
 */
class RecordClock {
  private readonly origin = Date.now()
  private readonly tickMs: number

  constructor(private readonly retentionMs: number) {
    this.tickMs = Math.max(1, Math.min(1000, Math.floor(retentionMs / 1000)))
  }

  record(handled: number, now: number): number {
    return Math.floor((now - this.origin) / this.tickMs) * 8 + handled
  }

  sameTick(a: number, b: number): boolean {
    return Math.floor((a - this.origin) / this.tickMs) === Math.floor((b - this.origin) / this.tickMs)
  }

  /** Past retention: touched at least retentionMs ago, counting the whole tick it was touched in. */
  expired(record: number, now: number): boolean {
    const tick = Math.floor(record / 8)
    return now >= this.origin + (tick + 1) * this.tickMs + this.retentionMs
  }
}

// `& 7`, not `% 8`: a clock set back before the store was made gives negative ticks, whose remainder is negative.
const handledOf = (record: number) => record & 7

/**
 * The default store: one process, nothing survives a restart. Fine for development and single-instance apps;
 * use a Redis or PostgreSQL store when several processes receive deliveries.
 */
export function memoryStore(options: MemoryStoreOptions = {}): ReceiverStore {
  const retentionMs = options.retentionMs ?? 30 * DAY_MS
  const maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES
  if (!(Number.isInteger(maxEntries) && maxEntries > 0)) throw new TypeError('maxEntries must be a positive integer')
  // NaN (Number() of an unset variable) would make every record read as nothing handled: no duplicate ever caught.
  if (!(typeof retentionMs === 'number' && retentionMs > 0)) throw new TypeError('retentionMs must be a positive number of milliseconds')
  const clock = new RecordClock(retentionMs)
  // Each payment's record, or its lease while a claim is in flight (in the same entry: a small map of leases beside
  // it churned its table on every delivery). Re-inserted when a payment is touched again, so the records run from
  // the oldest to the newest and a sweep stops at the first one still kept instead of walking 30 days of payments.
  const entries = new Map<string, number | Lease>()
  const timeline = new MemoryTimeline(retentionMs, maxEntries)
  const sweepLock = new MemorySweepLock()
  const book = new MemoryPaymentBook(retentionMs, maxEntries, sweepLock)
  let operations = 0

  const isLive = (entry: number | Lease, now: number) => typeof entry === 'object' && entry.expiresAt > now

  function sweep(now: number): void {
    for (const [key, entry] of entries) {
      if (typeof entry === 'number') {
        if (!clock.expired(entry, now)) return
        entries.delete(key)
      } else if (entry.expiresAt + retentionMs <= now) {
        // A lease whose owner never came back (a handler that never settled), expired for as long as a record
        // is kept. Until then its owner may still complete it, as long as nobody took over. A claim's position
        // says nothing of when it will be done, so the sweep goes on past it.
        entries.delete(key)
        entry.settle?.()
      }
    }
  }

  /**
   * Brings the map down to `limit` entries: forgets the payments touched longest ago (the map's first entries)
   * that no live lease holds, and never `keep` (the payment being completed). Claims in flight may take the map
   * past the cap until they complete.
   */
  function makeRoom(now: number, keep: string, limit: number): void {
    for (const [key, entry] of entries) {
      if (entries.size <= limit) return
      if (key === keep || isLive(entry, now)) continue
      entries.delete(key)
      if (typeof entry === 'object') entry.settle?.()
    }
  }

  function heldBy(ref: LeaseRef): Lease | undefined {
    const held = entries.get(ref.exchangeNumber)
    return typeof held === 'object' && held.owner === ref.owner && held.state === ref.state ? held : undefined
  }

  const local: LocalClaims = {
    claim(request: ClaimRequest): Claim {
      const now = Date.now()
      if (++operations % SWEEP_EVERY === 0) sweep(now)
      const key = request.exchangeNumber
      const found = entries.get(key)
      const lease = typeof found === 'object' ? found : undefined
      const live = lease !== undefined && lease.expiresAt > now
      if (live && lease.owner !== request.owner) {
        lease.settled ??= new Promise<void>((resolve) => (lease.settle = resolve))
        return { outcome: 'busy', retryAfterMs: lease.expiresAt - now, settled: lease.settled }
      }
      let record = typeof found === 'object' ? found.previous : found
      // Past retention: forgotten, as if never seen, unless a live lease (its own owner's, claiming again) holds it.
      if (record !== undefined && !live && clock.expired(record, now)) record = undefined
      const handled = record === undefined ? 0 : handledOf(record)
      const current = currentOfBits(handled)
      if (current !== null && isRegression(current, request.state)) return { outcome: 'stale', currentState: current }
      if (handled & STATE_BIT[request.state]) return { outcome: 'duplicate' }
      // An expired lease belongs to a delivery that outlived leaseMs; its waiters are woken to re-check.
      lease?.settle?.()
      // A new key is kept for the retention: detached, or it keeps its delivery's whole body alive (core/detached.ts).
      entries.set(found === undefined ? detached(key) : key, { owner: request.owner, state: request.state, expiresAt: now + request.leaseMs, claimedAt: now, previous: record, existed: found !== undefined })
      return { outcome: 'claimed', previousState: current }
    },

    complete(ref: LeaseRef): boolean {
      const lease = heldBy(ref)
      if (lease === undefined) return false
      const key = ref.exchangeNumber
      const now = Date.now()
      const record = clock.record((lease.previous === undefined ? 0 : handledOf(lease.previous)) | STATE_BIT[lease.state], now)
      // A payment seen before moves to the end, and so does a new one whose handlers ran past the tick it was
      // claimed in: the cap forgets from the front, and must not take a payment completed just now before ones
      // completed while its handlers ran. A new payment claimed within the tick is replaced where its claim
      // appended it (no delete and re-insert for nearly every delivery). Only now does it count against the cap,
      // so a released claim pushes nobody out.
      if (lease.existed || !clock.sameTick(lease.claimedAt, now)) {
        entries.delete(key)
        if (entries.size >= maxEntries) makeRoom(now, key, maxEntries - 1)
        entries.set(detached(key), record)
      } else {
        if (entries.size > maxEntries) makeRoom(now, key, maxEntries)
        entries.set(key, record)
      }
      lease.settle?.()
      return true
    },
  }

  const store: ReceiverStore = {
    claim: async (request) => local.claim(request),
    complete: async (lease) => local.complete(lease),

    async release(ref: LeaseRef): Promise<boolean> {
      const lease = heldBy(ref)
      if (lease === undefined) return false
      // Back to what it was: its record, touched now as a completion would (a redelivery is coming, and its states
      // must not be forgotten meanwhile), or nothing (a released claim of a new payment takes no slot).
      entries.delete(ref.exchangeNumber)
      if (lease.previous !== undefined) entries.set(detached(ref.exchangeNumber), clock.record(handledOf(lease.previous), Date.now()))
      lease.settle?.()
      return true
    },

    appendTimeline: async (entries) => timeline.append(entries),
    readTimeline: async (query) => timeline.read(query),
    paymentBook: () => book,
    sweepLock: () => sweepLock,
  }
  // The receiver's own writes: deliveries as traces, their entries made only when read.
  return offerLocalClaims(acceptTraces(store, async (items) => timeline.append(items)), local)
}
