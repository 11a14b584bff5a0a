import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import type { BookedPayment, CreatedPayment } from '../../src/contract/payment-book.js'
import { MINUTE, type OpenSpace, ref, UID } from './payment-book-fixtures.js'

export interface RecordAgainParts {
  readonly open: OpenSpace
  readonly created: (overrides?: Partial<CreatedPayment>) => CreatedPayment
  readonly asRecorded: (payment: CreatedPayment) => BookedPayment
  readonly t0: number
}

/**
 * An order_number recorded more than once, run from the payment book contract: by the same merchant again (a
 * reused order number, another amount), and by several merchants (credential sets) of one receiver, whose order
 * numbers are unique only per merchant.
 */
export function recordAgainContract({ open, created, asRecorded, t0 }: RecordAgainParts): void {
  describe('an order recorded again', () => {
    it('records a payment again as its latest creation, every amount asked kept, status and lookups kept', async () => {
      const { book, lock } = await open()
      const first = created({ kind: 'payment', exchangeNumber: 'EX-CREATED', amountSen: 2_100_000_000_00 })
      expect(await book.record(first)).toBe('created')
      expect(await book.find(first.orderNumber)).toEqual(asRecorded(first))
      const { token } = (await lock.acquire('sweeper', MINUTE))!
      const looked = new Date(t0 + MINUTE)
      expect(await book.noteLookup(first, { at: looked, nextLookupAt: looked }, token)).toBe(true)
      // A form for the same order: no exchange_number of its own, so the one held stays.
      const again = created({ orderNumber: first.orderNumber, amountSen: 1, kind: 'form', createdAt: new Date(t0 + 2 * MINUTE), attached: {} })
      expect(await book.record(again)).toBe('added')
      const both = { ...asRecorded(again), exchangeNumber: 'EX-CREATED', askedSen: [first.amountSen, 1], lookups: 1, lastLookupAt: looked, nextLookupAt: looked }
      expect(await book.find(first.orderNumber)).toEqual(both)
      expect(await book.listOpen()).toEqual([both])
      expect(await book.summary()).toEqual({ open: 1, oldestCreatedAt: again.createdAt })
      // The first amount asked again: moved last, nothing added.
      const third = created({ orderNumber: first.orderNumber, amountSen: first.amountSen, kind: 'session', createdAt: new Date(t0 + 3 * MINUTE), exchangeNumber: 'EX-3' })
      expect(await book.record(third)).toBe('known')
      expect(await book.find(first.orderNumber)).toEqual({ ...asRecorded(third), askedSen: [1, first.amountSen], lookups: 1, lastLookupAt: looked, nextLookupAt: looked })
    })

    it('keeps the last 10 amounts asked, and takes another amount for a closed payment without reopening it', async () => {
      const { book } = await open()
      const first = created({ amountSen: 100 })
      expect(await book.record(first)).toBe('created')
      for (let amount = 200; amount <= 1_200; amount += 100) await book.record({ ...first, amountSen: amount })
      expect((await book.find(first.orderNumber))?.askedSen).toEqual([300, 400, 500, 600, 700, 800, 900, 1_000, 1_100, 1_200])
      expect(await book.settle(first, 'succeeded', 'EX-1')).toBe(true)
      expect(await book.record({ ...first, amountSen: 5 })).toBe('added')
      expect(await book.find(first.orderNumber)).toMatchObject({ status: 'succeeded', amountSen: 5, exchangeNumber: 'EX-1', nextLookupAt: null })
      expect((await book.find(first.orderNumber))?.askedSen).toEqual([400, 500, 600, 700, 800, 900, 1_000, 1_100, 1_200, 5])
      expect(await book.listOpen()).toEqual([])
    })

  })

  describe('one order_number, several credential sets', () => {
    const OTHER = 'c6b5f1c4-0000-4000-8000-000000000002'

    it('keeps a record per uid: find by uid, or the one created last; settle and lookups touch one only', async () => {
      const { book, lock } = await open()
      const orderNumber = `ORD-${randomUUID()}`
      const mine = created({ orderNumber, amountSen: 1_000, createdAt: new Date(t0) })
      const theirs = created({ orderNumber, amountSen: 2_000, uid: OTHER, createdAt: new Date(t0 + MINUTE) })
      expect(await book.record(mine)).toBe('created')
      expect(await book.record(theirs)).toBe('created')
      expect(await book.find(orderNumber, { uid: UID })).toEqual(asRecorded(mine))
      expect(await book.find(orderNumber, { uid: OTHER })).toEqual(asRecorded(theirs))
      expect(await book.find(orderNumber)).toEqual(asRecorded(theirs))
      expect(await book.find(orderNumber, { uid: 'nobody' })).toBeUndefined()
      // Both open, listed by creation; at the same instant, by uid.
      expect((await book.listOpen()).map((payment) => payment.uid)).toEqual([UID, OTHER])
      expect(await book.summary()).toEqual({ open: 2, oldestCreatedAt: mine.createdAt })

      expect(await book.settle(ref(orderNumber, OTHER), 'succeeded', 'EX-B')).toBe(true)
      expect(await book.find(orderNumber, { uid: UID })).toEqual(asRecorded(mine))
      const { token } = (await lock.acquire('sweeper', MINUTE))!
      const at = new Date(t0 + 2 * MINUTE)
      expect(await book.noteLookup(ref(orderNumber, OTHER), { at, nextLookupAt: at }, token)).toBe(false)
      expect(await book.noteLookup(ref(orderNumber), { at, nextLookupAt: at }, token)).toBe(true)
      expect(await book.find(orderNumber, { uid: OTHER })).toMatchObject({ status: 'succeeded', lookups: 0, amountSen: 2_000 })
      expect(await book.find(orderNumber, { uid: UID })).toMatchObject({ status: 'open', lookups: 1, amountSen: 1_000 })
      expect((await book.listOpen()).map((payment) => payment.uid)).toEqual([UID])
      // A record again by one uid leaves the other's amounts alone.
      expect(await book.record({ ...mine, amountSen: 3_000 })).toBe('added')
      expect((await book.find(orderNumber, { uid: OTHER }))?.askedSen).toEqual([2_000])
    })

    it('lists open payments created at one instant by order_number, then uid', async () => {
      const { book } = await open()
      const [a, b] = [`ORD-A-${randomUUID()}`, `ORD-B-${randomUUID()}`]
      const at = new Date(t0)
      for (const [orderNumber, uid] of [[b, UID], [a, OTHER], [b, OTHER], [a, UID]] as const) await book.record(created({ orderNumber, uid, createdAt: at }))
      expect((await book.listOpen()).map((payment) => [payment.orderNumber, payment.uid])).toEqual([
        [a, UID],
        [a, OTHER],
        [b, UID],
        [b, OTHER],
      ])
    })
  })
}
