import { STATE_RANK, type PaymentState } from '../../core/payment.js'
import {
  askedAgain,
  type BookedPayment,
  checkedUid,
  type FindOptions,
  type PaymentRef,
  type CreatedPayment,
  type LookupNote,
  type OpenQuery,
  openQuery,
  type OpenSummary,
  type PaymentBook,
  type RecordOutcome,
  type SweepLock,
} from '../../contract/payment-book.js'
import { offerLocalBook } from '../../contract/local-book.js'
import { OldestFirst } from './oldest-first.js'

const FORGET_EVERY = 256

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/** Oldest created first, then by order_number, then by uid: the order every store lists open payments in. */
const byCreation = (a: BookedPayment, b: BookedPayment) =>
  a.createdAt.getTime() - b.createdAt.getTime() || compare(a.orderNumber, b.orderNumber) || compare(a.uid, b.uid)

/** One payment's key: order_number and uid, joined by a NUL, which a uid never holds (checkedUid). */
const keyOf = (payment: PaymentRef) => `${payment.orderNumber}\0${payment.uid}`

interface Closed {
  readonly booked: BookedPayment
  /** When the retention after its close ends (ms). */
  readonly until: number
}

/**
 * The memory store's book. Open and closed payments are kept apart: the sweeper's questions (listOpen, summary)
 * walk only the open ones, and the closed ones sit in the order they closed, so that retention and the cap forget
 * from the front without a search.
 */
export class MemoryPaymentBook implements PaymentBook {
  private readonly open = new Map<string, BookedPayment>()
  private readonly closed = new Map<string, Closed>()
  /**
   * Each order_number's payments, by uid (nearly always one), to their keys in open and closed: a find without
   * uid reads them, and a find or settle by uid takes the key made once (no string built per delivery).
   */
  private readonly keys = new Map<string, Map<string, string>>()
  private readonly oldestOpen = new OldestFirst(this.open)
  private readonly oldestClosed = new OldestFirst(this.closed)
  private records = 0

  constructor(
    private readonly retentionMs: number,
    private readonly maxEntries: number,
    private readonly lock: MemorySweepLock,
  ) {
    // The receiver reads the book on every new payment state: it gets the answer without a promise.
    offerLocalBook(this, { find: (orderNumber, uid) => this.findNow(orderNumber, uid), settle: (...args) => this.settleNow(...args) })
  }

  async record(payment: CreatedPayment): Promise<RecordOutcome> {
    const now = Date.now()
    // Not on every record: a walk from the front steps over the slots that forgetting there left (oldest-first.ts).
    // Until then held() reads an expired payment as gone, and the cap forgets it first.
    if (++this.records % FORGET_EVERY === 0) this.forgetExpired(now)
    checkedUid(payment.uid)
    const known = this.keyFor(payment)
    const held = known === undefined ? undefined : this.held(known, now)
    if (known === undefined || held === undefined) {
      if (this.open.size + this.closed.size >= this.maxEntries) this.makeRoom()
      const asked = [payment.amountSen]
      const key = known ?? keyOf(payment)
      const uids = this.keys.get(payment.orderNumber)
      if (uids === undefined) this.keys.set(payment.orderNumber, new Map([[payment.uid, key]]))
      else uids.set(payment.uid, key)
      this.open.set(key, { ...payment, askedSen: asked, status: 'open', state: null, lookups: 0, lastLookupAt: null, nextLookupAt: payment.createdAt })
      return 'created'
    }
    const again: BookedPayment = {
      ...held,
      ...payment,
      exchangeNumber: payment.exchangeNumber ?? held.exchangeNumber,
      askedSen: askedAgain(held.askedSen, payment.amountSen),
    }
    // In place: a closed one keeps its place among the closed (retention runs from its close).
    const closed = this.closed.get(known)
    if (closed !== undefined) this.closed.set(known, { ...closed, booked: again })
    else this.open.set(known, again)
    return held.askedSen.includes(payment.amountSen) ? 'known' : 'added'
  }

  async find(orderNumber: string, options?: FindOptions): Promise<BookedPayment | undefined> {
    return this.findNow(orderNumber, options?.uid)
  }

  /** By uid, or the most recently created of the order_number's payments (the only one, for one merchant). */
  private findNow(orderNumber: string, uid: string | undefined): BookedPayment | undefined {
    const uids = this.keys.get(orderNumber)
    if (uids === undefined) return undefined
    if (uid !== undefined) {
      const key = uids.get(uid)
      return key === undefined ? undefined : this.held(key)
    }
    let latest: BookedPayment | undefined
    for (const key of uids.values()) {
      const booked = this.held(key)
      if (booked !== undefined && (latest === undefined || booked.createdAt > latest.createdAt)) latest = booked
    }
    return latest
  }

  async settle(payment: PaymentRef, state: PaymentState, exchangeNumber: string): Promise<boolean> {
    return this.settleNow(payment, state, exchangeNumber)
  }

