import { currentOfBits, STATE_BIT } from '../../core/payment.js'
import { ownCopy } from '../../core/values.js'
import { DEFAULT_RETENTION_MS } from '../../contract/store-options.js'
import { MAX_TIMELINE_ENTRIES, type TimelineEntry, type TimelineQuery, timelineKey } from '../../contract/timeline.js'
import { type Claim, isRegression, type LeaseRef, orderKey, type OrderRef, type ReceiverStore } from '../../contract/store.js'
import { forgetBatch, forgetOldest } from './cap.js'
import { MemoryPaymentBook } from './payment-book.js'
import { MemorySweepLock } from './sweep-lock.js'

export interface MemoryStoreOptions {
  /** How long handled states are remembered. Default 30 days: the service's redelivery window is not stated. */
  retentionMs?: number
  /**
   * At most this many payments are remembered (default 100,000: about 250 MB with their timelines). Past it, the
   * payments touched longest ago are forgotten first, 1 % of the cap at once, whatever their retention, so that
   * memory stays bounded; a payment whose claim is in flight is never forgotten. A redelivery of a forgotten payment runs its handlers again: keep the cap above the
   * payments you receive within the service's redelivery window, or use a shared store.
   */
  maxEntries?: number
}

export const DEFAULT_MAX_ENTRIES = 100_000

interface Payment {
  /** Its exchange_number, in a string of its own (ownCopy). */
  readonly key: string
  /** The states handled, as STATE_BIT bits. */
  handled: number
  lease: { readonly owner: string; readonly state: LeaseRef['state']; readonly until: number } | undefined
  /** When the states handled may be forgotten. */
  until: number
}

/**
 * The default store: one process, nothing survives a restart. Fine for development and single-instance apps; use
 * a Redis or PostgreSQL store when several processes receive deliveries.
 */
export function memoryStore(options: MemoryStoreOptions = {}): ReceiverStore {
  const retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS
  const maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES
  if (!(Number.isInteger(maxEntries) && maxEntries > 0)) throw new TypeError('maxEntries must be a positive integer')
  // NaN (Number() of an unset variable) would make every record read as nothing handled: no duplicate ever caught.
  if (!(typeof retentionMs === 'number' && retentionMs > 0)) throw new TypeError('retentionMs must be a positive number of milliseconds')
  // In the order they were last touched, so that the cap forgets from the front.
  const payments = new Map<string, Payment>()
  /** Orders whose success was handled: order key → exchange_number and until when. */
  const paid = new Map<string, { exchangeNumber: string; until: number }>()
  const timeline = new MemoryTimeline(retentionMs, maxEntries)
  const lock = new MemorySweepLock()
  const book = new MemoryPaymentBook(retentionMs, maxEntries, lock)

  /**
   * Moves a payment to the end (touched now). A completion past the cap also forgets a batch of the oldest, never
   * one under a lease: claims that are released again (probes of payments that never come) push no handled payment
   * out.
   */
  function touch(payment: Payment, now: number, completed = false): void {
    payments.delete(payment.key)
    payments.set(payment.key, payment)
    if (!completed || payments.size <= maxEntries) return
    // Down to a batch below the cap (cap.ts): the next walk waits for a batch of new payments.
    const keep = maxEntries + 1 - forgetBatch(maxEntries)
    forgetOldest(payments, payments.size - keep, (key, old) => key !== payment.key && (old.lease === undefined || old.lease.until <= now))
  }

  function paidByNow(payment: OrderRef & { readonly exchangeNumber: string }, now: number): string | null {
    const key = orderKey(payment)
    const order = key === undefined ? undefined : paid.get(key)
    return order !== undefined && order.until > now && order.exchangeNumber !== payment.exchangeNumber ? order.exchangeNumber : null
  }

  /**
   * The payment when `ref`'s owner still holds its lease. A lease past its end that nobody took over is still its
   * owner's (a claim of another delivery replaces it): a completion of handlers that outran leaseMs with no other
   * delivery meanwhile is recorded, as PostgreSQL does, or the redelivery that lease_lost asks for would run them again.
   */
  function held(ref: LeaseRef): Payment | undefined {
    const payment = payments.get(ref.exchangeNumber)
    const lease = payment?.lease
    return lease !== undefined && lease.owner === ref.owner && lease.state === ref.state ? payment : undefined
  }

  return {
    async claim(request): Promise<Claim> {
      const now = Date.now()
      const found = payments.get(request.exchangeNumber)
      const lease = found?.lease
      if (lease !== undefined && lease.until > now && lease.owner !== request.owner) return { outcome: 'busy', retryAfterMs: lease.until - now }
      // Past retention: forgotten, as if never seen.
      const handled = found === undefined || found.until <= now ? 0 : found.handled
      const current = currentOfBits(handled)
      if (current !== null && isRegression(current, request.state)) return { outcome: 'stale', currentState: current }
      if (handled & STATE_BIT[request.state]) return { outcome: 'duplicate' }
      const held = { owner: request.owner, state: request.state, until: now + request.leaseMs }
      touch({ key: found?.key ?? ownCopy(request.exchangeNumber), handled, lease: held, until: found?.until ?? 0 }, now)
      const key = orderKey(request)
      if (key === undefined) return { outcome: 'claimed', previousState: current }
      const paidBy = paidByNow(request, now)
      // What the merchant's client recorded: a record the book made from a result has nothing to check against.
      const booked = book.findNow(request.orderNumber as string, request.uid)
      return { outcome: 'claimed', previousState: current, paidBy, ...(booked === undefined || booked.kind === 'result' ? {} : { booked }) }
    },

    async paidBy(payment) {
      return paidByNow(payment, Date.now())
    },

    async complete(completion) {
      const payment = held(completion)
      if (payment === undefined) return false
      const now = Date.now()
      payment.handled |= STATE_BIT[completion.state]
      payment.lease = undefined
      payment.until = now + retentionMs
      touch(payment, now, true)
      const key = orderKey(completion)
      if (key !== undefined && completion.state === 'succeeded') {
        paid.delete(key)
        paid.set(ownCopy(key), { exchangeNumber: payment.key, until: now + retentionMs })
        if (paid.size > maxEntries) forgetOldest(paid, forgetBatch(maxEntries))
      }
      if (completion.orderNumber !== undefined)
        book.completeNow({ orderNumber: completion.orderNumber, uid: completion.uid }, completion.state, completion.exchangeNumber, completion.seen)
      return true
    },

    async release(ref) {
      const payment = held(ref)
      if (payment === undefined) return false
      payment.lease = undefined
      if (ref.failure !== undefined && ref.orderNumber !== undefined)
        book.failedNow({ orderNumber: ref.orderNumber, uid: ref.uid }, ref.state, ref.exchangeNumber, ref.failure)
      // A released claim of a payment with nothing handled takes no room; one with states handled is kept a whole
      // retention from now, as after a completion: its redelivery is coming.
      if (payment.handled === 0) payments.delete(ref.exchangeNumber)
      else payment.until = Date.now() + retentionMs
      return true
    },

    appendTimeline: async (entries) => timeline.append(entries),
    readTimeline: async (query) => timeline.read(query),
    paymentBook: () => book,
    sweepLock: () => lock,
  }
}

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
class MemoryTimeline {
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
