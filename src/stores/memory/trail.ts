import { DeliveryTrace } from '../../contract/delivery-trace.js'
import { PAYMENT_STATES, type PaymentState } from '../../core/payment.js'
import { MAX_TIMELINE_ENTRIES, TIMELINE_EVENTS, TIMELINE_SOURCES, type TimelineEntry } from '../../contract/timeline.js'

/*
 * One payment's timeline in the memory store, in the payment's own entry (payments.ts) with its record. Kept for the
 * retention, so kept small: what the GC copies and walks for every payment kept was most of what the timeline cost.
 * Most payments have one delivery: its entry is one KeptDelivery, the record beside the delivery's times and
 * outcome. A payment with more (or with entries that are no delivery) keeps a KeptTrail.
 */

// Times are kept as milliseconds since this module was loaded: small integers for 24 days of uptime, where a
// timestamp would be a boxed number of its own (a later one is as correct, only boxed).
const ORIGIN = Date.now()

const STATES: readonly (PaymentState | null)[] = [null, ...PAYMENT_STATES]

/**
 * One of the values a KeptDelivery packs into its `kind`: the value's place in `list`, in as many bits as the list
 * needs, from bit `shift` on; `end` is where the next one starts. Sized from the lists, so a new event or source
 * widens the field instead of spilling into the next.
 */
class Packed<T> {
  readonly end: number
  private readonly mask: number
  private readonly codes: Map<T, number>

  constructor(
    private readonly list: readonly T[],
    private readonly shift: number,
  ) {
    const bits = Math.max(1, Math.ceil(Math.log2(list.length)))
    this.mask = (1 << bits) - 1
    this.end = shift + bits
    this.codes = new Map(list.map((value, at) => [value, at]))
  }

  pack(value: T): number {
    const at = this.codes.get(value)
    if (at === undefined) throw new TypeError(`the timeline holds an unknown value ${String(value)}`)
    return at << this.shift
  }

  unpack(kind: number): T {
    return this.list[(kind >> this.shift) & this.mask] as T
  }
}
const STATE = new Packed(STATES, 0)
const SOURCE = new Packed(TIMELINE_SOURCES, STATE.end)
const EVENT = new Packed(TIMELINE_EVENTS, SOURCE.end)
const VERIFIED = 1 << EVENT.end
/** The HTTP status answered, in the bits above: a small integer still (three digits, below 1024). */
const STATUS_SHIFT = EVENT.end + 1

/**
 * One delivery's entries (received, verified when it was, the event that ended it), kept as one object and made
 * into entries when read. State, source, closing event, verified and status are one small integer (`kind`).
 * A plain object made by one literal (keptDelivery), not a class: V8 then sees that nearly all of them survive and
 * allocates them where long-lived objects go, instead of copying each through the young generation, which was most
 * of what keeping the timeline cost a delivery in GC.
 */
export interface KeptDelivery {
  /** The payment's record (payments.ts) while this is the payment's whole timeline; unused inside a trail. */
  record: number | undefined
  readonly orderNumber: string | null
  readonly receivedAfter: number
  readonly verifiedAfter: number
  readonly answeredAfter: number
  readonly kind: number
  readonly attemptTag: string
  readonly attemptNumber: number
  readonly code: string | null
  readonly message: string | null
}

/**
 * What the store keeps of a delivery's trace. The receiver's traces hold the order number as a string of its own
 * already (receiver/timeline.ts), kept as it is. The exchange_number is the payment's key, given back when read.
 */
export function keptDelivery(trace: DeliveryTrace): KeptDelivery {
  const kind =
    STATE.pack(trace.state) | SOURCE.pack(trace.source) | EVENT.pack(trace.closing) | (trace.verified ? VERIFIED : 0) | (trace.status << STATUS_SHIFT)
  return {
    record: undefined,
    orderNumber: trace.orderNumber,
    receivedAfter: trace.receivedAt - ORIGIN,
    verifiedAfter: trace.verifiedAfter,
    answeredAfter: trace.answeredAfter,
    kind,
    attemptTag: trace.attemptTag,
    attemptNumber: trace.attemptNumber,
    code: trace.code,
    message: trace.message,
  }
}

const answeredAt = (kept: KeptDelivery): number => ORIGIN + kept.receivedAfter + kept.answeredAfter

