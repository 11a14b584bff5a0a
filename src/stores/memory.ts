import type { PaymentState } from '../core/payment.js'
import { acceptTraces } from './delivery-trace.js'
import { type LocalClaims, offerLocalClaims } from './local-claims.js'
import { MemoryTimeline } from './memory-timeline.js'
import { type Claim, type ClaimRequest, isRegression, type LeaseRef, type ReceiverStore } from './store.js'

export interface MemoryStoreOptions {
  /** How long handled states are remembered. Default 30 days: the service's redelivery window is not stated. */
  retentionMs?: number
  /**
   * At most this many payments are remembered (default 1,000,000: about 70 MB of heap, 290 MB with the receiver's timeline). Past it, the payments
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
  /** The states handled when the claim was made, and whether the payment had a record then. */
  readonly handled: number
  readonly known: boolean
  /** Made only when a duplicate waits: most leases end with nobody waiting. */
  settled?: Promise<void>
  settle?: () => void
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
 * A payment's record is one number: the states handled (three bits) and when it was last touched, in ticks since
 * the store was made. A number, not an object: an object (and the boxed timestamp it held) was ~50 bytes more
 * per payment kept for 30 days, and most of what the GC had to copy per delivery. A tick is a thousandth of the
 * retention, at least 1 ms and at most 1 s, so the record stays a small integer for years of uptime and a payment
 * is kept at most one tick longer than retentionMs, never shorter.
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

  /** Past retention: touched at least retentionMs ago, counting the whole tick it was touched in. */
  expired(record: number, now: number): boolean {
    const tick = Math.floor(record / 8)
    return now >= this.origin + (tick + 1) * this.tickMs + this.retentionMs
  }
}

const handledOf = (record: number) => record % 8

/**
 * The default store: one process, nothing survives a restart. Fine for development and single-instance apps;
 * use a Redis or PostgreSQL store when several processes receive deliveries.
 */
export function memoryStore(options: MemoryStoreOptions = {}): ReceiverStore {
  const retentionMs = options.retentionMs ?? 30 * DAY_MS
  const maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES
  if (!(Number.isInteger(maxEntries) && maxEntries > 0)) throw new TypeError('maxEntries must be a positive integer')
  const clock = new RecordClock(retentionMs)
  // Handled payments, re-inserted whenever they are touched, so the map runs from the oldest to the newest and a
  // sweep stops at the first record still kept instead of walking every payment of the last 30 days.
  const records = new Map<string, number>()
  // Claims in flight, apart from the records: a new payment enters `records` once, when it is completed, and a
  // claim that is released or refused leaves nothing there.
  const leases = new Map<string, Lease>()
  const timeline = new MemoryTimeline(retentionMs, maxEntries)
  let operations = 0

  const isLive = (lease: Lease | undefined, now: number) => lease !== undefined && lease.expiresAt > now

  function sweep(now: number): void {
    for (const [key, record] of records) {
      if (!clock.expired(record, now)) break
      if (!isLive(leases.get(key), now)) records.delete(key)
    }
    // A lease whose owner never came back (a handler that never settled) is dropped once it has been expired as
    // long as a record is kept; until then its owner may still complete it, as long as nobody took over.
    for (const [key, lease] of leases) {
      if (lease.expiresAt + retentionMs > now) continue
      leases.delete(key)
      lease.settle?.()
    }
  }

  /**
   * Makes room for one more payment: forgets the payments touched longest ago (the map's first entries) that no
   * live lease holds. With every record's payment in flight, the map briefly exceeds the cap.
   */
  function makeRoom(now: number): void {
    for (const key of records.keys()) {
      if (records.size < maxEntries) return
      if (!isLive(leases.get(key), now)) records.delete(key)
    }
  }

  function heldBy(ref: LeaseRef): Lease | undefined {
    const held = leases.get(ref.exchangeNumber)
    return held !== undefined && held.owner === ref.owner && held.state === ref.state ? held : undefined
  }

  const local: LocalClaims = {
    claim(request: ClaimRequest): Claim {
      const now = Date.now()
      if (++operations % SWEEP_EVERY === 0) sweep(now)
      const key = request.exchangeNumber
      const lease = leases.get(key)
      const live = isLive(lease, now)
      if (live && (lease as Lease).owner !== request.owner) {
        const held = lease as Lease
        held.settled ??= new Promise<void>((resolve) => (held.settle = resolve))
        return { outcome: 'busy', retryAfterMs: held.expiresAt - now, settled: held.settled }
      }
      let record = records.get(key)
      if (record !== undefined && !live && clock.expired(record, now)) {
        records.delete(key)
        record = undefined
      }
      const handled = record === undefined ? 0 : handledOf(record)
      const current = currentOf(handled)
      if (current !== null && isRegression(current, request.state)) return { outcome: 'stale', currentState: current }
      if (handled & STATE_BIT[request.state]) return { outcome: 'duplicate' }
      // An expired lease belongs to a delivery that outlived leaseMs; its waiters are woken to re-check.
      lease?.settle?.()
      leases.set(key, { owner: request.owner, state: request.state, expiresAt: now + request.leaseMs, handled, known: record !== undefined })
      return { outcome: 'claimed', previousState: current }
    },

    complete(ref: LeaseRef): boolean {
      const lease = heldBy(ref)
      if (lease === undefined) return false
      const key = ref.exchangeNumber
      const now = Date.now()
      leases.delete(key)
      // A known payment moves to the map's end (the newest); a new one is appended there, making room first.
      if (lease.known) records.delete(key)
      else if (records.size >= maxEntries) makeRoom(now)
      records.set(key, clock.record(lease.handled | STATE_BIT[lease.state], now))
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
      leases.delete(ref.exchangeNumber)
      lease.settle?.()
      return true
    },

    appendTimeline: async (entries) => timeline.append(entries),
    readTimeline: async (query) => timeline.read(query),
  }
  // The receiver's own writes: deliveries as traces, their entries made only when read.
  return offerLocalClaims(acceptTraces(store, async (items) => timeline.append(items)), local)
}
