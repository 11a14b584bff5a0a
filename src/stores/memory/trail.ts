import { DeliveryTrace } from '../../contract/delivery-trace.js'
import { PAYMENT_STATES, type PaymentState } from '../../core/payment.js'
import { MAX_TIMELINE_ENTRIES, TIMELINE_EVENTS, TIMELINE_SOURCES, type TimelineEntry } from '../../contract/timeline.js'
import { type DeliveryFields, type PackedDelivery, packDelivery, packedAnsweredAfter, packedKind, packedRecord, unpackDelivery, withPackedRecord } from './packed-delivery.js'

/*
 * One payment's timeline in the memory store, in the payment's own entry (payments.ts) with its record. Kept for the
 * retention, so kept small: what the GC copies and walks for every payment kept was most of what the timeline cost.
 * Most payments have one delivery: its entry is one string holding the record and the delivery (packed-delivery.ts),
 * or, when the delivery cannot be packed, one KeptDelivery. A payment with more (or with entries that are no
 * delivery) keeps a KeptTrail: the lone delivery's string as it was, then objects (a trail is written to again, where
 * packing each delivery cost more than it saved).
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
 * One delivery's entries (received, verified when it was, the event that ended it), made into entries when read.
 * State, source, closing event, verified and status are one small integer (`kind`). Kept as this object in a trail,
 * and alone when it cannot be packed into a string (packed-delivery.ts): with an error code or message.
 * A plain object made by one literal (keptDelivery), not a class: V8 then sees that nearly all of them survive and
 * allocates them where long-lived objects go, instead of copying each through the young generation.
 */
export interface KeptDelivery extends DeliveryFields {
  /** The payment's record (payments.ts) while this is the payment's whole timeline; unused inside a trail. */
  record: number | undefined
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

function addDeliveryEntries(kept: DeliveryFields, into: TimelineEntry[], exchangeNumber: string | null): void {
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

/** An entry a custom caller wrote, or one delivery (packed when it was the payment's lone one). */
export type Item = TimelineEntry | KeptDelivery | PackedDelivery

/** Every entry has an event; a kept delivery has none of its own. */
const isDelivery = (item: TimelineEntry | KeptDelivery): item is KeptDelivery => (item as Partial<TimelineEntry>).event === undefined

/** A payment's timeline once it has more than one delivery, or an entry that is no delivery. */
export interface KeptTrail {
  /** The payment's record (payments.ts). */
  record: number | undefined
  readonly items: Item[]
  /** How many entries the items stand for. */
  count: number
  expiresAt: number
}

export type Timeline = PackedDelivery | KeptDelivery | KeptTrail

export const isTrail = (timeline: Timeline): timeline is KeptTrail => typeof timeline !== 'string' && (timeline as Partial<KeptTrail>).items !== undefined

/** The payment's record that the timeline holds (undefined while no state of it was handled). */
export const recordOf = (timeline: Timeline): number | undefined => (typeof timeline === 'string' ? packedRecord(timeline) : timeline.record)

/** The timeline holding `record` as its payment's record: the same object, or a new string. */
export function withRecord(timeline: Timeline, record: number | undefined): Timeline {
  if (typeof timeline === 'string') return withPackedRecord(timeline, record)
  timeline.record = record
  return timeline
}

/** How many entries a delivery of this `kind` stands for: received, verified when it was, and its closing event. */
const deliverySize = (kind: number): number => (kind & VERIFIED ? 3 : 2)

function sizeOf(item: Item): number {
  if (typeof item === 'string') return deliverySize(packedKind(item))
  return isDelivery(item) ? deliverySize(item.kind) : 1
}

/** When the timeline may be forgotten: retentionMs after it was last written (a lone delivery: after its answer). */
export function timelineExpiry(timeline: Timeline, retentionMs: number): number {
  if (typeof timeline === 'string') return ORIGIN + packedAnsweredAfter(timeline) + retentionMs
  return isTrail(timeline) ? timeline.expiresAt : answeredAt(timeline) + retentionMs
}

/** What the store keeps of an item it is given: a delivery's trace compactly, an entry as it is. */
const keptItem = (item: TimelineEntry | DeliveryTrace): Item => (item instanceof DeliveryTrace ? keptDelivery(item) : item)

/** A payment's lone delivery, holding its record: packed into a string where it can be. */
function loneDelivery(trace: DeliveryTrace, record: number | undefined): PackedDelivery | KeptDelivery {
  const kept = keptDelivery(trace)
  kept.record = record
  return packDelivery(kept, record) ?? kept
}

/**
 * The timeline with given[from, to) added: to `timeline` while it lives (past retention, it starts over), holding
 * `record` as its payment's record.
 */
export function withItems(
  timeline: Timeline | undefined,
  given: readonly (TimelineEntry | DeliveryTrace)[],
  from: number,
  to: number,
  now: number,
  retentionMs: number,
  record: number | undefined,
): Timeline {
  const live = timeline !== undefined && timelineExpiry(timeline, retentionMs) > now ? timeline : undefined
  // A lone delivery is the payment's whole timeline, holding its record.
  if (live === undefined && to - from === 1 && given[from] instanceof DeliveryTrace) return loneDelivery(given[from], record)
  let trail: KeptTrail
  if (live !== undefined && isTrail(live)) trail = live
  // The lone delivery joins the trail as it is: the record it holds is not read there.
  else trail = { record: undefined, items: live === undefined ? [] : [live], count: live === undefined ? 0 : sizeOf(live), expiresAt: 0 }
  for (let i = from; i < to; i++) {
    const item = keptItem(given[i] as TimelineEntry | DeliveryTrace)
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
  trail.record = record
  return trail
}

/**
 * Adds the timeline's entries to `into`: all of them, or those naming `orderNumber`. Deliveries, kept without
 * their exchange_number, are given `exchangeNumber`.
 */
export function addEntries(timeline: Timeline, exchangeNumber: string | null, into: TimelineEntry[], orderNumber?: string): void {
  for (const kept of isTrail(timeline) ? timeline.items : [timeline]) {
    // A packed delivery ends with its order number: one naming another is passed over without unpacking it.
    if (orderNumber !== undefined && typeof kept === 'string' && !kept.endsWith(orderNumber)) continue
    const item = typeof kept === 'string' ? unpackDelivery(kept) : kept
    if (orderNumber !== undefined && item.orderNumber !== orderNumber) continue
    if (isDelivery(item)) addDeliveryEntries(item, into, exchangeNumber)
    else into.push(item)
  }
}
