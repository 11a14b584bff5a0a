import { ownCopy } from '../../core/values.js'
import { MAX_TIMELINE_ENTRIES, type TimelineEntry, type TimelineQuery, timelineKey } from '../../contract/timeline.js'
import { forgetBatch, forgetOldest } from './cap.js'

/** An entry as kept: its time as a number (a Date object costs several times as much), and when it may go. */
interface Kept extends Omit<TimelineEntry, 'at'> {
  readonly at: number
  /** When it may be forgotten: retention after it was written, whenever it happened. */
  readonly until: number
}

/**
 * The memory store's timeline: each entry under its exchange_number and under its order_number, the latest
 * MAX_TIMELINE_ENTRIES (to twice that) of each, for at most maxEntries keys of each kind (the oldest go first).
 */
export class MemoryTimeline {
  private readonly byExchange = new Map<string, Kept[]>()
  private readonly byOrder = new Map<string, Kept[]>()

  constructor(
    private readonly retentionMs: number,
    private readonly maxEntries: number,
  ) {}

  append(entries: readonly TimelineEntry[]): void {
    const until = Date.now() + this.retentionMs
    for (const entry of entries) {
      // Copied: a number cut from a delivery's body would keep the whole body alive.
      const exchangeNumber = entry.exchangeNumber === null ? null : ownCopy(entry.exchangeNumber)
      const orderNumber = entry.orderNumber === null ? null : ownCopy(entry.orderNumber)
      const { event, state, source, attempt, verified, code, status, message } = entry
      const kept: Kept = { at: entry.at.getTime(), event, exchangeNumber, orderNumber, state, source, attempt, verified, code, status, message, until }
      if (exchangeNumber !== null) this.add(this.byExchange, exchangeNumber, kept)
      if (orderNumber !== null) this.add(this.byOrder, orderNumber, kept)
    }
  }

  read(query: TimelineQuery): TimelineEntry[] {
    const { kind, value, limit } = timelineKey(query)
    const now = Date.now()
    const kept = (kind === 'order' ? this.byOrder : this.byExchange).get(value) ?? []
    const live = kept.filter((item) => item.until > now).map(({ until: _until, ...item }): TimelineEntry => ({ ...item, at: new Date(item.at) }))
    // Stable: entries of one instant keep the order they were written in.
    return live.sort((a, b) => a.at.getTime() - b.at.getTime()).slice(-Math.min(limit, MAX_TIMELINE_ENTRIES))
  }

  private add(index: Map<string, Kept[]>, key: string, kept: Kept): void {
    // Written again: moved to the end, so that the cap forgets the list written longest ago first.
    const list = index.get(key) ?? []
    index.delete(key)
    if (index.size >= this.maxEntries) forgetOldest(index, forgetBatch(this.maxEntries))
    index.set(key, list)
    list.push(kept)
    // Bounded however many deliveries name one payment: past twice the limit, back to the latest limit.
    if (list.length > 2 * MAX_TIMELINE_ENTRIES) index.set(key, list.slice(-MAX_TIMELINE_ENTRIES))
  }
}
