import { type PaymentState, STATE_RANK } from '../../core/payment.js'
import { ownCopy } from '../../core/values.js'
import {
  byNewest,
  clearsFailures,
  failureText,
  listQuery,
  noStatuses,
  openByAge,
  overviewWindow,
  pageOf,
  perHour,
  isPaidFailing,
  matchesList,
  HOUR_MS,
} from '../../contract/book-query.js'
import {
  askedAgain,
  type BookedPayment,
  type BookOverview,
  checkedUid,
  type CreatedPayment,
  type FailureNote,
  type FindOptions,
  type ListQuery,
  type LookupNote,
  type OpenQuery,
  openQuery,
  type OpenSummary,
  type OverviewWindow,
  type PaymentBook,
  type PaymentPage,
  type PaymentRef,
  type RecordOutcome,
  type SeenResult,
} from '../../contract/payment-book.js'
import type { MemorySweepLock } from './sweep-lock.js'
import { forgetBatch } from './cap.js'

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/** Oldest created first, then by order_number, then by uid: the order every store lists open payments in. */
export const byCreation = (a: BookedPayment, b: BookedPayment) =>
  a.createdAt.getTime() - b.createdAt.getTime() || compare(a.orderNumber, b.orderNumber) || compare(a.uid, b.uid)

/** One payment's key: order_number and uid, joined by a NUL, which a uid never holds (checkedUid). */
const keyOf = (payment: PaymentRef) => `${payment.orderNumber}\0${payment.uid}`

/** A new open record's fields but those of its kind (how it came, what was attached, the amounts asked). */
function fresh(
  payment: Pick<CreatedPayment, 'orderNumber' | 'uid' | 'amountSen' | 'exchangeNumber' | 'buyerEmail' | 'buyerName'>,
  createdAt: Date,
): Omit<BookedPayment, 'kind' | 'attached' | 'askedSen'> {
  return {
    orderNumber: payment.orderNumber,
    uid: payment.uid,
    amountSen: payment.amountSen,
    createdAt,
    exchangeNumber: payment.exchangeNumber,
    status: 'open',
    state: null,
    lookups: 0,
    lastLookupAt: null,
    nextLookupAt: createdAt,
    buyerEmail: payment.buyerEmail ?? null,
    buyerName: payment.buyerName ?? null,
    failures: 0,
    lastFailure: null,
    settledAt: null,
  }
}

/** What a result record attached: nothing, one object for all of them. */
const NOTHING_ATTACHED = Object.freeze({})

/** The buyer a result names, in strings of their own (ownCopy). */
function buyerOf(seen: SeenResult | undefined): { buyerEmail: string | null; buyerName: string | null } {
  const copy = (text: string | null | undefined) => (text == null ? null : ownCopy(text))
  return { buyerEmail: copy(seen?.buyerEmail), buyerName: copy(seen?.buyerName) }
}

interface Kept {
  booked: BookedPayment
  /** When the retention after its close ends (ms); Infinity while open. */
  until: number
}

/**
 * The memory store's book: one Map of payments in the order they were recorded or closed, so that the cap forgets
 * the payment closed longest ago first, and an index of each order_number's payments by uid.
 */
export class MemoryPaymentBook implements PaymentBook {
  private readonly payments = new Map<string, Kept>()
  // Keys in an array: an order has one or a few (a Set per order cost more than the payment's record).
  private readonly byOrder = new Map<string, string[]>()

  constructor(
    private readonly retentionMs: number,
    private readonly maxEntries: number,
    private readonly lock: MemorySweepLock,
  ) {}

  async record(payment: CreatedPayment): Promise<RecordOutcome> {
    const key = keyOf({ orderNumber: payment.orderNumber, uid: checkedUid(payment.uid) })
    const held = this.held(key)
    if (held === undefined) {
      this.forget(key)
      if (this.payments.size >= this.maxEntries) this.makeRoom()
      this.add(key, { ...fresh(payment, payment.createdAt), kind: payment.kind, attached: payment.attached, askedSen: [payment.amountSen] })
      return 'created'
    }
    // A second record shows the later creation and keeps status, state and lookups (contract/payment-book.ts).
    const kept = this.payments.get(key) as Kept
    kept.booked = {
      ...held,
      ...payment,
      exchangeNumber: payment.exchangeNumber ?? held.exchangeNumber,
      askedSen: askedAgain(held.askedSen, payment.amountSen),
      buyerEmail: payment.buyerEmail ?? held.buyerEmail,
      buyerName: payment.buyerName ?? held.buyerName,
    }
    return held.askedSen.includes(payment.amountSen) ? 'known' : 'added'
  }

  async find(orderNumber: string, options?: FindOptions): Promise<BookedPayment | undefined> {
    return this.findNow(orderNumber, options?.uid)
  }

