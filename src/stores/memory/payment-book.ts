import { STATE_RANK, type PaymentState } from '../../core/payment.js'
import type { BookedPayment, CreatedPayment, LookupNote, OpenQuery, OpenSummary, PaymentBook, SweepLock } from '../../contract/payment-book.js'
import { offerLocalBook } from '../../contract/local-book.js'

/** The memory store's book: one process, so a Map in creation order is already "oldest first". */
export class MemoryPaymentBook implements PaymentBook {
  private readonly payments = new Map<string, BookedPayment>()

  constructor(
    private readonly maxEntries: number,
    private readonly lock: MemorySweepLock,
  ) {
    // The receiver reads the book on every new payment state: it gets the answer without a promise.
    offerLocalBook(this, { find: (orderNumber) => this.payments.get(orderNumber), settle: (...args) => this.settleNow(...args) })
  }

  async record(payment: CreatedPayment): Promise<boolean> {
    if (this.payments.has(payment.orderNumber)) return false
    if (this.payments.size >= this.maxEntries) this.forgetOldestClosed()
    this.payments.set(payment.orderNumber, { ...payment, status: 'open', state: null, lookups: 0, lastLookupAt: null, nextLookupAt: payment.createdAt })
    return true
  }

  async find(orderNumber: string): Promise<BookedPayment | undefined> {
    return this.payments.get(orderNumber)
  }

  async settle(orderNumber: string, state: PaymentState, exchangeNumber: string): Promise<boolean> {
    return this.settleNow(orderNumber, state, exchangeNumber)
  }

  private settleNow(orderNumber: string, state: PaymentState, exchangeNumber: string): boolean {
    const booked = this.payments.get(orderNumber)
    if (booked === undefined) return false
    if (booked.state !== null && STATE_RANK[state] <= STATE_RANK[booked.state]) return booked.state === state
    const status = state === 'pending' ? 'open' : state
    this.payments.set(orderNumber, {
      ...booked,
      exchangeNumber: booked.exchangeNumber ?? exchangeNumber,
      state,
      status,
      nextLookupAt: status === 'open' ? booked.nextLookupAt : null,
    })
    return true
  }

  async noteLookup(orderNumber: string, note: LookupNote, token: number): Promise<boolean> {
    const booked = this.payments.get(orderNumber)
    if (booked === undefined || booked.status !== 'open' || token < this.lock.newestToken) return false
    this.payments.set(orderNumber, {
      ...booked,
      lookups: booked.lookups + 1,
      lastLookupAt: note.at,
      nextLookupAt: note.abandoned === true ? null : note.nextLookupAt,
      status: note.abandoned === true ? 'abandoned' : 'open',
    })
    return true
  }

  async listOpen(query: OpenQuery = {}): Promise<BookedPayment[]> {
    const limit = query.limit ?? 100
    const due = query.dueBy?.getTime()
    const found: BookedPayment[] = []
    for (const booked of this.payments.values()) {
      if (found.length >= limit) break
      if (booked.status !== 'open') continue
      if (due !== undefined && (booked.nextLookupAt === null || booked.nextLookupAt.getTime() > due)) continue
      found.push(booked)
    }
    return found.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime())
  }

  async summary(): Promise<OpenSummary> {
    let open = 0
    let oldest: Date | null = null
    for (const booked of this.payments.values()) {
      if (booked.status !== 'open') continue
      open++
      if (oldest === null || booked.createdAt < oldest) oldest = booked.createdAt
    }
    return { open, oldestCreatedAt: oldest }
  }

  /** At the cap, closed payments go first, oldest first; open ones are what the book is for. */
  private forgetOldestClosed(): void {
    for (const [orderNumber, booked] of this.payments) {
      if (booked.status !== 'open') {
        this.payments.delete(orderNumber)
        return
      }
    }
    const oldest = this.payments.keys().next()
    if (oldest.done !== true) this.payments.delete(oldest.value)
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
