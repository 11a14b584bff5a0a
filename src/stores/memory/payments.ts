import type { PaymentState } from '../../core/payment.js'
import { OldestFirst } from './oldest-first.js'
import { RecordClock } from './record-clock.js'
import { recordOf, type Timeline, timelineExpiry } from './trail.js'

/**
 * The memory store's one map of payments, by exchange_number. A payment's entry holds everything the store knows of
 * it: its record (the states handled, RecordClock), its lease while a claim is in flight, and its timeline. One
 * entry, so that a delivery's claim, completion and timeline cost look-ups of one key in one map, and a payment is
 * forgotten with all it holds, when its retention is over or the cap needs room (contract/timeline.ts says when a
 * store may forget a timeline).
 *
 * Entries are re-inserted when a payment is touched again, so they run from the oldest to the newest and a sweep
 * stops at the first one still kept instead of walking 30 days of payments.
 */

/** A claim in flight. */
export class Lease {
  /** Made only when a duplicate waits: most leases end with nobody waiting. */
  settled: Promise<void> | undefined = undefined
  settle: (() => void) | undefined = undefined

  constructor(
    /** The payment's key in the map: the store's own string, re-inserted as it is when the payment moves. */
    readonly key: string,
    readonly owner: string,
    readonly state: PaymentState,
    readonly expiresAt: number,
    readonly claimedAt: number,
    /** The payment's record when it was claimed (the states handled so far), if it had a live one. */
    readonly previous: number | undefined,
    /** Whether the payment's key was in the map before the claim: then its completion moves it to the end. */
    readonly existed: boolean,
    /** The payment's timeline, carried through the claim (and written to while it runs). */
    public timeline: Timeline | undefined,
  ) {}
}

/**
 * A payment's entry: its bare record (most payments, without a timeline), a claim in flight, or its timeline with
 * its record in it (undefined while no state of it was handled).
 */
export type Entry = number | Lease | Timeline

export class Payments {
  readonly entries = new Map<string, Entry>()
  readonly clock: RecordClock
  private readonly oldest = new OldestFirst(this.entries)

  constructor(
    readonly retentionMs: number,
    readonly maxEntries: number,
  ) {
    this.clock = new RecordClock(retentionMs)
  }

  /** When a payment that no claim holds may be forgotten: when both its record and its timeline are past retention. */
  expiresAt(entry: number | Timeline): number {
    if (typeof entry === 'number') return this.clock.expiresAt(entry)
    const timeline = timelineExpiry(entry, this.retentionMs)
    const record = recordOf(entry)
    return record === undefined ? timeline : Math.max(timeline, this.clock.expiresAt(record))
  }

  sweep(now: number): void {
    this.oldest.restart()
    for (const [key, entry] of this.entries) {
      if (entry instanceof Lease) {
        // A lease whose owner never came back (a handler that never settled), expired for as long as a record
        // is kept. Until then its owner may still complete it, as long as nobody took over. A claim's position
        // says nothing of when it will be done, so the sweep goes on past it.
        if (entry.expiresAt + this.retentionMs <= now) {
          this.entries.delete(key)
          entry.settle?.()
        }
      } else if (this.expiresAt(entry) > now) return
      else this.entries.delete(key)
    }
  }

  /**
   * Brings the map down to `limit` entries: forgets the payments touched longest ago (the map's first entries)
   * that no live lease holds, with their timelines, and never `keep` (the payment being written). Claims in flight
   * may take the map past the cap until they complete.
   */
  makeRoom(now: number, keep: string, limit: number): void {
    // Each entry offered at most once a call: when all are in flight, the map stays past the cap.
    for (let offered = 0, size = this.entries.size; offered < size && this.entries.size > limit; offered++) {
      const [key, entry] = this.oldest.next() as [string, Entry]
      if (key === keep || (entry instanceof Lease && entry.expiresAt > now)) continue
      this.entries.delete(key)
      if (entry instanceof Lease) entry.settle?.()
    }
  }
}
