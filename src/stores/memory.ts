import type { PaymentState } from '../core/payment.js'
import { acceptTraces } from './delivery-trace.js'
import { MemoryTimeline } from './memory-timeline.js'
import { type Claim, type ClaimRequest, isRegression, type LeaseRef, type ReceiverStore } from './store.js'

export interface MemoryStoreOptions {
  /** How long handled states are remembered. Default 30 days: the service's redelivery window is not stated. */
  retentionMs?: number
  /**
   * At most this many payments are remembered (default 1,000,000, about 170 MB of heap). Past it, the payments
   * touched longest ago are forgotten first, whatever their retention, so that memory stays bounded; a payment
   * whose claim is in flight is never forgotten. A redelivery of a forgotten payment runs its handlers again:
   * keep the cap above the payments you receive within the service's redelivery window, or use a shared store.
   */
  maxEntries?: number
}

interface Lease {
  readonly owner: string
  readonly state: PaymentState
  readonly expiresAt: number
  /** Made only when a duplicate waits: most leases end with nobody waiting. */
  settled?: Promise<void>
  settle?: () => void
}

interface PaymentRecord {
  /** The states handled, as bits (STATE_BIT): one number, where a Set cost ~200 bytes per payment. */
  handled: number
  lease: Lease | undefined
  expiresAt: number
}

const STATE_BIT: Record<PaymentState, number> = { pending: 1, failed: 2, succeeded: 4 }

/** The latest state handled, by rank (success outranks failure outranks pending), as currentState() in store.ts. */
function currentOf(handled: number): PaymentState | null {
  return handled & 4 ? 'succeeded' : handled & 2 ? 'failed' : handled & 1 ? 'pending' : null
}

const DAY_MS = 24 * 60 * 60 * 1000
const SWEEP_EVERY = 1024
export const DEFAULT_MAX_ENTRIES = 1_000_000

/**
 * The default store: one process, nothing survives a restart. Fine for development and single-instance apps;
 * use a Redis or PostgreSQL store when several processes receive deliveries.
 */
export function memoryStore(options: MemoryStoreOptions = {}): ReceiverStore {
  const retentionMs = options.retentionMs ?? 30 * DAY_MS
  const maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES
  if (!(Number.isInteger(maxEntries) && maxEntries > 0)) throw new TypeError('maxEntries must be a positive integer')
  const records = new Map<string, PaymentRecord>()
  const timeline = new MemoryTimeline(retentionMs, 2 * maxEntries) // an order_number and an exchange_number per payment
  let operations = 0
  // The record set into the map last: touching it again needs no delete and re-insert (it is the last entry
  // already), which is the common case of a claim followed by its completion. Deleting and re-adding a key leaves
  // a hole that makes V8 rehash the map sooner.
  let newest: PaymentRecord | undefined

  // Records are re-inserted whenever they are touched, so the map runs from the oldest expiry to the newest
  // and a sweep stops at the first record still kept instead of walking every payment of the last 30 days.
  function sweep(now: number): void {
    for (const [key, record] of records) {
      if (record.expiresAt > now) return
      if (isForgotten(record, now)) records.delete(key)
    }
  }

  function touch(exchangeNumber: string, record: PaymentRecord): void {
    record.expiresAt = Date.now() + retentionMs
    if (record === newest) return
    records.delete(exchangeNumber)
    records.set(exchangeNumber, record)
    newest = record
  }

  /**
   * Makes room for one more payment: forgets the payments touched longest ago (the map's first entries) that no
   * live lease holds. In-flight claims are skipped, so with more claims in flight than the cap the map briefly
   * exceeds it.
   */
  function makeRoom(now: number): void {
    for (const [key, record] of records) {
      if (records.size < maxEntries) return
      if (record.lease !== undefined && record.lease.expiresAt > now) continue
      record.lease?.settle?.()
      records.delete(key)
    }
  }

  /** Past retention and not held by a live lease. */
  function isForgotten(record: PaymentRecord, now: number): boolean {
    return record.expiresAt <= now && (record.lease === undefined || record.lease.expiresAt <= now)
  }

  function heldBy(lease: LeaseRef): PaymentRecord | undefined {
    const record = records.get(lease.exchangeNumber)
    const held = record?.lease
    return held !== undefined && held.owner === lease.owner && held.state === lease.state ? record : undefined
  }

  function endLease(exchangeNumber: string, record: PaymentRecord): void {
    const lease = record.lease
    record.lease = undefined
    touch(exchangeNumber, record)
    lease?.settle?.()
  }

  const store: ReceiverStore = {
    async claim(request: ClaimRequest): Promise<Claim> {
      const now = Date.now()
      if (++operations % SWEEP_EVERY === 0) sweep(now)
      const found = records.get(request.exchangeNumber)
      let record = found
      if (record !== undefined && isForgotten(record, now)) {
        record.lease?.settle?.()
        record = undefined
      }
      if (record === undefined) {
        if (records.size >= maxEntries) makeRoom(now)
        record = { handled: 0, lease: undefined, expiresAt: now + retentionMs }
        records.set(request.exchangeNumber, record)
        // Replacing a forgotten record's value leaves its key where it was: not the map's last entry then.
        newest = found === undefined ? record : undefined
      }
      const lease = record.lease
      if (lease !== undefined && lease.expiresAt > now && lease.owner !== request.owner) {
        lease.settled ??= new Promise<void>((resolve) => (lease.settle = resolve))
        return { outcome: 'busy', retryAfterMs: lease.expiresAt - now, settled: lease.settled }
      }
      const current = currentOf(record.handled)
      if (current !== null && isRegression(current, request.state)) return { outcome: 'stale', currentState: current }
      if (record.handled & STATE_BIT[request.state]) return { outcome: 'duplicate' }
      // An expired lease belongs to a delivery that outlived leaseMs; its waiters are woken to re-check.
      lease?.settle?.()
      record.lease = { owner: request.owner, state: request.state, expiresAt: now + request.leaseMs }
      return { outcome: 'claimed', previousState: current }
    },

    async complete(lease: LeaseRef): Promise<boolean> {
      const record = heldBy(lease)
      if (record === undefined) return false
      record.handled |= STATE_BIT[lease.state]
      endLease(lease.exchangeNumber, record)
      return true
    },

    async release(lease: LeaseRef): Promise<boolean> {
      const record = heldBy(lease)
      if (record === undefined) return false
      endLease(lease.exchangeNumber, record)
      return true
    },

    appendTimeline: async (entries) => timeline.append(entries),
    readTimeline: async (query) => timeline.read(query),
  }
  // The receiver's own writes: deliveries as traces, their entries made only when read.
  return acceptTraces(store, async (items) => timeline.append(items))
}