  /** By uid, or the most recently created of the order_number's payments (the only one, for one merchant). */
  findNow(orderNumber: string, uid: string | undefined): BookedPayment | undefined {
    if (uid !== undefined) return this.held(keyOf({ orderNumber, uid }))
    let latest: BookedPayment | undefined
    for (const key of this.byOrder.get(orderNumber) ?? []) {
      const booked = this.held(key)
      // Created at the same instant: the smallest uid, as the other stores choose.
      const at = booked?.createdAt.getTime()
      if (booked !== undefined && (latest === undefined || (at as number) > latest.createdAt.getTime() || (at === latest.createdAt.getTime() && booked.uid < latest.uid))) latest = booked
    }
    return latest
  }

  async settle(payment: PaymentRef, state: PaymentState, exchangeNumber: string): Promise<boolean> {
    return this.settleNow(payment, state, exchangeNumber)
  }

  settleNow(payment: PaymentRef, state: PaymentState, exchangeNumber: string, seen?: SeenResult): boolean {
    const key = keyOf(payment)
    const held = this.held(key)
    if (held === undefined) return false
    // Handled: the failures of this rank or lower are over, and a result tells the buyer the creation did not.
    const learnt = buyerOf(seen)
    const booked: BookedPayment = {
      ...held,
      failures: clearsFailures(state, held.lastFailure?.state ?? null) ? 0 : held.failures,
      buyerEmail: held.buyerEmail ?? learnt.buyerEmail,
      buyerName: held.buyerName ?? learnt.buyerName,
    }
    ;(this.payments.get(key) as Kept).booked = booked
    if (booked.state !== null && STATE_RANK[state] <= STATE_RANK[booked.state]) return booked.state === state
    const now = new Date()
    const settled = { ...booked, exchangeNumber: booked.exchangeNumber ?? ownCopy(exchangeNumber), state, settledAt: now }
    // A failure settled while a success of the order is failing its handlers (a race with a claim taken before that
    // success came) leaves it open as a 99 does: closed, nothing would bring the success again.
    const closes = state !== 'pending' && !(state === 'failed' && isPaidFailing(booked))
    if (closes) this.close(key, { ...settled, status: state, nextLookupAt: null })
    // Abandoned with no result, and now a 99 came: open again, and due, or nothing would ever look at it.
    else if (booked.status !== 'open') this.payments.set(key, { booked: { ...settled, status: 'open', nextLookupAt: now }, until: Number.POSITIVE_INFINITY })
    else (this.payments.get(key) as Kept).booked = { ...settled, status: 'open' }
    return true
  }

  /**
   * A completion's part (ReceiverStore.complete): settles the order's booked payment, or records the result of an
   * order the book does not hold (kind `result`) and settles that.
   */
  completeNow(order: { orderNumber: string; uid: string | undefined }, state: PaymentState, exchangeNumber: string, seen: SeenResult | undefined): void {
    const booked = this.findNow(order.orderNumber, order.uid) ?? (seen === undefined ? undefined : this.seenNow(order.orderNumber, exchangeNumber, seen))
    if (booked !== undefined) this.settleNow(booked, state, exchangeNumber, seen)
  }

  /** A release's part after a handler failure: counted on the order's booked payment, recorded first if need be. */
  failedNow(order: { orderNumber: string; uid: string | undefined }, state: PaymentState, exchangeNumber: string, failure: FailureNote): void {
    const booked = this.findNow(order.orderNumber, order.uid) ?? (failure.seen === undefined ? undefined : this.seenNow(order.orderNumber, exchangeNumber, failure.seen))
    if (booked === undefined) return
    const kept = this.payments.get(keyOf(booked)) as Kept
    const now = new Date()
    kept.booked = {
      ...booked,
      failures: booked.failures + 1,
      lastFailure: { at: now, state, message: failureText(failure.message) },
      buyerEmail: booked.buyerEmail ?? buyerOf(failure.seen).buyerEmail,
      buyerName: booked.buyerName ?? buyerOf(failure.seen).buyerName,
    }
    // Abandoned (or failed, and now a success), and a result came whose handlers failed: open again and due, or
    // nothing would bring it again.
    if (booked.status === 'abandoned' || (booked.status === 'failed' && state === 'succeeded')) this.payments.set(keyOf(booked), { booked: { ...kept.booked, status: 'open', nextLookupAt: now }, until: Number.POSITIVE_INFINITY })
  }

  /**
   * A `result` record of an order first known from a verified result: open, until its state is settled. Its text is
   * copied (ownCopy): cut from a delivery's body, it would keep the whole body in memory for as long as it is kept.
   */
  private seenNow(orderNumber: string, exchangeNumber: string, seen: SeenResult): BookedPayment {
    const uid = ownCopy(seen.uid ?? '')
    const key = keyOf({ orderNumber, uid })
    this.forget(key)
    if (this.payments.size >= this.maxEntries) this.makeRoom()
    const now = new Date()
    const booked: BookedPayment = {
      ...fresh({ orderNumber: ownCopy(orderNumber), uid, amountSen: seen.amountSen ?? 0, exchangeNumber: ownCopy(exchangeNumber), ...buyerOf(seen) }, now),
      kind: 'result',
      attached: NOTHING_ATTACHED,
      askedSen: seen.amountSen === null ? [] : [seen.amountSen],
    }
    return this.add(key, booked)
  }

