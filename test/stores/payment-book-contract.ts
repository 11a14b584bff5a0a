import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import type { ReceiverStore } from '../../src/index.js'
import type { BookedPayment, CreatedPayment, PaymentBook } from '../../src/contract/payment-book.js'
import { createdPayment, MINUTE, type OpenSpace, ref, sleep } from './payment-book-fixtures.js'
import { bookQueriesContract } from './book-queries-contract.js'
import { recordAgainContract } from './record-again-contract.js'
import { seenResultsContract } from './seen-results-contract.js'
import { sweepLockContract } from './sweep-lock-contract.js'

/**
 * The payment book and the sweep lock every built-in store keeps (src/contract/payment-book.ts). Each test works
 * in a space of its own (a Redis prefix, a PostgreSQL table, a memory store), since open payments are listed and
 * counted across the whole book; `open` called twice with one space is two processes sharing a store.
 */
export interface BookUnderTest {
  name: string
  open(space: string, options?: { retentionMs?: number }): Promise<{ store: ReceiverStore<unknown>; close(): Promise<void> }>
  /** Forgets what is past retention now, where the store does it on a schedule (PostgreSQL's prune). */
  prune?(store: ReceiverStore<unknown>): Promise<void>
  /** Removes what the spaces opened left behind (tables, keys). */
  cleanup(): Promise<void>
}

