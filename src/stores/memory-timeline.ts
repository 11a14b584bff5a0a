import { DeliveryTrace } from './delivery-trace.js'
import { byTime, MAX_TIMELINE_ENTRIES, type TimelineEntry, type TimelineQuery, timelineKey } from './timeline.js'

/** An entry, or a delivery's entries as one trace (made into entries when read). */
type Item = TimelineEntry | DeliveryTrace

interface Trail {
  readonly items: Item[]
  /** How many entries the items stand for. */
  count: number
  expiresAt: number
}

const sizeOf = (item: Item): number => (item instanceof DeliveryTrace ? item.size : 1)

const SWEEP_EVERY = 256

/**
 * The memory store's timeline: a list of entries per order_number and per exchange_number (the same objects in
 * both), forgotten `retentionMs` after their last entry, at most MAX_TIMELINE_ENTRIES each (the oldest go first),
 * and at most `maxTrails` lists in all (the least recently touched go first), as the store caps its records.
 */
export class MemoryTimeline {
  // Re-inserted on every append, so the map runs from the oldest expiry to the newest and a sweep stops early.
  private readonly trails = new Map<string, Trail>()
  private appends = 0

  constructor(
    private readonly retentionMs: number,
    private readonly maxTrails: number,
  ) {}

  append(entries: readonly Item[]): void {
    const now = Date.now()
    if (++this.appends % SWEEP_EVERY === 0) this.sweep(now)
    // A delivery's entries come together and name the same payment: one look-up (and one key) per trail for the
    // run of them, not per entry, and a new trail's list made to their size (an empty list grows to 17 slots).
    let from = 0
    while (from < entries.length) {
      const first = entries[from] as Item
      let to = from + 1
      while (to < entries.length) {
        const entry = entries[to] as Item
        if (entry.exchangeNumber !== first.exchangeNumber || entry.orderNumber !== first.orderNumber) break
        to++
      }
      if (first.exchangeNumber !== null) this.add(`x:${first.exchangeNumber}`, entries, from, to, now)
      if (first.orderNumber !== null) this.add(`o:${first.orderNumber}`, entries, from, to, now)
      from = to
    }
  }

  read(query: TimelineQuery): TimelineEntry[] {
    const { kind, value, limit } = timelineKey(query)
    const trail = this.trails.get(`${kind === 'order' ? 'o' : 'x'}:${value}`)
    if (trail === undefined || trail.expiresAt <= Date.now()) return []
    const entries: TimelineEntry[] = []
    for (const item of trail.items) {
      if (item instanceof DeliveryTrace) for (const entry of item.entries()) entries.push(entry)
      else entries.push(item)
    }
    return byTime(entries.slice(-Math.min(limit, MAX_TIMELINE_ENTRIES)))
  }

  /** Adds entries[from, to) to the trail under `key`. */
  private add(key: string, entries: readonly Item[], from: number, to: number, now: number): void {
    let trail = this.trails.get(key)
    if (trail === undefined || trail.expiresAt <= now) trail = { items: entries.slice(from, to), count: 0, expiresAt: 0 }
    else for (let i = from; i < to; i++) trail.items.push(entries[i] as Item)
    for (let i = from; i < to; i++) trail.count += sizeOf(entries[i] as Item)
    // Trimmed in halves, not per entry: splicing a full list on every append made a busy order cost O(n) each time.
    // At least MAX_TIMELINE_ENTRIES entries stay, which is all a read returns.
    if (trail.count >= 2 * MAX_TIMELINE_ENTRIES) {
      let drop = 0
      while (trail.count - sizeOf(trail.items[drop] as Item) >= MAX_TIMELINE_ENTRIES) trail.count -= sizeOf(trail.items[drop++] as Item)
      trail.items.splice(0, drop)
    }
    const expiresAt = now + this.retentionMs
    // Moved to the end only when it has aged by 1/64 of the retention: deleting and re-adding a key on every
    // append makes V8 rehash a large Map every few operations (16 µs per append at 40k trails). The order stays
    // right to within that slack, so a sweep frees an expired trail at most retention/64 late.
    if (trail.expiresAt === 0 || expiresAt - trail.expiresAt > this.retentionMs / 64) {
      this.trails.delete(key)
      this.trails.set(key, trail)
    }
    trail.expiresAt = expiresAt
    if (this.trails.size > this.maxTrails) this.trails.delete(this.trails.keys().next().value as string)
  }

  private sweep(now: number): void {
    for (const [key, trail] of this.trails) {
      if (trail.expiresAt > now) return
      this.trails.delete(key)
    }
  }
}
