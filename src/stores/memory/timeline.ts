import { DeliveryTrace } from '../../contract/delivery-trace.js'
import { byTime, MAX_TIMELINE_ENTRIES, type TimelineEntry, type TimelineQuery, timelineKey } from '../../contract/timeline.js'

/** An entry, or a delivery's entries as one trace (made into entries when read). */
type Item = TimelineEntry | DeliveryTrace

/** A payment's items once it has more than one delivery (or an entry that is no trace). */
class Trail {
  constructor(
    readonly items: Item[],
    /** How many entries the items stand for. */
    public count: number,
    public expiresAt: number,
  ) {}
}

/**
 * What a key keeps: most payments have one delivery, kept as its bare trace (expiring a retention after it was
 * answered), without a list and a record around it: those were four of the objects per payment that every GC
 * copied and walked.
 */
type Kept = DeliveryTrace | Trail

const sizeOf = (item: Item): number => (item instanceof DeliveryTrace ? item.size : 1)

const SWEEP_EVERY = 256

/**
 * The memory store's timeline: a list of entries per order_number and per exchange_number (the same objects in
 * both), forgotten `retentionMs` after their last entry, at most MAX_TIMELINE_ENTRIES each (the oldest go first),
 * and at most `maxTrails` lists of each kind (the least recently touched go first), as the store caps its records.
 * Two maps keyed by the numbers themselves, the traces' own copies of them (DeliveryTrace.keepNumbers): no key
 * string made per list.
 */
export class MemoryTimeline {
  // Re-inserted on every append, so each map runs from the oldest expiry to the newest and a sweep stops early.
  private readonly byExchange = new Map<string, Kept>()
  private readonly byOrder = new Map<string, Kept>()
  private appends = 0

  constructor(
    private readonly retentionMs: number,
    private readonly maxTrails: number,
  ) {}

  append(entries: readonly Item[]): void {
    const now = Date.now()
    if (++this.appends % SWEEP_EVERY === 0) {
      this.sweep(this.byExchange, now)
      this.sweep(this.byOrder, now)
    }
    // A delivery's entries come together and name the same payment: one look-up per list for the run of them,
    // not per entry.
    let from = 0
    while (from < entries.length) {
      const first = entries[from] as Item
      let to = from + 1
      while (to < entries.length) {
        const entry = entries[to] as Item
        if (entry.exchangeNumber !== first.exchangeNumber || entry.orderNumber !== first.orderNumber) break
        to++
      }
      // Every trace of the run is kept, and must not keep its delivery's body alive.
      for (let i = from; i < to; i++) {
        const item = entries[i] as Item
        if (item instanceof DeliveryTrace) item.keepNumbers()
      }
      if (first.exchangeNumber !== null) this.add(this.byExchange, first.exchangeNumber, entries, from, to, now)
      if (first.orderNumber !== null) this.add(this.byOrder, first.orderNumber, entries, from, to, now)
      from = to
    }
  }

  read(query: TimelineQuery): TimelineEntry[] {
    const { kind, value, limit } = timelineKey(query)
    const kept = (kind === 'order' ? this.byOrder : this.byExchange).get(value)
    if (kept === undefined || this.expiryOf(kept) <= Date.now()) return []
    const entries: TimelineEntry[] = []
    for (const item of kept instanceof Trail ? kept.items : [kept]) {
      if (item instanceof DeliveryTrace) for (const entry of item.entries()) entries.push(entry)
      else entries.push(item)
    }
    return byTime(entries.slice(-limit))
  }

  private expiryOf(kept: Kept): number {
    return kept instanceof Trail ? kept.expiresAt : kept.answeredAt + this.retentionMs
  }

  /** Adds entries[from, to) to the list under `key`. */
  private add(map: Map<string, Kept>, key: string, entries: readonly Item[], from: number, to: number, now: number): void {
    const previous = map.get(key)
    // Read before the list below is given its new expiry: it decides whether the list moves to the map's end.
    const previousExpiry = previous === undefined ? 0 : this.expiryOf(previous)
    const live = previous !== undefined && previousExpiry > now ? previous : undefined
    const expiresAt = now + this.retentionMs
    const single = entries[from]
    let kept: Kept
    if (live === undefined && to - from === 1 && single instanceof DeliveryTrace) kept = single
    else {
      const trail = live instanceof Trail ? live : new Trail(live === undefined ? [] : [live], live === undefined ? 0 : live.size, 0)
      for (let i = from; i < to; i++) {
        const item = entries[i] as Item
        trail.items.push(item)
        trail.count += sizeOf(item)
      }
      // Trimmed in halves, not per entry: splicing a full list on every append made a busy order cost O(n) each
      // time. At least MAX_TIMELINE_ENTRIES entries stay, which is all a read returns.
      if (trail.count >= 2 * MAX_TIMELINE_ENTRIES) {
        let drop = 0
        while (trail.count - sizeOf(trail.items[drop] as Item) >= MAX_TIMELINE_ENTRIES) trail.count -= sizeOf(trail.items[drop++] as Item)
        trail.items.splice(0, drop)
      }
      trail.expiresAt = expiresAt
      kept = trail
    }
    // Moved to the end only when it has aged by 1/64 of the retention: deleting and re-adding a key on every
    // append makes V8 rehash a large Map every few operations (16 µs per append at 40k trails). The order stays
    // right to within that slack, so a sweep frees an expired list at most retention/64 late.
    // A new key is appended as it is: deleting it first would be one more fruitless probe of a large map.
    if (previous !== undefined && expiresAt - previousExpiry > this.retentionMs / 64) {
      map.delete(key)
      map.set(key, kept)
    } else if (kept !== previous) map.set(key, kept)
    if (map.size > this.maxTrails) map.delete(map.keys().next().value as string)
  }

  private sweep(map: Map<string, Kept>, now: number): void {
    for (const [key, kept] of map) {
      if (this.expiryOf(kept) > now) return
      map.delete(key)
    }
  }
}