  private settleNow(payment: PaymentRef, state: PaymentState, exchangeNumber: string): boolean {
    const now = Date.now()
    const key = this.keyFor(payment)
    const booked = key === undefined ? undefined : this.held(key, now)
    if (key === undefined || booked === undefined) return false
    if (booked.state !== null && STATE_RANK[state] <= STATE_RANK[booked.state]) return booked.state === state
    const settled = { ...booked, exchangeNumber: booked.exchangeNumber ?? exchangeNumber, state }
    if (state !== 'pending') this.close(key, { ...settled, status: state, nextLookupAt: null }, now)
    // Abandoned with no result, and now a 99 came: open again, and due, or nothing would ever look at it.
    else if (booked.status !== 'open') this.reopen(key, { ...settled, status: 'open', nextLookupAt: new Date(now) })
    else this.open.set(key, { ...settled, status: 'open' })
    return true
  }

  async noteLookup(payment: PaymentRef, note: LookupNote, token: number): Promise<boolean> {
    const key = this.keyFor(payment)
    const booked = key === undefined ? undefined : this.open.get(key)
    if (key === undefined || booked === undefined || token < this.lock.newestToken) return false
    const looked = { ...booked, lookups: booked.lookups + 1, lastLookupAt: note.at }
    if (note.abandoned === true) this.close(key, { ...looked, status: 'abandoned', nextLookupAt: null }, Date.now())
    else this.open.set(key, { ...looked, nextLookupAt: note.nextLookupAt })
    return true
  }

  async listOpen(query?: OpenQuery): Promise<BookedPayment[]> {
    const { dueBy, limit } = openQuery(query)
    const found: BookedPayment[] = []
    for (const booked of this.open.values())
      if (dueBy === null || (booked.nextLookupAt !== null && booked.nextLookupAt.getTime() <= dueBy)) found.push(booked)
    return found.sort(byCreation).slice(0, limit)
  }

  async summary(): Promise<OpenSummary> {
    let oldest: Date | null = null
    for (const booked of this.open.values()) if (oldest === null || booked.createdAt < oldest) oldest = booked.createdAt
    return { open: this.open.size, oldestCreatedAt: oldest }
  }

  /** `now` only matters for a closed payment: the clock is read then, not for every new payment state. */
  private held(key: string, now?: number): BookedPayment | undefined {
    const open = this.open.get(key)
    if (open !== undefined) return open
    const closed = this.closed.get(key)
    return closed !== undefined && closed.until > (now ?? Date.now()) ? closed.booked : undefined
  }

  /** Moves a payment to the end of the closed ones (it closed now, or closed again with a later state). */
  private close(key: string, booked: BookedPayment, now: number): void {
    this.open.delete(key)
    this.closed.delete(key)
    this.closed.set(key, { booked, until: now + this.retentionMs })
  }

  private reopen(key: string, booked: BookedPayment): void {
    this.closed.delete(key)
    this.open.set(key, booked)
  }

  private forgetExpired(now: number): void {
    this.oldestOpen.restart()
    this.oldestClosed.restart()
    for (const [key, closed] of this.closed) {
      if (closed.until > now) return
      this.forget(key, closed.booked)
    }
  }

  private forget(key: string, booked: BookedPayment): void {
    this.open.delete(key)
    this.closed.delete(key)
    const uids = this.keys.get(booked.orderNumber)
    uids?.delete(booked.uid)
    if (uids?.size === 0) this.keys.delete(booked.orderNumber)
  }

  private keyFor(payment: PaymentRef): string | undefined {
    return this.keys.get(payment.orderNumber)?.get(payment.uid)
  }

  /**
   * At the cap, the payment closed longest ago goes first; only a book full of open payments forgets one of them
   * (the one recorded first), so that memory stays bounded as the store's maxEntries promises.
   */
  private makeRoom(): void {
    // Every entry the walks hand out is forgotten, so each one's next is the oldest left.
    const closed = this.oldestClosed.next()
    if (closed !== undefined) this.forget(closed[0], closed[1].booked)
    else {
      const open = this.oldestOpen.next()
      if (open !== undefined) this.forget(open[0], open[1])
    }
  }
}

/** In one process the lock only orders sweeps of this process: the fencing token still grows per holder. */
export class MemorySweepLock implements SweepLock {
  private holder: { owner: string; token: number; expiresAt: number } | undefined
  private lastToken = 0

  /** The fence: the book takes a sweeper's writes only under this token or a newer one. */
  get newestToken(): number {
    return this.lastToken
  }

  async acquire(owner: string, ttlMs: number): Promise<{ readonly token: number } | undefined> {
    const now = Date.now()
    if (this.holder !== undefined && this.holder.expiresAt > now) return undefined
    this.holder = { owner, token: ++this.lastToken, expiresAt: now + ttlMs }
    return { token: this.holder.token }
  }

  async renew(owner: string, token: number, ttlMs: number): Promise<boolean> {
    const now = Date.now()
    if (this.holder === undefined || this.holder.owner !== owner || this.holder.token !== token || this.holder.expiresAt <= now) return false
    this.holder = { owner, token, expiresAt: now + ttlMs }
    return true
  }

  async release(owner: string, token: number): Promise<void> {
    if (this.holder?.owner === owner && this.holder.token === token) this.holder = undefined
  }
}
