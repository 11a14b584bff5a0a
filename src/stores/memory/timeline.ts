import { detached } from '../../contract/detached.js'
import type { DeliveryTrace } from '../../contract/delivery-trace.js'
import { byTime, type TimelineEntry, type TimelineQuery, timelineKey } from '../../contract/timeline.js'
import { OldestFirst } from './oldest-first.js'
import { type Entry, Lease, type Payments } from './payments.js'
import { addEntries, recordOf, type Timeline, timelineExpiry, withItems } from './trail.js'

/** What the receiver and custom callers write: entries, or a delivery's entries as its trace. */
type Given = TimelineEntry | DeliveryTrace

const SWEEP_EVERY = 256

/**
 * The memory store's timeline. A payment's entries live in the payment's own entry (payments.ts), beside its
 * record: writing a delivery's trace costs one look-up of a key its claim and completion have just touched, and
 * the timeline is forgotten with the payment, a retention after either was last written or when the cap needs the
 * room. Reading by exchange_number is that look-up; reading by order_number walks the payments (an index kept for
 * every delivery would cost each one a second map as large as the store's; reads are rare).
 * Entries without an exchange_number (a custom caller's) have no payment: they are kept by order_number here,
 * under the same retention and cap.
 */
export class MemoryTimeline {
  private readonly byOrder = new Map<string, Timeline>()
  private readonly oldestByOrder = new OldestFirst(this.byOrder)
  private appends = 0

  constructor(private readonly payments: Payments) {}

  append(items: readonly Given[]): void {
    const now = Date.now()
    if (++this.appends % SWEEP_EVERY === 0) this.sweepByOrder(now)
    // A delivery's entries come together and name the same payment: one look-up for the run of them, not per entry.
    let from = 0
    while (from < items.length) {
      const first = items[from] as Given
      let to = from + 1
      while (to < items.length && (items[to] as Given).exchangeNumber === first.exchangeNumber) to++
      if (first.exchangeNumber === null) this.addByOrder(items, from, to, now)
      else this.addToPayment(first.exchangeNumber, items, from, to, now)
      from = to
    }
  }

  read(query: TimelineQuery): TimelineEntry[] {
    const { kind, value, limit } = timelineKey(query)
    const now = Date.now()
    const entries: TimelineEntry[] = []
    if (kind === 'exchange') {
      const timeline = this.live(this.payments.entries.get(value), now)
      if (timeline !== undefined) addEntries(timeline, value, entries)
      // The latest written, then in time order: a payment's list is in the order it was written.
      return byTime(entries.slice(-limit))
    }
    for (const [key, entry] of this.payments.entries) {
      // A lone delivery's string ends with its order number (packed-delivery.ts): the others are passed over unread.
      if (typeof entry === 'string' && !entry.endsWith(value)) continue
      const timeline = this.live(entry, now)
      if (timeline !== undefined) addEntries(timeline, key, entries, value)
    }
    const unnamed = this.byOrder.get(value)
    if (unnamed !== undefined && timelineExpiry(unnamed, this.payments.retentionMs) > now) addEntries(unnamed, null, entries)
    return byTime(entries).slice(-limit)
  }

  /** The timeline an entry holds, unless it is past retention. */
  private live(entry: Entry | undefined, now: number): Timeline | undefined {
    const timeline = entry === undefined || typeof entry === 'number' ? undefined : entry instanceof Lease ? entry.timeline : entry
    return timeline !== undefined && timelineExpiry(timeline, this.payments.retentionMs) > now ? timeline : undefined
  }

  /** Adds items[from, to), which name exchange_number `key`, to that payment's entry (made when it has none). */
  private addToPayment(key: string, items: readonly Given[], from: number, to: number, now: number): void {
    const { entries, retentionMs, maxEntries } = this.payments
    const found = entries.get(key)
    if (found instanceof Lease) {
      // A claim in flight carries the timeline to its completion or release.
      found.timeline = withItems(found.timeline, items, from, to, now, retentionMs, undefined)
      return
    }
    if (found === undefined) {
      // A new key is kept for the retention: detached, or it keeps its delivery's whole body alive (contract/detached.ts).
      entries.set(detached(key), withItems(undefined, items, from, to, now, retentionMs, undefined))
      if (entries.size > maxEntries) this.payments.makeRoom(now, key, maxEntries)
      return
    }
    const before = this.payments.expiresAt(found)
    const record = typeof found === 'number' ? found : recordOf(found)
    const timeline = withItems(typeof found === 'number' ? undefined : found, items, from, to, now, retentionMs, record)
    // Moved to the end (the cap forgets from the front, the sweep stops at the first payment still kept) only when
    // it has aged by 1/64 of the retention: deleting and re-adding a key on every write makes V8 rehash a large
    // Map every few operations. A payment's entries are written just after its completion, which moved it.
    if (now + retentionMs - before > retentionMs / 64) {
      entries.delete(key)
      entries.set(detached(key), timeline)
    } else if (timeline !== found) entries.set(key, timeline)
  }

  private addByOrder(items: readonly Given[], from: number, to: number, now: number): void {
    const { retentionMs, maxEntries } = this.payments
    // Runs are cut by exchange_number only: entries without one may name different orders.
    for (let i = from; i < to; i++) {
      const item = items[i] as Given
      if (item.orderNumber === null) continue
      const key = item.orderNumber
      const previous = this.byOrder.get(key)
      const before = previous === undefined ? 0 : timelineExpiry(previous, retentionMs)
      const timeline = withItems(previous, items, i, i + 1, now, retentionMs, undefined)
      // Moved to the end as the payments' entries are (addToPayment).
      if (previous !== undefined && now + retentionMs - before > retentionMs / 64) {
        this.byOrder.delete(key)
        this.byOrder.set(detached(key), timeline)
      } else if (timeline !== previous) this.byOrder.set(previous === undefined ? detached(key) : key, timeline)
      if (this.byOrder.size > maxEntries) this.byOrder.delete((this.oldestByOrder.next() as [string, Timeline])[0])
    }
  }

  private sweepByOrder(now: number): void {
    this.oldestByOrder.restart()
    for (const [key, timeline] of this.byOrder) {
      if (timelineExpiry(timeline, this.payments.retentionMs) > now) return
      this.byOrder.delete(key)
    }
  }
}