export function paymentBookContract(subject: BookUnderTest): void {
  describe(`${subject.name}: payment book and sweep lock`, () => {
    const closers: (() => Promise<void>)[] = []
    afterAll(async () => {
      for (const close of closers) await close()
      await subject.cleanup()
    })

    const open: OpenSpace = async (space = randomUUID().replace(/-/g, '').slice(0, 16), options) => {
      const { store, close } = await subject.open(space, options)
      closers.push(close)
      const book = store.paymentBook?.()
      const lock = store.sweepLock?.()
      if (book === undefined || lock === undefined) throw new Error(`${subject.name} has no payment book or sweep lock`)
      return { book, lock, store, space }
    }

    const t0 = Date.now() - 60 * MINUTE
    const created = (overrides: Partial<CreatedPayment> = {}) => createdPayment({ createdAt: new Date(t0), ...overrides })
    const asRecorded = (payment: CreatedPayment): BookedPayment => ({
      ...payment,
      askedSen: [payment.amountSen],
      status: 'open',
      state: null,
      lookups: 0,
      lastLookupAt: null,
      nextLookupAt: payment.createdAt,
      buyerEmail: payment.buyerEmail ?? null,
      buyerName: payment.buyerName ?? null,
      failures: 0,
      lastFailure: null,
      settledAt: null,
    })
    const orders = (list: BookedPayment[]) => list.map((payment) => payment.orderNumber)
    async function recordAll(book: PaymentBook, payments: CreatedPayment[]): Promise<void> {
      for (const payment of payments) expect(await book.record(payment)).toBe('created')
    }

    describe('record and find', () => {
      it('finds nothing for an order it never recorded', async () => {
        const { book } = await open()
        expect(await book.find(`ORD-${randomUUID()}`)).toBeUndefined()
      })

      it('keeps attached data as given, an empty one included', async () => {
        const { book } = await open()
        const bare = created({ attached: {}, kind: 'session' })
        await recordAll(book, [bare])
        expect((await book.find(bare.orderNumber))?.attached).toEqual({})
      })

      it('creates one record of many concurrent records of one order, from several connections, and loses no amount', async () => {
        const { space, book } = await open()
        // The tables made first: the race under test is this one, not the schema's.
        await book.summary()
        const connections = await Promise.all([0, 1, 2, 3].map(() => open(space)))
        const orderNumber = `ORD-${randomUUID()}`
        const attempts = Array.from({ length: 8 }, (_, i) => created({ orderNumber, amountSen: 100 + i }))
        const answers = await Promise.all(attempts.map((payment, i) => connections[i % connections.length]!.book.record(payment)))
        expect(answers.filter((answer) => answer === 'created')).toHaveLength(1)
        const booked = await book.find(orderNumber)
        expect([...(booked?.askedSen ?? [])].sort()).toEqual(attempts.map((payment) => payment.amountSen))
        expect(booked?.askedSen.at(-1)).toBe(booked?.amountSen)
        for (const { book } of connections) expect(await book.find(orderNumber)).toEqual(booked)
      })
    })

    describe('settle', () => {
      it('keeps a 99 open, closes on the 00, and never moves back', async () => {
        const { book } = await open()
        const payment = created()
        await recordAll(book, [payment])
        const before = Date.now()
        expect(await book.settle(payment, 'pending', 'EX-1')).toBe(true)
        const pending = await book.find(payment.orderNumber)
        expect(pending).toEqual({ ...asRecorded(payment), state: 'pending', exchangeNumber: 'EX-1', settledAt: expect.any(Date) })
        expect(pending?.settledAt?.getTime()).toBeGreaterThanOrEqual(before)
        expect(orders(await book.listOpen())).toEqual([payment.orderNumber])
        await sleep(5)
        expect(await book.settle(payment, 'succeeded', 'EX-1')).toBe(true)
        const paid = await book.find(payment.orderNumber)
        expect(paid).toEqual({ ...asRecorded(payment), status: 'succeeded', state: 'succeeded', exchangeNumber: 'EX-1', nextLookupAt: null, settledAt: expect.any(Date) })
        expect(paid?.settledAt?.getTime()).toBeGreaterThan(pending?.settledAt?.getTime() as number)
        expect(await book.listOpen()).toEqual([])
        // A late 99, or a failure after the success: refused, nothing moves. The same state again: already there.
        expect(await book.settle(payment, 'pending', 'EX-1')).toBe(false)
        expect(await book.settle(payment, 'failed', 'EX-2')).toBe(false)
        expect(await book.settle(payment, 'succeeded', 'EX-1')).toBe(true)
        expect(await book.find(payment.orderNumber)).toEqual(paid)
      })

      it('lets a success follow a failure (money arriving is never ignored)', async () => {
        const { book } = await open()
        const payment = created()
        await recordAll(book, [payment])
        expect(await book.settle(payment, 'failed', 'EX-1')).toBe(true)
        expect(await book.find(payment.orderNumber)).toMatchObject({ status: 'failed', state: 'failed', nextLookupAt: null })
        expect(await book.settle(payment, 'succeeded', 'EX-2')).toBe(true)
        expect(await book.find(payment.orderNumber)).toMatchObject({ status: 'succeeded', state: 'succeeded', exchangeNumber: 'EX-1' })
      })

      it('keeps the exchange_number it had, and learns one when it had none', async () => {
        const { book } = await open()
        const fromApi = created({ kind: 'payment', exchangeNumber: 'EX-CREATED' })
        const fromForm = created()
        await recordAll(book, [fromApi, fromForm])
        await book.settle(fromApi, 'succeeded', 'EX-OTHER')
        expect((await book.find(fromApi.orderNumber))?.exchangeNumber).toBe('EX-CREATED')
        await book.settle(fromForm, 'pending', 'EX-LEARNED')
        await book.settle(fromForm, 'succeeded', 'EX-LATER')
        expect((await book.find(fromForm.orderNumber))?.exchangeNumber).toBe('EX-LEARNED')
      })

      it('ignores an order it never recorded, and records nothing for it', async () => {
        const { book } = await open()
        const orderNumber = `ORD-${randomUUID()}`
        expect(await book.settle(ref(orderNumber), 'succeeded', 'EX-1')).toBe(false)
        expect(await book.find(orderNumber)).toBeUndefined()
        expect(await book.summary()).toEqual({ open: 0, oldestCreatedAt: null })
      })
    })

    describe('listOpen and summary', () => {
      it('lists open payments oldest created first, whatever the order they were recorded in, up to the limit', async () => {
        const { book } = await open()
        const at = (minutes: number) => new Date(t0 + minutes * MINUTE)
        // Recorded out of creation order; two created at the same instant, told apart by order_number.
        const payments = [5, 1, 4, 2, 2, 3].map((minutes, i) => created({ orderNumber: `ORD-${i}-${randomUUID()}`, createdAt: at(minutes) }))
        await recordAll(book, payments)
        const closed = payments[5]!
        await book.settle(closed, 'failed', 'EX-F')
        const [m1, m2a, m2b, m4, m5] = [payments[1]!, payments[3]!, payments[4]!, payments[2]!, payments[0]!]
        const byCreation = [m1, m2a, m2b, m4, m5].map((payment) => payment.orderNumber)
        expect(orders(await book.listOpen())).toEqual(byCreation)
        expect(orders(await book.listOpen({ limit: 2 }))).toEqual(byCreation.slice(0, 2))
        expect(orders(await book.listOpen({ limit: 1 }))).toEqual([m1.orderNumber])
        expect(await book.listOpen({ limit: 1 })).toEqual([asRecorded(m1)])
      })

      it('lists only the payments due by dueBy, oldest created first, however many are due', async () => {
        const { book, lock } = await open()
        const { token } = (await lock.acquire('sweeper', MINUTE))!
        const at = (minutes: number) => new Date(t0 + minutes * MINUTE)
        const payments = Array.from({ length: 12 }, (_, i) => created({ orderNumber: `ORD-${String(i).padStart(2, '0')}-${randomUUID()}`, createdAt: at(i) }))
        await recordAll(book, [...payments].reverse())
        // Every odd one was looked up and is due again only later, the later the older it is.
        for (const [i, payment] of payments.entries())
          if (i % 2 === 1) expect(await book.noteLookup(payment, { at: at(20), nextLookupAt: at(100 - i) }, token)).toBe(true)
        const evens = payments.filter((_, i) => i % 2 === 0).map((payment) => payment.orderNumber)
        const odds = payments.filter((_, i) => i % 2 === 1).map((payment) => payment.orderNumber)
        expect(orders(await book.listOpen({ dueBy: at(50) }))).toEqual(evens)
        // Few due for the limit, and many (a backlog): the same order either way.
        expect(orders(await book.listOpen({ dueBy: at(50), limit: 2 }))).toEqual(evens.slice(0, 2))
        expect(orders(await book.listOpen({ dueBy: at(50), limit: 1 }))).toEqual(evens.slice(0, 1))
        expect(orders(await book.listOpen({ dueBy: at(200), limit: 1 }))).toEqual([payments[0]!.orderNumber])
        expect(orders(await book.listOpen({ dueBy: at(200) }))).toEqual(payments.map((payment) => payment.orderNumber))
        // Due exactly at dueBy counts; the youngest odd ones are due first.
        expect(orders(await book.listOpen({ dueBy: at(89) }))).toEqual([...evens, odds.at(-1)])
        expect(await book.listOpen({ dueBy: at(-1) })).toEqual([])
      })

      it('returns 100 at most by default, and refuses a limit or dueBy it cannot use', async () => {
        const { book } = await open()
        await Promise.all(Array.from({ length: 101 }, () => book.record(created())))
        expect(await book.listOpen()).toHaveLength(100)
        expect(await book.listOpen({ limit: 101 })).toHaveLength(101)
        for (const limit of [0, -1, 1.5, Number.NaN]) await expect(book.listOpen({ limit })).rejects.toThrow(/limit must be a positive integer/)
        await expect(book.listOpen({ dueBy: new Date(Number.NaN) })).rejects.toThrow(/dueBy/)
      })

      it('counts open payments (a 99 included) and gives the oldest one’s creation time', async () => {
        const { book, lock } = await open()
        expect(await book.summary()).toEqual({ open: 0, oldestCreatedAt: null })
        const [oldest, pending, paid, abandoned, young] = [0, 1, 2, 3, 4].map((minutes) => created({ createdAt: new Date(t0 + minutes * MINUTE) })) as [
          CreatedPayment,
          CreatedPayment,
          CreatedPayment,
          CreatedPayment,
          CreatedPayment,
        ]
        await recordAll(book, [young, paid, pending, abandoned, oldest])
        expect(await book.summary()).toEqual({ open: 5, oldestCreatedAt: oldest.createdAt })
        await book.settle(oldest, 'failed', 'EX-F')
        await book.settle(pending, 'pending', 'EX-P')
        await book.settle(paid, 'succeeded', 'EX-S')
        const { token } = (await lock.acquire('sweeper', MINUTE))!
        await book.noteLookup(abandoned, { at: new Date(), nextLookupAt: null, abandoned: true }, token)
        expect(await book.summary()).toEqual({ open: 2, oldestCreatedAt: pending.createdAt })
      })
    })

    describe('noteLookup', () => {
      it('counts lookups with their backoff, then closes the payment as abandoned', async () => {
        const { book, lock } = await open()
        const payment = created()
        await recordAll(book, [payment])
        const { token } = (await lock.acquire('sweeper', MINUTE))!
        const [first, second, last] = [10, 20, 40].map((minutes) => new Date(t0 + minutes * MINUTE)) as [Date, Date, Date]
        expect(await book.noteLookup(payment, { at: first, nextLookupAt: second }, token)).toBe(true)
        expect(await book.find(payment.orderNumber)).toEqual({ ...asRecorded(payment), lookups: 1, lastLookupAt: first, nextLookupAt: second })
        expect(await book.listOpen({ dueBy: first })).toEqual([])
        expect(orders(await book.listOpen({ dueBy: second }))).toEqual([payment.orderNumber])
        expect(await book.noteLookup(payment, { at: second, nextLookupAt: last }, token)).toBe(true)
        expect(await book.noteLookup(payment, { at: last, nextLookupAt: null, abandoned: true }, token)).toBe(true)
        const gaveUp = { ...asRecorded(payment), status: 'abandoned', lookups: 3, lastLookupAt: last, nextLookupAt: null }
        expect(await book.find(payment.orderNumber)).toEqual(gaveUp)
        expect(await book.listOpen()).toEqual([])
        expect(await book.summary()).toEqual({ open: 0, oldestCreatedAt: null })
        // Closed: no more lookups noted.
        expect(await book.noteLookup(payment, { at: new Date(), nextLookupAt: new Date() }, token)).toBe(false)
        expect(await book.find(payment.orderNumber)).toEqual(gaveUp)
      })

      it('closes an abandoned payment with the final result that comes after all', async () => {
        const { book, lock } = await open()
        const payment = created()
        await recordAll(book, [payment])
        const { token } = (await lock.acquire('sweeper', MINUTE))!
        await book.noteLookup(payment, { at: new Date(), nextLookupAt: null, abandoned: true }, token)
        expect(await book.settle(payment, 'succeeded', 'EX-LATE')).toBe(true)
        expect(await book.find(payment.orderNumber)).toMatchObject({ status: 'succeeded', state: 'succeeded', exchangeNumber: 'EX-LATE', lookups: 1 })
      })

      it('reopens a payment abandoned with no result when a 99 comes, due at once', async () => {
        const { book, lock } = await open()
        const payment = created()
        await recordAll(book, [payment])
        const { token } = (await lock.acquire('sweeper', MINUTE))!
        await book.noteLookup(payment, { at: new Date(), nextLookupAt: null, abandoned: true }, token)
        const before = Date.now()
        expect(await book.settle(payment, 'pending', 'EX-99')).toBe(true)
        const reopened = await book.find(payment.orderNumber)
        expect(reopened).toMatchObject({ status: 'open', state: 'pending', exchangeNumber: 'EX-99' })
        expect(reopened?.nextLookupAt?.getTime()).toBeGreaterThanOrEqual(before)
        expect(orders(await book.listOpen({ dueBy: new Date(Date.now() + 1000) }))).toEqual([payment.orderNumber])
        expect(await book.summary()).toEqual({ open: 1, oldestCreatedAt: payment.createdAt })
        // A payment abandoned at its 99 stays abandoned when the same 99 comes again.
        await book.noteLookup(payment, { at: new Date(), nextLookupAt: null, abandoned: true }, token)
        expect(await book.settle(payment, 'pending', 'EX-99')).toBe(true)
        expect(await book.find(payment.orderNumber)).toMatchObject({ status: 'abandoned', state: 'pending' })
      })

      it('refuses lookups of a payment closed by its result, or never recorded', async () => {
        const { book, lock } = await open()
        const payment = created()
        await recordAll(book, [payment])
        await book.settle(payment, 'succeeded', 'EX-1')
        const { token } = (await lock.acquire('sweeper', MINUTE))!
        const note = { at: new Date(), nextLookupAt: new Date() }
        expect(await book.noteLookup(payment, note, token)).toBe(false)
        expect(await book.noteLookup(ref(`ORD-${randomUUID()}`), note, token)).toBe(false)
        expect(await book.find(payment.orderNumber)).toMatchObject({ status: 'succeeded', lookups: 0 })
      })
    })

    recordAgainContract({ open, created, asRecorded, t0 })
    seenResultsContract({ open, created })
    bookQueriesContract({ open, created })
    sweepLockContract(open)

    describe('retention', () => {
      it('forgets closed payments after the retention, as if never recorded, and keeps open ones', async () => {
        const { book, lock, store } = await open(undefined, { retentionMs: 150 })
        const [open1, pending, paid, abandoned] = [created(), created(), created(), created()]
        await recordAll(book, [open1, pending, paid, abandoned])
        await book.settle(pending, 'pending', 'EX-P')
        await book.settle(paid, 'succeeded', 'EX-S')
        const { token } = (await lock.acquire('sweeper', MINUTE))!
        await book.noteLookup(abandoned, { at: new Date(), nextLookupAt: null, abandoned: true }, token)
        await sleep(400)
        await subject.prune?.(store)
        expect(await book.find(paid.orderNumber)).toBeUndefined()
        expect(await book.find(abandoned.orderNumber)).toBeUndefined()
        expect(await book.find(open1.orderNumber)).toEqual(asRecorded(open1))
        expect(await book.find(pending.orderNumber)).toMatchObject({ status: 'open', state: 'pending' })
        expect(await book.summary()).toEqual({ open: 2, oldestCreatedAt: open1.createdAt })
        // A forgotten order is recorded afresh.
        const again = created({ orderNumber: paid.orderNumber, amountSen: 5 })
        expect(await book.record(again)).toBe('created')
        expect(await book.find(paid.orderNumber)).toEqual(asRecorded(again))
      })
    })
  })
}
