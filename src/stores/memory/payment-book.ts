import { STATE_RANK, type PaymentState } from '../../core/payment.js'
import {
  askedAgain,
  type BookedPayment,
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

/** Oldest created first, then by order_number: the order every store lists open payments in. */
const byCreation = (a: BookedPayment, b: BookedPayment) =>
  a.createdAt.getTime() - b.createdAt.getTime() || (a.orderNumber < b.orderNumber ? -1 : a.orderNumber > b.orderNumber ? 1 : 0)

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

  constructor(
    private readonly retentionMs: number,
    private readonly maxEntries: number,
    private readonly lock: MemorySweepLock,
  ) {
    // The receiver reads the book on every new payment state: it gets the answer without a promise.
    offerLocalBook(this, { find: (orderNumber) => this.held(orderNumber, Date.now()), settle: (...args) => this.settleNow(...args) })
  }

  async record(payment: CreatedPayment): Promise<RecordOutcome> {
    const now = Date.now()
    this.forgetExpired(now)
    const held = this.held(payment.orderNumber, now)
    if (held === undefined) {
      if (this.open.size + this.closed.size >= this.maxEntries) this.makeRoom()
      const asked = [payment.amountSen]
      this.open.set(payment.orderNumber, { ...payment, askedSen: asked, status: 'open', state: null, lookups: 0, lastLookupAt: null, nextLookupAt: payment.createdAt })
      return 'created'
    }
    const again: BookedPayment = {
      ...held,
      ...payment,
      exchangeNumber: payment.exchangeNumber ?? held.exchangeNumber,
      askedSen: askedAgain(held.askedSen, payment.amountSen),
    }
    // In place: a closed one keeps its place among the closed (retention runs from its close).
    const closed = this.closed.get(payment.orderNumber)
    if (closed !== undefined) this.closed.set(payment.orderNumber, { ...closed, booked: again })
    else this.open.set(payment.orderNumber, again)
    return held.askedSen.includes(payment.amountSen) ? 'known' : 'added'
  }

  async find(orderNumber: string): Promise<BookedPayment | undefined> {
    return this.held(orderNumber, Date.now())
  }

  async settle(orderNumber: string, state: PaymentState, exchangeNumber: string): Promise<boolean> {
    return this.settleNow(orderNumber, state, exchangeNumber)
  }

  private settleNow(orderNumber: string, state: PaymentState, exchangeNumber: string): boolean {
    const now = Date.now()
    const booked = this.held(orderNumber, now)
    if (booked === undefined) return false
    if (booked.state !== null && STATE_RANK[state] <= STATE_RANK[booked.state]) return booked.state === state
    const settled = { ...booked, exchangeNumber: booked.exchangeNumber ?? exchangeNumber, state }
    if (state !== 'pending') this.close(orderNumber, { ...settled, status: state, nextLookupAt: null }, now)
    // Abandoned with no result, and now a 99 came: open again, and due, or nothing would ever look at it.
    else if (booked.status !== 'open') this.reopen(orderNumber, { ...settled, status: 'open', nextLookupAt: new Date(now) })
    else this.open.set(orderNumber, { ...settled, status: 'open' })
    return true
  }

  async noteLookup(orderNumber: string, note: LookupNote, token: number): Promise<boolean> {
    const booked = this.open.get(orderNumber)
    if (booked === undefined || token < this.lock.newestToken) return false
    const looked = { ...booked, lookups: booked.lookups + 1, lastLookupAt: note.at }
    if (note.abandoned === true) this.close(orderNumber, { ...looked, status: 'abandoned', nextLookupAt: null }, Date.now())
    else this.open.set(orderNumber, { ...looked, nextLookupAt: note.nextLookupAt })
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

  private held(orderNumber: string, now: number): BookedPayment | undefined {
    const open = this.open.get(orderNumber)
    if (open !== undefined) return open
    const closed = this.closed.get(orderNumber)
    return closed !== undefined && closed.until > now ? closed.booked : undefined
  }

  /** Moves a payment to the end of the closed ones (it closed now, or closed again with a later state). */
  private close(orderNumber: string, booked: BookedPayment, now: number): void {
    this.open.delete(orderNumber)
    this.closed.delete(orderNumber)
    this.closed.set(orderNumber, { booked, until: now + this.retentionMs })
  }

  private reopen(orderNumber: string, booked: BookedPayment): void {
    this.closed.delete(orderNumber)
    this.open.set(orderNumber, booked)
  }

  private forgetExpired(now: number): void {
    for (const [orderNumber, closed] of this.closed) {
      if (closed.until > now) return
      this.closed.delete(orderNumber)
    }
  }

  /**
   * At the cap, the payment closed longest ago goes first; only a book full of open payments forgets one of them
   * (the one recorded first), so that memory stays bounded as the store's maxEntries promises.
   */
  private makeRoom(): void {
    const victim = this.closed.keys().next()
    if (victim.done !== true) this.closed.delete(victim.value)
    else {
      const oldest = this.open.keys().next()
      if (oldest.done !== true) this.open.delete(oldest.value)
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