  async noteLookup(payment: PaymentRef, note: LookupNote, token: number): Promise<boolean> {
    const key = keyOf(payment)
    const booked = this.held(key)
    if (booked === undefined || booked.status !== 'open' || token < this.lock.newestToken) return false
    const looked = { ...booked, lookups: booked.lookups + 1, lastLookupAt: note.at }
    if (note.abandoned === true) this.close(key, { ...looked, status: 'abandoned', nextLookupAt: null })
    else (this.payments.get(key) as Kept).booked = { ...looked, nextLookupAt: note.nextLookupAt }
    return true
  }

  async listOpen(query?: OpenQuery): Promise<BookedPayment[]> {
    const { dueBy, limit } = openQuery(query)
    const found = this.all().filter(
      (booked) => booked.status === 'open' && (dueBy === null || (booked.nextLookupAt !== null && booked.nextLookupAt.getTime() <= dueBy)),
    )
    return found.sort(byCreation).slice(0, limit)
  }

  async list(query?: ListQuery): Promise<PaymentPage> {
    const checked = listQuery(query)
    const found = this.all().filter((booked) => matchesList(booked, checked))
    return pageOf(found.sort(byNewest).slice(0, checked.limit + 1), checked.limit)
  }

  async overview(window: OverviewWindow): Promise<BookOverview> {
    const { from, to } = overviewWindow(window)
    const byStatus = noStatuses()
    const settled = new Map<string, { hour: number; state: PaymentState; count: number }>()
    const open: number[] = []
    let [paidFailing, failing] = [0, 0]
    for (const booked of this.all()) {
      const created = booked.createdAt.getTime()
      if (created >= from && created < to) byStatus[booked.status]++
      if (booked.status === 'open') open.push(created)
      if (booked.failures > 0) failing++
      if (isPaidFailing(booked)) paidFailing++
      const at = booked.settledAt?.getTime()
      if (at === undefined || booked.state === null || at < from || at >= to) continue
      const hour = Math.floor(at / HOUR_MS) * HOUR_MS
      const count = settled.get(`${hour}:${booked.state}`) ?? { hour, state: booked.state, count: 0 }
      settled.set(`${hour}:${booked.state}`, { ...count, count: count.count + 1 })
    }
    return { byStatus, paidFailing, failing, openByAge: openByAge(open, Date.now()), perHour: perHour({ from, to }, [...settled.values()]) }
  }

  async summary(): Promise<OpenSummary> {
    const open = this.all().filter((booked) => booked.status === 'open')
    const oldest = open.reduce<Date | null>((first, booked) => (first === null || booked.createdAt < first ? booked.createdAt : first), null)
    return { open: open.length, oldestCreatedAt: oldest }
  }

  /** Every payment still kept. */
  all(): BookedPayment[] {
    const now = Date.now()
    return [...this.payments.values()].filter((kept) => kept.until > now).map((kept) => kept.booked)
  }

  private held(key: string): BookedPayment | undefined {
    const kept = this.payments.get(key)
    return kept !== undefined && kept.until > Date.now() ? kept.booked : undefined
  }

  private add(key: string, booked: BookedPayment): BookedPayment {
    this.payments.set(key, { booked, until: Number.POSITIVE_INFINITY })
    const keys = this.byOrder.get(booked.orderNumber)
    if (keys === undefined) this.byOrder.set(booked.orderNumber, [key])
    else if (!keys.includes(key)) keys.push(key)
    return booked
  }

  /** Moves a payment to the end, closed now: retention runs from its close, and the cap forgets from the front. */
  private close(key: string, booked: BookedPayment): void {
    this.payments.delete(key)
    this.payments.set(key, { booked, until: Date.now() + this.retentionMs })
  }

  private forget(key: string): void {
    const kept = this.payments.get(key)
    if (kept === undefined) return
    this.payments.delete(key)
    const keys = this.byOrder.get(kept.booked.orderNumber)?.filter((one) => one !== key) ?? []
    if (keys.length === 0) this.byOrder.delete(kept.booked.orderNumber)
    else this.byOrder.set(kept.booked.orderNumber, keys)
  }

  /**
   * At the cap, a batch in one walk (cap.ts): what expired or closed, longest ago first, else (all open) those
   * recorded first.
   */
  private makeRoom(): void {
    const now = Date.now()
    const batch = forgetBatch(this.maxEntries)
    const closed: string[] = []
    const open: string[] = []
    for (const [key, kept] of this.payments) {
      if (kept.until <= now || kept.booked.status !== 'open') closed.push(key)
      else if (open.length < batch) open.push(key)
      if (closed.length === batch) break
    }
    for (const key of closed.length > 0 ? closed : open) this.forget(key)
  }
}
