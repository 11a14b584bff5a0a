import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import type { PaymentState, ReceiverStore } from '../../src/index.js'
import type { BookedPayment, CreatedPayment, ListQuery, PaymentBook } from '../../src/contract/payment-book.js'
import { MINUTE } from './payment-book-fixtures.js'
import type { RecordAgainParts } from './record-again-contract.js'

const HOUR = 60 * MINUTE

/**
 * The operator's questions, run from the payment book contract: list (filters, search, newest first, a page at a
 * time) and overview, the same answers from every store.
 */
export function bookQueriesContract({ open, created }: Pick<RecordAgainParts, 'open' | 'created'>): void {
  const orders = (payments: readonly BookedPayment[]) => payments.map((payment) => payment.orderNumber)

  /** Every page of `query`, followed through its cursors. */
  async function allPages(book: PaymentBook, query: ListQuery): Promise<{ orders: string[]; pages: number }> {
    const found: string[] = []
    let cursor: string | undefined
    let pages = 0
    do {
      const page = await book.list({ ...query, ...(cursor === undefined ? {} : { cursor }) })
      found.push(...orders(page.payments))
      pages++
      cursor = page.next ?? undefined
      expect(pages).toBeLessThan(50)
    } while (cursor !== undefined)
    return { orders: found, pages }
  }

  async function fail(store: ReceiverStore<unknown>, payment: CreatedPayment, state: PaymentState): Promise<void> {
    const lease = { exchangeNumber: `EX-${randomUUID()}`, state, owner: randomUUID(), orderNumber: payment.orderNumber, uid: payment.uid }
    expect((await store.claim({ ...lease, leaseMs: MINUTE })).outcome).toBe('claimed')
    expect(await store.release({ ...lease, failure: { message: 'handler threw' } })).toBe(true)
  }

  /**
   * A small shop's book, created a minute apart from 10 minutes ago back (names say their place: 0 newest): open,
   * paid, failed, abandoned, a 99, a success whose handler fails, one whose failing 99 is still open.
   */
  async function shop() {
    const opened = await open()
    const { book, lock, store } = opened
    const now = Date.now()
    const at = (i: number) => new Date(now - 10 * MINUTE - i * MINUTE)
    const [open0, paid1, failed2, abandoned3, pending4, paidFailing5, failing6] = Array.from({ length: 7 }, (_, i) =>
      created({ orderNumber: `ORD-${i}-${randomUUID()}`, createdAt: at(i), buyerEmail: i === 1 ? 'Ali.Baba@Example.COM' : `buyer${i}@example.com` }),
    ) as [CreatedPayment, CreatedPayment, CreatedPayment, CreatedPayment, CreatedPayment, CreatedPayment, CreatedPayment]
    for (const payment of [failing6, paidFailing5, pending4, abandoned3, failed2, paid1, open0]) expect(await book.record(payment)).toBe('created')
    await book.settle(paid1, 'succeeded', 'EX-PAID-1')
    await book.settle(failed2, 'failed', 'EX-FAILED-2')
    const { token } = (await lock.acquire('sweeper', MINUTE))!
    await book.noteLookup(abandoned3, { at: new Date(), nextLookupAt: null, abandoned: true }, token)
    await book.settle(pending4, 'pending', 'EX-PENDING-4')
    await fail(store, paidFailing5, 'succeeded')
    await fail(store, failing6, 'pending')
    return { ...opened, now, all: [open0, paid1, failed2, abandoned3, pending4, paidFailing5, failing6] }
  }

  describe('list', () => {
    it('lists every payment newest first, a page at a time, every one once', async () => {
      const { book, all } = await shop()
      const first = await book.list()
      expect(orders(first.payments)).toEqual(orders(all as BookedPayment[]))
      expect(first.next).toBeNull()
      for (const limit of [1, 2, 3, 6, 7]) {
        const paged = await allPages(book, { limit })
        expect(paged.orders).toEqual(orders(all as BookedPayment[]))
        expect(paged.pages).toBe(Math.ceil(all.length / limit))
      }
    })

    it('lists by status, the successes whose handlers fail apart, each newest first', async () => {
      const { book, all } = await shop()
      const [open0, paid1, failed2, abandoned3, pending4, paidFailing5, failing6] = all.map((payment) => payment.orderNumber)
      const listed = async (status: ListQuery['status']) => orders((await book.list({ status })).payments)
      expect(await listed('open')).toEqual([open0, pending4, paidFailing5, failing6])
      expect(await listed('succeeded')).toEqual([paid1])
      expect(await listed('failed')).toEqual([failed2])
      expect(await listed('abandoned')).toEqual([abandoned3])
      expect(await listed('paid_failing')).toEqual([paidFailing5])
      expect((await book.list({ status: 'paid_failing' })).payments[0]).toMatchObject({ status: 'open', failures: 1, lastFailure: { state: 'succeeded' } })
      expect((await allPages(book, { status: 'open', limit: 1 })).orders).toEqual([open0, pending4, paidFailing5, failing6])
    })

    it('lists the payments created in a window: from inclusive, to exclusive', async () => {
      const { book, all } = await shop()
      const created = (i: number) => all[i]!.createdAt
      const names = all.map((payment) => payment.orderNumber)
      expect(orders((await book.list({ from: created(3) })).payments)).toEqual(names.slice(0, 4))
      expect(orders((await book.list({ to: created(3) })).payments)).toEqual(names.slice(4))
      expect(orders((await book.list({ from: created(5), to: created(1) })).payments)).toEqual(names.slice(2, 6))
      expect(orders((await book.list({ from: created(5), to: created(1), status: 'open' })).payments)).toEqual([names[4], names[5]])
      expect((await allPages(book, { from: created(5), to: created(1), limit: 1 })).orders).toEqual(names.slice(2, 6))
      expect((await book.list({ from: created(0), to: created(0) })).payments).toEqual([])
    })

    it('finds a payment by its exact order_number or exchange_number, or by buyer e-mail whatever its case', async () => {
      const { book, all } = await shop()
      const [open0, paid1, , , pending4] = all
      const search = async (term: string, more: ListQuery = {}) => orders((await book.list({ search: term, ...more })).payments)
      expect(await search(open0!.orderNumber)).toEqual([open0!.orderNumber])
      expect(await search('EX-PAID-1')).toEqual([paid1!.orderNumber])
      expect(await search('EX-PENDING-4')).toEqual([pending4!.orderNumber])
      expect(await search('ali.baba@example.com')).toEqual([paid1!.orderNumber])
      expect(await search('ALI.BABA@EXAMPLE.COM')).toEqual([paid1!.orderNumber])
      // Exact: no part of a value matches.
      for (const part of [open0!.orderNumber.slice(0, 8), 'EX-PAID', 'ali.baba', 'example.com']) expect(await search(part)).toEqual([])
      expect(await search('EX-PAID-1', { status: 'open' })).toEqual([])
      expect(await search('EX-PAID-1', { status: 'succeeded', from: paid1!.createdAt })).toEqual([paid1!.orderNumber])
    })

    it('finds every payment of one e-mail and of one order_number (several merchants), newest first, a page at a time', async () => {
      const { book } = await open()
      const t = Date.now() - HOUR
      const email = `Shared+${randomUUID().slice(0, 8)}@Example.com`
      const orderNumber = `ORD-${randomUUID()}`
      const payments = [
        created({ createdAt: new Date(t), buyerEmail: email }),
        created({ createdAt: new Date(t + 1000), buyerEmail: email.toLowerCase() }),
        created({ createdAt: new Date(t + 2000), buyerEmail: email.toUpperCase() }),
        created({ orderNumber, uid: 'merchant-a', createdAt: new Date(t + 3000), buyerEmail: email }),
        created({ orderNumber, uid: 'merchant-b', createdAt: new Date(t + 3000) }),
      ]
      for (const payment of payments) await book.record(payment)
      const newest = [...payments].reverse()
      expect((await book.list({ search: email })).payments.map((payment) => [payment.orderNumber, payment.uid])).toEqual(
        newest.filter((payment) => payment.buyerEmail !== undefined).map((payment) => [payment.orderNumber, payment.uid]),
      )
      // One instant, one order_number: by uid, descending.
      expect((await book.list({ search: orderNumber })).payments.map((payment) => payment.uid)).toEqual(['merchant-b', 'merchant-a'])
      expect((await allPages(book, { search: email, limit: 1 })).orders).toHaveLength(4)
    })

    it('breaks ties of one creation time by order_number, then uid, both descending, and pages through them', async () => {
      const { book } = await open()
      const at = new Date(Date.now() - HOUR)
      const names = ['A', 'B', 'C'].map((letter) => `ORD-${letter}-${randomUUID()}`)
      for (const orderNumber of names) for (const uid of ['u1', 'u2']) await book.record(created({ orderNumber, uid, createdAt: at }))
      const expected = [...names].reverse().flatMap((orderNumber) => [`${orderNumber}/u2`, `${orderNumber}/u1`])
      const seen: string[] = []
      let cursor: string | undefined
      do {
        const page = await book.list({ limit: 4, ...(cursor === undefined ? {} : { cursor }) })
        seen.push(...page.payments.map((payment) => `${payment.orderNumber}/${payment.uid}`))
        cursor = page.next ?? undefined
      } while (cursor !== undefined)
      expect(seen).toEqual(expected)
    })

    it('gives 50 at most by default, and refuses a query it cannot use', async () => {
      const { book } = await open()
      await Promise.all(Array.from({ length: 51 }, (_, i) => book.record(created({ createdAt: new Date(Date.now() - i * 1000) }))))
      const page = await book.list()
      expect(page.payments).toHaveLength(50)
      expect(page.next).toEqual(expect.any(String))
      expect((await book.list({ cursor: page.next as string })).payments).toHaveLength(1)
      expect((await book.list({ limit: 100 })).payments).toHaveLength(51)
      for (const limit of [0, 101, 1.5, Number.NaN]) await expect(book.list({ limit })).rejects.toThrow(/limit must be an integer from 1 to 100/)
      await expect(book.list({ status: 'lost' as never })).rejects.toThrow(/status must be one of/)
      await expect(book.list({ from: new Date(Number.NaN) })).rejects.toThrow(/from must be a valid Date/)
      await expect(book.list({ search: '' })).rejects.toThrow(/search/)
      for (const cursor of ['not a cursor', 'eyJ4IjoxfQ', '']) await expect(book.list({ cursor })).rejects.toThrow(/cursor/)
    })
  })

  describe('overview', () => {
    it('counts payments by status in the window, the failing ones of any age, the open ones by age', async () => {
      const { book, now, all } = await shop()
      const window = { from: new Date(all[4]!.createdAt.getTime()), to: new Date(now) }
      const overview = await book.overview(window)
      expect(overview.byStatus).toEqual({ open: 2, succeeded: 1, failed: 1, abandoned: 1 })
      expect(overview.paidFailing).toBe(1)
      expect(overview.failing).toBe(2)
      expect(overview.openByAge).toEqual({ underHour: 4, underDay: 0, underWeek: 0, older: 0 })
      // Ages: one payment in each band.
      const { book: aged } = await open()
      for (const age of [MINUTE, 2 * HOUR, 3 * 24 * HOUR, 10 * 24 * HOUR]) await aged.record(created({ createdAt: new Date(Date.now() - age) }))
      expect((await aged.overview(window)).openByAge).toEqual({ underHour: 1, underDay: 1, underWeek: 1, older: 1 })
    })

    it('counts the results handled in each hour of the window by their state, every hour listed', async () => {
      const { book, store } = await open()
      const from = new Date(Math.floor(Date.now() / HOUR) * HOUR - 2 * HOUR + 30 * MINUTE)
      const to = new Date(Date.now() + MINUTE)
      const [paid, failedOne, pending, untouched] = [created(), created(), created(), created()]
      for (const payment of [paid, failedOne, pending, untouched]) await book.record(payment)
      await book.settle(paid, 'succeeded', 'EX-1')
      await book.settle(failedOne, 'failed', 'EX-2')
      await book.settle(pending, 'pending', 'EX-3')
      await fail(store, untouched, 'succeeded')
      const overview = await book.overview({ from, to })
      const hours = overview.perHour.map((row) => row.hour.getTime())
      expect(hours[0]).toBe(Math.floor(from.getTime() / HOUR) * HOUR)
      expect(hours).toEqual(hours.map((_, i) => hours[0]! + i * HOUR))
      expect(hours.at(-1)).toBe(Math.floor((to.getTime() - 1) / HOUR) * HOUR)
      // Each handled result in the hour its settledAt falls in; the failing one, handled never, in none.
      const expected = new Map(hours.map((hour) => [hour, { hour: new Date(hour), succeeded: 0, failed: 0, pending: 0 }]))
      for (const payment of [paid, failedOne, pending]) {
        const found = (await book.find(payment.orderNumber))!
        expected.get(Math.floor(found.settledAt!.getTime() / HOUR) * HOUR)![found.state!]++
      }
      expect(overview.perHour).toEqual([...expected.values()])
      // A window that ended before they were handled counts none of them.
      const earlier = await book.overview({ from: new Date(from.getTime() - HOUR), to: from })
      expect(earlier.perHour.every((row) => row.succeeded + row.failed + row.pending === 0)).toBe(true)
      expect(earlier.byStatus).toEqual({ open: 0, succeeded: 0, failed: 0, abandoned: 0 })
    })

    it('refuses a window it cannot use', async () => {
      const { book } = await open()
      const now = Date.now()
      await expect(book.overview({ from: new Date(now), to: new Date(now) })).rejects.toThrow(/window/)
      await expect(book.overview({ from: new Date(now), to: new Date(now - 1) })).rejects.toThrow(/window/)
      await expect(book.overview({ from: new Date(now - 367 * 24 * HOUR), to: new Date(now) })).rejects.toThrow(/366 days/)
      await expect(book.overview({ from: new Date(Number.NaN), to: new Date(now) })).rejects.toThrow(/window/)
      expect((await book.overview({ from: new Date(now - 366 * 24 * HOUR), to: new Date(now) })).perHour).toHaveLength(366 * 24 + (now % HOUR === 0 ? 0 : 1))
    })
  })

  describe('retention', () => {
    it('lists and counts no closed payment past its retention', async () => {
      const { book, store } = await open(undefined, { retentionMs: 150 })
      const [kept, paid] = [created({ buyerEmail: 'kept@example.com' }), created({ buyerEmail: 'gone@example.com' })]
      for (const payment of [kept, paid]) await book.record(payment)
      await book.settle(paid, 'succeeded', 'EX-GONE')
      expect(orders((await book.list()).payments).sort()).toEqual([kept.orderNumber, paid.orderNumber].sort())
      await new Promise((resolve) => setTimeout(resolve, 400))
      await (store as { prune?: () => Promise<number> }).prune?.()
      expect(orders((await book.list()).payments)).toEqual([kept.orderNumber])
      for (const term of [paid.orderNumber, 'EX-GONE', 'gone@example.com']) expect((await book.list({ search: term })).payments).toEqual([])
      const window = { from: new Date(kept.createdAt.getTime() - HOUR), to: new Date(Date.now() + MINUTE) }
      expect((await book.overview(window)).byStatus).toEqual({ open: 1, succeeded: 0, failed: 0, abandoned: 0 })
    })
  })
}
