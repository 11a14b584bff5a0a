import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import type { PaymentState, ReceiverStore } from '../../src/index.js'
import { MAX_FAILURE_MESSAGE, type SeenResult } from '../../src/contract/payment-book.js'
import type { Release } from '../../src/contract/store.js'
import { MINUTE, UID } from './payment-book-fixtures.js'
import type { RecordAgainParts } from './record-again-contract.js'

/**
 * What a delivery's completion and release tell the book, run from the payment book contract: an order the client
 * did not record gets a `result` record in the completion's statement, the buyer a result names fills what the
 * record lacks, and a handler failure is counted on the release.
 */
export function seenResultsContract({ open, created }: Pick<RecordAgainParts, 'open' | 'created'>): void {
  const seen = (overrides: Partial<SeenResult> = {}): SeenResult => ({ uid: UID, amountSen: 10_020, buyerEmail: 'Buyer@Example.com', buyerName: 'Siti Aminah', ...overrides })

  /** Claims the state of a new payment of `orderNumber` and completes it (with `result` seen, if any). */
  async function handled(store: ReceiverStore<unknown>, orderNumber: string, state: PaymentState, result?: SeenResult, exchangeNumber = `EX-${randomUUID()}`) {
    const lease = { exchangeNumber, state, owner: randomUUID(), orderNumber, uid: result?.uid ?? UID }
    const claim = await store.claim({ ...lease, leaseMs: MINUTE })
    expect(claim.outcome).toBe('claimed')
    expect(await store.complete({ ...lease, ...(result === undefined ? {} : { seen: result }) })).toBe(true)
    return { exchangeNumber, claim }
  }

  /** Claims the state and releases it after a handler failure. */
  async function failed(store: ReceiverStore<unknown>, orderNumber: string, state: PaymentState, message: string, result?: SeenResult, exchangeNumber = `EX-${randomUUID()}`) {
    const lease = { exchangeNumber, state, owner: randomUUID(), orderNumber, uid: result?.uid ?? UID }
    expect((await store.claim({ ...lease, leaseMs: MINUTE })).outcome).toBe('claimed')
    const release: Release = { ...lease, failure: { message, ...(result === undefined ? {} : { seen: result }) } }
    expect(await store.release(release)).toBe(true)
    return exchangeNumber
  }

  describe('payments first seen in a result', () => {
    it('records an order the client did not record from its handled result, in the completion', async () => {
      const { store, book } = await open()
      const orderNumber = `ORD-${randomUUID()}`
      const before = Date.now()
      const { exchangeNumber } = await handled(store, orderNumber, 'succeeded', seen())
      const found = await book.find(orderNumber)
      expect(found).toEqual({
        orderNumber,
        amountSen: 10_020,
        askedSen: [10_020],
        uid: UID,
        kind: 'result',
        createdAt: expect.any(Date),
        exchangeNumber,
        attached: {},
        status: 'succeeded',
        state: 'succeeded',
        lookups: 0,
        lastLookupAt: null,
        nextLookupAt: null,
        buyerEmail: 'Buyer@Example.com',
        buyerName: 'Siti Aminah',
        failures: 0,
        lastFailure: null,
        settledAt: expect.any(Date),
      })
      expect(found?.createdAt.getTime()).toBeGreaterThanOrEqual(before)
      expect(found?.settledAt?.getTime()).toBeGreaterThanOrEqual(before)
      // A later result of the order: its claim reads nothing recorded by the client, so nothing is checked against it.
      const later = await store.claim({ exchangeNumber: `EX-${randomUUID()}`, state: 'succeeded', owner: randomUUID(), leaseMs: MINUTE, orderNumber, uid: UID })
      expect(later.outcome === 'claimed' && later.booked).toBeFalsy()
    })

    it('records a result of unknown credential set and amount with uid "" and amount 0, none asked', async () => {
      const { store, book } = await open()
      const orderNumber = `ORD-${randomUUID()}`
      const lease = { exchangeNumber: `EX-${randomUUID()}`, state: 'failed' as const, owner: randomUUID(), orderNumber }
      expect((await store.claim({ ...lease, leaseMs: MINUTE })).outcome).toBe('claimed')
      expect(await store.complete({ ...lease, seen: seen({ uid: null, amountSen: null, buyerEmail: null, buyerName: null }) })).toBe(true)
      expect(await book.find(orderNumber)).toMatchObject({ uid: '', amountSen: 0, askedSen: [], kind: 'result', status: 'failed', buyerEmail: null, buyerName: null })
    })

    it('keeps a result pending approval open and due at once, then closes it with the final result', async () => {
      const { store, book } = await open()
      const orderNumber = `ORD-${randomUUID()}`
      const { exchangeNumber } = await handled(store, orderNumber, 'pending', seen())
      expect(await book.find(orderNumber)).toMatchObject({ kind: 'result', status: 'open', state: 'pending', exchangeNumber })
      expect((await book.listOpen({ dueBy: new Date(Date.now() + 1000) })).map((payment) => payment.orderNumber)).toEqual([orderNumber])
      await handled(store, orderNumber, 'succeeded', seen(), exchangeNumber)
      expect(await book.find(orderNumber)).toMatchObject({ kind: 'result', status: 'succeeded', state: 'succeeded', nextLookupAt: null })
      expect(await book.summary()).toEqual({ open: 0, oldestCreatedAt: null })
    })

    it('records nothing for a completion that names no result', async () => {
      const { store, book } = await open()
      const orderNumber = `ORD-${randomUUID()}`
      await handled(store, orderNumber, 'succeeded')
      expect(await book.find(orderNumber)).toBeUndefined()
    })

    it('fills the buyer a recorded payment lacks from its result, and keeps the one its creation gave', async () => {
      const { store, book } = await open()
      const [bare, named] = [created(), created({ buyerEmail: 'first@shop.test', buyerName: 'First' })]
      for (const payment of [bare, named]) expect(await book.record(payment)).toBe('created')
      await handled(store, bare.orderNumber, 'succeeded', seen())
      await handled(store, named.orderNumber, 'succeeded', seen())
      expect(await book.find(bare.orderNumber)).toMatchObject({ kind: bare.kind, buyerEmail: 'Buyer@Example.com', buyerName: 'Siti Aminah', status: 'succeeded' })
      expect(await book.find(named.orderNumber)).toMatchObject({ kind: named.kind, buyerEmail: 'first@shop.test', buyerName: 'First', status: 'succeeded' })
    })

    it('shows the creation once the client records an order first seen in a result, its state kept', async () => {
      const { store, book } = await open()
      const orderNumber = `ORD-${randomUUID()}`
      await handled(store, orderNumber, 'failed', seen())
      expect(await book.record(created({ orderNumber, amountSen: 500 }))).toBe('added')
      expect(await book.find(orderNumber)).toMatchObject({ kind: 'form', amountSen: 500, askedSen: [10_020, 500], status: 'failed', state: 'failed' })
    })
  })

  describe('handler failures', () => {
    it('counts each failure on the release, keeps the latest message, and clears them when the state is handled', async () => {
      const { store, book } = await open()
      const payment = created()
      await book.record(payment)
      const before = Date.now()
      const exchangeNumber = await failed(store, payment.orderNumber, 'succeeded', 'TypeError: cannot read the cart')
      await failed(store, payment.orderNumber, 'succeeded', `ERP down ${'x'.repeat(400)}`, undefined, exchangeNumber)
      const failing = await book.find(payment.orderNumber)
      expect(failing).toMatchObject({ status: 'open', state: null, failures: 2, lastFailure: { state: 'succeeded', at: expect.any(Date) } })
      expect(failing?.lastFailure?.at.getTime()).toBeGreaterThanOrEqual(before)
      expect(failing?.lastFailure?.message).toMatch(/^ERP down x+…$/)
      expect(failing?.lastFailure?.message).toHaveLength(MAX_FAILURE_MESSAGE)
      // A release without a failure (the API could not confirm yet, say) counts nothing.
      const plain = { exchangeNumber, state: 'succeeded' as const, owner: randomUUID(), orderNumber: payment.orderNumber, uid: UID }
      await store.claim({ ...plain, leaseMs: MINUTE })
      expect(await store.release(plain)).toBe(true)
      expect(await book.find(payment.orderNumber)).toMatchObject({ failures: 2 })
      await handled(store, payment.orderNumber, 'succeeded', undefined, exchangeNumber)
      expect(await book.find(payment.orderNumber)).toMatchObject({ status: 'succeeded', failures: 0, lastFailure: { state: 'succeeded', message: failing?.lastFailure?.message } })
    })

    it('keeps counting a failing success while a lower state is handled, and clears a failing 99 with the success', async () => {
      const { store, book } = await open()
      const [paid, approving] = [created(), created()]
      for (const payment of [paid, approving]) await book.record(payment)
      await failed(store, paid.orderNumber, 'succeeded', 'handler threw')
      await handled(store, paid.orderNumber, 'pending')
      expect(await book.find(paid.orderNumber)).toMatchObject({ state: 'pending', failures: 1, lastFailure: { state: 'succeeded' } })
      await failed(store, approving.orderNumber, 'pending', 'handler threw')
      await handled(store, approving.orderNumber, 'succeeded')
      expect(await book.find(approving.orderNumber)).toMatchObject({ state: 'succeeded', failures: 0 })
    })

    it('records an order the client did not record, open, with its first failure', async () => {
      const { store, book } = await open()
      const orderNumber = `ORD-${randomUUID()}`
      const exchangeNumber = await failed(store, orderNumber, 'succeeded', 'handler threw', seen())
      expect(await book.find(orderNumber)).toMatchObject({
        kind: 'result',
        status: 'open',
        state: null,
        exchangeNumber,
        failures: 1,
        lastFailure: { state: 'succeeded', message: 'handler threw' },
        buyerEmail: 'Buyer@Example.com',
      })
      // Without a result to go by, an order the book does not hold gets nothing.
      const unknown = `ORD-${randomUUID()}`
      await failed(store, unknown, 'succeeded', 'handler threw')
      expect(await book.find(unknown)).toBeUndefined()
    })

    it('counts nothing for a release by an owner that does not hold the lease', async () => {
      const { store, book } = await open()
      const payment = created()
      await book.record(payment)
      const lease = { exchangeNumber: `EX-${randomUUID()}`, state: 'succeeded' as const, owner: randomUUID(), orderNumber: payment.orderNumber, uid: UID }
      await store.claim({ ...lease, leaseMs: MINUTE })
      expect(await store.release({ ...lease, owner: randomUUID(), failure: { message: 'not mine' } })).toBe(false)
      expect(await book.find(payment.orderNumber)).toMatchObject({ failures: 0, lastFailure: null })
      expect(await store.release(lease)).toBe(true)
    })
  })
}
