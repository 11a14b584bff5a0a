import { byTime, MAX_TIMELINE_ENTRIES, type TimelineEntry, type TimelineQuery, timelineKey } from './timeline.js'

interface Trail {
  readonly entries: TimelineEntry[]
  expiresAt: number
}

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

  append(entries: readonly TimelineEntry[]): void {
    const now = Date.now()
    if (++this.appends % SWEEP_EVERY === 0) this.sweep(now)
    for (const entry of entries) {
      if (entry.exchangeNumber !== null) this.add(`x:${entry.exchangeNumber}`, entry, now)
      if (entry.orderNumber !== null) this.add(`o:${entry.orderNumber}`, entry, now)
    }
  }

  read(query: TimelineQuery): TimelineEntry[] {
    const { kind, value, limit } = timelineKey(query)
    const trail = this.trails.get(`${kind === 'order' ? 'o' : 'x'}:${value}`)
    if (trail === undefined || trail.expiresAt <= Date.now()) return []
    return byTime(trail.entries.slice(-Math.min(limit, MAX_TIMELINE_ENTRIES)))
  }

  private add(key: string, entry: TimelineEntry, now: number): void {
    let trail = this.trails.get(key)
    if (trail === undefined || trail.expiresAt <= now) trail = { entries: [], expiresAt: 0 }
    trail.entries.push(entry)
    // Trimmed in halves, not per entry: splicing a full list on every append made a busy order cost O(n) each time.
    if (trail.entries.length >= 2 * MAX_TIMELINE_ENTRIES) trail.entries.splice(0, trail.entries.length - MAX_TIMELINE_ENTRIES)
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