function addDeliveryEntries(kept: KeptDelivery, into: TimelineEntry[], exchangeNumber: string | null): void {
  const { kind, orderNumber } = kept
  const receivedAt = ORIGIN + kept.receivedAfter
  const attempt = `${kept.attemptTag}-${kept.attemptNumber}`
  const verified = (kind & VERIFIED) !== 0
  const entry = (at: number, event: TimelineEntry['event'], code: string | null, status: number | null, message: string | null): TimelineEntry => ({
    at: new Date(at),
    event,
    exchangeNumber,
    orderNumber,
    state: STATE.unpack(kind),
    source: SOURCE.unpack(kind),
    attempt,
    verified,
    code,
    status,
    message,
  })
  into.push(entry(receivedAt, 'received', null, null, null))
  if (verified) into.push(entry(receivedAt + kept.verifiedAfter, 'verified', null, null, null))
  into.push(entry(receivedAt + kept.answeredAfter, EVENT.unpack(kind), kept.code, kind >> STATUS_SHIFT, kept.message))
}

/** An entry a custom caller wrote, or one delivery. */
export type Item = TimelineEntry | KeptDelivery

/** Every entry has an event; a kept delivery has none of its own. */
const isDelivery = (item: Item): item is KeptDelivery => (item as Partial<TimelineEntry>).event === undefined

/** A payment's timeline once it has more than one delivery, or an entry that is no delivery. */
export interface KeptTrail {
  /** The payment's record (payments.ts). */
  record: number | undefined
  readonly items: Item[]
  /** How many entries the items stand for. */
  count: number
  expiresAt: number
}

export type Timeline = KeptDelivery | KeptTrail

export const isTrail = (timeline: Timeline): timeline is KeptTrail => (timeline as Partial<KeptTrail>).items !== undefined

const sizeOf = (item: Item): number => (isDelivery(item) ? (item.kind & VERIFIED ? 3 : 2) : 1)

/** When the timeline may be forgotten: retentionMs after it was last written (a lone delivery: after its answer). */
export function timelineExpiry(timeline: Timeline, retentionMs: number): number {
  return isTrail(timeline) ? timeline.expiresAt : answeredAt(timeline) + retentionMs
}

/** What the store keeps of an item it is given: a delivery's trace compactly, an entry as it is. */
const keptItem = (item: TimelineEntry | DeliveryTrace): Item => (item instanceof DeliveryTrace ? keptDelivery(item) : item)

/**
 * The timeline with given[from, to) added: to `timeline` while it lives (past retention, it starts over). The caller
 * sets the payment's record on what it returns.
 */
export function withItems(
  timeline: Timeline | undefined,
  given: readonly (TimelineEntry | DeliveryTrace)[],
  from: number,
  to: number,
  now: number,
  retentionMs: number,
): Timeline {
  const live = timeline !== undefined && timelineExpiry(timeline, retentionMs) > now ? timeline : undefined
  let first: Item | undefined
  if (live === undefined && to - from === 1) {
    first = keptItem(given[from] as TimelineEntry | DeliveryTrace)
    if (isDelivery(first)) return first
  }
  let trail: KeptTrail
  if (live !== undefined && isTrail(live)) trail = live
  else trail = { record: undefined, items: live === undefined ? [] : [live], count: live === undefined ? 0 : sizeOf(live), expiresAt: 0 }
  for (let i = from; i < to; i++) {
    const item = i === from && first !== undefined ? first : keptItem(given[i] as TimelineEntry | DeliveryTrace)
    trail.items.push(item)
    trail.count += sizeOf(item)
  }
  // Trimmed in halves, not per entry: splicing a full list on every append made a busy payment cost O(n) each
  // time. At least MAX_TIMELINE_ENTRIES entries stay, which is all a read returns.
  if (trail.count >= 2 * MAX_TIMELINE_ENTRIES) {
    let drop = 0
    while (trail.count - sizeOf(trail.items[drop] as Item) >= MAX_TIMELINE_ENTRIES) trail.count -= sizeOf(trail.items[drop++] as Item)
    trail.items.splice(0, drop)
  }
  trail.expiresAt = now + retentionMs
  return trail
}

/**
 * Adds the timeline's entries to `into`: all of them, or those naming `orderNumber`. Deliveries, kept without
 * their exchange_number, are given `exchangeNumber`.
 */
export function addEntries(timeline: Timeline, exchangeNumber: string | null, into: TimelineEntry[], orderNumber?: string): void {
  for (const item of isTrail(timeline) ? timeline.items : [timeline]) {
    if (orderNumber !== undefined && item.orderNumber !== orderNumber) continue
    if (isDelivery(item)) addDeliveryEntries(item, into, exchangeNumber)
    else into.push(item)
  }
}
