import type { DeliveryTrace } from '../contract/delivery-trace.js'
import { type TimelineEntry, type TimelineQuery, type TimelineSource, timelineKey } from '../contract/timeline.js'

/*
 * Refused deliveries cost O(1) storage. Anyone can send them, under any exchange_number they like, so they are
 * never filed per payment in the store (20,000 forged requests once made 20,000 Redis keys, kept 30 days, and a
 * full `noeviction` Redis then refused genuine results). They are counted per code, logged (the receiver warns
 * for each), and the latest few are kept in this process's memory, where `receiver.timeline()` still shows them
 * beside the store's entries and `receiver.refusals()` lists them.
 */

/** The latest refusals kept in memory. */
export const RECENT_REFUSALS = 100

/** One refused delivery, as `receiver.refusals()` lists it. Its numbers are what the message claimed: never trusted. */
export interface RefusalRecord {
  readonly receivedAt: Date
  readonly answeredAt: Date
  readonly source: TimelineSource
  /** The error code (`checksum_mismatch`, `invalid_fields`, ...). */
  readonly code: string | null
  readonly status: number
  readonly message: string | null
  readonly exchangeNumber: string | null
  readonly orderNumber: string | null
  /** Groups the timeline entries of this delivery. */
  readonly attempt: string
  /** Why it was refused, in more detail than the code, when the receiver could tell (for example which field differed). */
  readonly diagnosis?: unknown
}

export interface RefusalSummary {
  /** Refused deliveries since the receiver was created (in this process). */
  readonly total: number
  /** The same, per error code. */
  readonly byCode: Readonly<Record<string, number>>
  /** The latest refusals whose timeline the receiver kept (when the store keeps a timeline), oldest first. */
  readonly recent: readonly RefusalRecord[]
}

interface Kept {
  readonly trace: DeliveryTrace
  readonly diagnosis: unknown
}

export class RefusalLog {
  private readonly counts = new Map<string, number>()
  private total = 0
  private readonly ring: (Kept | undefined)[]
  private next = 0

  constructor(private readonly capacity = RECENT_REFUSALS) {
    this.ring = new Array<Kept | undefined>(capacity)
  }

  /** Counts one refusal: called for every one, whatever is kept of it. */
  count(code: string): void {
    this.total++
    this.counts.set(code, (this.counts.get(code) ?? 0) + 1)
  }

  /** Keeps one refused delivery's trace (and its diagnosis, if any), in place of the oldest kept. */
  keep(trace: DeliveryTrace, diagnosis?: unknown): void {
    // Its numbers would otherwise keep the whole refused body alive.
    trace.keepNumbers()
    this.ring[this.next] = { trace, diagnosis }
    this.next = (this.next + 1) % this.capacity
  }

  private kept(): Kept[] {
    const kept: Kept[] = []
    for (let i = 0; i < this.capacity; i++) {
      const item = this.ring[(this.next + i) % this.capacity]
      if (item !== undefined) kept.push(item)
    }
    return kept
  }

  summary(): RefusalSummary {
    const recent = this.kept().map(({ trace, diagnosis }): RefusalRecord => ({
      receivedAt: new Date(trace.receivedAt),
      answeredAt: new Date(trace.answeredAt),
      source: trace.source,
      code: trace.code,
      status: trace.status,
      message: trace.message,
      exchangeNumber: trace.exchangeNumber,
      orderNumber: trace.orderNumber,
      attempt: trace.attempt,
      ...(diagnosis === undefined ? {} : { diagnosis }),
    }))
    return { total: this.total, byCode: Object.fromEntries(this.counts), recent }
  }

  /** The timeline entries of the kept refusals that claimed this payment's number. */
  entriesFor(query: TimelineQuery): TimelineEntry[] {
    const { kind, value } = timelineKey(query)
    const entries: TimelineEntry[] = []
    for (const { trace } of this.kept())
      if ((kind === 'order' ? trace.orderNumber : trace.exchangeNumber) === value) entries.push(...trace.entries())
    return entries
  }
}
