import { type TimelineEntry, type TimelineQuery, type TimelineSource, timelineKey } from '../contract/timeline.js'

/*
 * Refused deliveries cost O(1) storage. Anyone can send them, under any exchange_number they like, so they are
 * never filed per payment in the store. They are counted per code, logged (the receiver warns for each), and the
 * latest few are kept in this process's memory, where `receiver.timeline()` still shows them beside the store's
 * entries and `receiver.refusals()` lists them.
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
  /** Why it was refused, in more detail than the code, when the receiver could tell (a refused checksum's diagnosis). */
  readonly diagnosis?: unknown
}

export interface RefusalSummary {
  /** Refused deliveries since the receiver was created (in this process). */
  readonly total: number
  /** The same, per error code. */
  readonly byCode: Readonly<Record<string, number>>
  /** The latest refusals, oldest first. */
  readonly recent: readonly RefusalRecord[]
}

export class RefusalLog {
  private readonly counts = new Map<string, number>()
  private total = 0
  private recent: RefusalRecord[] = []

  /** `keep`: whether the latest are kept (they belong to the timeline, when the receiver keeps one). */
  constructor(private readonly keep: boolean) {}

  /** Counts one refusal and keeps it among the latest. */
  add(record: RefusalRecord): void {
    const code = record.code ?? 'internal_error'
    this.total++
    this.counts.set(code, (this.counts.get(code) ?? 0) + 1)
    if (!this.keep) return
    this.recent.push(record)
    if (this.recent.length > 2 * RECENT_REFUSALS) this.recent = this.recent.slice(-RECENT_REFUSALS)
  }

  summary(): RefusalSummary {
    return { total: this.total, byCode: Object.fromEntries(this.counts), recent: this.recent.slice(-RECENT_REFUSALS) }
  }

  /** The timeline entries of the kept refusals that claimed this payment's number. */
  entriesFor(query: TimelineQuery): TimelineEntry[] {
    const { kind, value } = timelineKey(query)
    return this.recent
      .slice(-RECENT_REFUSALS)
      .filter((record) => (kind === 'order' ? record.orderNumber : record.exchangeNumber) === value)
      .flatMap((record): TimelineEntry[] => {
        const common = { exchangeNumber: record.exchangeNumber, orderNumber: record.orderNumber, state: null, source: record.source, attempt: record.attempt, verified: false }
        return [
          { ...common, at: record.receivedAt, event: 'received', code: null, status: null, message: null },
          { ...common, at: record.answeredAt, event: 'refused', code: record.code, status: record.status, message: record.message },
        ]
      })
  }
}
