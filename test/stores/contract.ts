import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Claim, LeaseRef, OrderRef, PaymentState, ReceiverStore } from '../../src/index.js'
import { timelineContract } from './timeline-contract.js'

/**
 * The promises every store makes to the receiver (src/contract), run against each store: the memory store, Redis
 * through ioredis and node-redis, PostgreSQL through pg and PGlite. `open` returns a store (fresh or shared, but
 * exchange numbers are unique per test) made with `options`, and `close` releases what it holds.
 */
export interface StoreUnderTest {
  name: string
  open(options?: StoreOptions): Promise<OpenedStore>
  /** Whether the store can see leases of other processes (busy without `settled`); the memory store cannot. */
  shared: boolean
  /** Whether a claim holds a transaction that ends with its lease (PostgreSQL's transactional mode, PGlite's too). */
  transactional?: boolean
}

/** The options every store takes. */
export interface StoreOptions {
  retentionMs?: number
}

export interface OpenedStore {
  store: ReceiverStore<unknown>
  close(): Promise<void>
  /**
   * How many timeline entries the store holds under a key, past any read limit (the Redis list's length, the table's
   * rows); a store that cannot tell leaves it out, and tests the bound in its own file.
   */
  keptTimeline?(kind: 'exchange' | 'order', value: string): Promise<number>
}

const LEASE_MS = 30_000
/** A retention short enough to wait out (the stores take whole milliseconds; PostgreSQL's clock is the server's). */
export const RETENTION_MS = 1200
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export function storeContract(subject: StoreUnderTest): void {
  describe(`${subject.name}: store contract`, () => {
    let opened: OpenedStore
    let store: ReceiverStore<unknown>
    beforeAll(async () => {
      opened = await subject.open()
      store = opened.store
    })
    afterAll(async () => {
      await opened.close()
    })

    const exchange = () => `EX-${randomUUID()}`
    const lease = (exchangeNumber: string, state: PaymentState, owner = randomUUID()): LeaseRef => ({ exchangeNumber, state, owner })
    const claim = (ref: LeaseRef & OrderRef, leaseMs = LEASE_MS): Promise<Claim<unknown>> => store.claim({ ...ref, leaseMs })

    async function handled(exchangeNumber: string, state: PaymentState): Promise<void> {
      const ref = lease(exchangeNumber, state)
      expect((await claim(ref)).outcome).toBe('claimed')
      expect(await store.complete(ref)).toBe(true)
    }

    it('claims a new payment state, then reports it as a duplicate once completed', async () => {
      const ex = exchange()
      const first = lease(ex, 'succeeded')
      expect(await claim(first)).toMatchObject({ outcome: 'claimed', previousState: null })
      expect(await store.complete(first)).toBe(true)
      expect((await claim(lease(ex, 'succeeded'))).outcome).toBe('duplicate')
    })

    it('lets the next delivery claim after a release, recording nothing', async () => {
      const ex = exchange()
      const first = lease(ex, 'succeeded')
      await claim(first)
      expect(await store.release(first)).toBe(true)
      const second = lease(ex, 'succeeded')
      expect(await claim(second)).toMatchObject({ outcome: 'claimed', previousState: null })
      expect(await store.complete(second)).toBe(true)
    })

    it('answers busy to another owner while a live lease is held', async () => {
      const ex = exchange()
      const holder = lease(ex, 'succeeded')
      await claim(holder)
      const other = await claim(lease(ex, 'succeeded'))
      expect(other.outcome).toBe('busy')
      if (other.outcome === 'busy') {
        expect(other.retryAfterMs).toBeGreaterThan(0)
        expect(other.retryAfterMs).toBeLessThanOrEqual(LEASE_MS)
      }
      expect(await store.complete(holder)).toBe(true)
    })

    it('grants exactly one of many concurrent claims of the same payment state', async () => {
      const ex = exchange()
      const refs = Array.from({ length: 20 }, () => lease(ex, 'succeeded'))
      const claims = await Promise.all(refs.map((ref) => claim(ref)))
      expect(claims.filter((c) => c.outcome === 'claimed')).toHaveLength(1)
      expect(claims.filter((c) => c.outcome === 'busy')).toHaveLength(19)
      const winner = refs[claims.findIndex((c) => c.outcome === 'claimed')]!
      expect(await store.complete(winner)).toBe(true)
    })

    it('lets the next delivery take over an expired lease; the old owner can then neither complete nor release', async () => {
      const ex = exchange()
      const crashed = lease(ex, 'succeeded')
      await claim(crashed, 50)
      await sleep(120)
      const next = lease(ex, 'succeeded')
      expect(await claim(next)).toMatchObject({ outcome: 'claimed' })
      expect(await store.complete(crashed)).toBe(false)
      expect(await store.release(crashed)).toBe(false)
      expect(await store.complete(next)).toBe(true)
      expect((await claim(lease(ex, 'succeeded'))).outcome).toBe('duplicate')
    })

    it('refuses completion and release by an owner that never held the lease', async () => {
      const ex = exchange()
      const holder = lease(ex, 'succeeded')
      await claim(holder)
      expect(await store.complete(lease(ex, 'succeeded'))).toBe(false)
      expect(await store.release(lease(ex, 'succeeded'))).toBe(false)
      expect(await store.complete(holder)).toBe(true)
    })

    it('answers stale before duplicate, busy before both, and lets only the owner of the claimed state end it', async () => {
      const paid = exchange()
      await handled(paid, 'pending')
      await handled(paid, 'succeeded')
      expect(await claim(lease(paid, 'pending'))).toEqual({ outcome: 'stale', currentState: 'succeeded' })
      expect(await claim(lease(paid, 'failed'))).toEqual({ outcome: 'stale', currentState: 'succeeded' })
      expect(await claim(lease(paid, 'succeeded'))).toEqual({ outcome: 'duplicate' })
      const retried = exchange()
      await handled(retried, 'failed')
      expect(await claim(lease(retried, 'pending'))).toEqual({ outcome: 'stale', currentState: 'failed' })
      expect(await claim(lease(retried, 'failed'))).toEqual({ outcome: 'duplicate' })
      const holder = lease(retried, 'succeeded')
      expect(await claim(holder)).toMatchObject({ outcome: 'claimed', previousState: 'failed' })
      // While another delivery holds the payment, even a result the claim would call stale or a duplicate waits. A
      // transactional store cannot see the holder's lease without waiting for its row: it may give at once the
      // answer the states already recorded decide, which the holder cannot change (contract/store.ts, Claim).
      const decided = { pending: { outcome: 'stale', currentState: 'failed' }, failed: { outcome: 'duplicate' } } as const
      for (const state of ['pending', 'failed'] as const) {
        const answer = await claim(lease(retried, state))
        if (subject.transactional === true && answer.outcome !== 'busy') expect(answer).toEqual(decided[state])
        else expect(answer.outcome).toBe('busy')
      }
      expect((await claim(lease(retried, 'succeeded'))).outcome).toBe('busy')
      expect(await store.complete({ ...holder, state: 'failed' }), 'the owner, for a state it did not claim').toBe(false)
      expect(await store.release({ ...holder, state: 'pending' }), 'the owner, for a state it did not claim').toBe(false)
      expect(await store.complete(lease(retried, 'succeeded'))).toBe(false)
      expect(await store.complete(holder)).toBe(true)
      expect(await store.release(holder), 'completed: nothing left to release').toBe(false)
      expect(await claim(lease(retried, 'succeeded'))).toEqual({ outcome: 'duplicate' })
      const untouched = exchange()
      expect([await store.complete(lease(untouched, 'succeeded')), await store.release(lease(untouched, 'succeeded'))]).toEqual([false, false])
      const first = lease(untouched, 'succeeded')
      expect(await claim(first)).toMatchObject({ outcome: 'claimed', previousState: null })
      expect(await store.complete(first)).toBe(true)
    })

    it('lets an owner whose lease ran out, with nobody claiming meanwhile, still complete or release', async () => {
      // A transactional claim's lease ends with its transaction, rolled back with the handlers' writes.
      if (subject.transactional === true) return
      const completing = exchange()
      await handled(completing, 'pending')
      const late = lease(completing, 'failed')
      await claim(late, 50)
      await sleep(150)
      expect(await store.complete(late)).toBe(true)
      const next = lease(completing, 'succeeded')
      expect(await claim(next)).toMatchObject({ outcome: 'claimed', previousState: 'failed' })
      expect(await store.complete(next)).toBe(true)

      const releasing = exchange()
      await handled(releasing, 'pending')
      const gaveUp = lease(releasing, 'succeeded')
      await claim(gaveUp, 50)
      await sleep(150)
      expect(await store.release(gaveUp)).toBe(true)
      expect(await store.release(gaveUp), 'released already').toBe(false)
      const after = lease(releasing, 'succeeded')
      expect(await claim(after)).toMatchObject({ outcome: 'claimed', previousState: 'pending' })
      expect(await store.complete(after)).toBe(true)

      // A first state: where the lease ended with the store's record of the payment (Redis), the completion is
      // refused, and the same owner's claim again is granted and completed, as the receiver does (dispatch.ts).
      const fresh = exchange()
      const alone = lease(fresh, 'succeeded')
      await claim(alone, 50)
      await sleep(150)
      if (!(await store.complete(alone))) {
        expect(await claim(alone)).toMatchObject({ outcome: 'claimed', previousState: null })
        expect(await store.complete(alone)).toBe(true)
      }
      expect(await claim(lease(fresh, 'succeeded'))).toEqual({ outcome: 'duplicate' })
    })

    it('moves pending to succeeded with previousState, and calls a late pending stale', async () => {
      const ex = exchange()
      await handled(ex, 'pending')
      const approved = lease(ex, 'succeeded')
      expect(await claim(approved)).toMatchObject({ outcome: 'claimed', previousState: 'pending' })
      expect(await store.complete(approved)).toBe(true)
      expect(await claim(lease(ex, 'pending'))).toMatchObject({ outcome: 'stale', currentState: 'succeeded' })
    })

    it('never regresses: a failure after a success is stale, a success after a failure is claimed', async () => {
      const paid = exchange()
      await handled(paid, 'succeeded')
      expect(await claim(lease(paid, 'failed'))).toMatchObject({ outcome: 'stale', currentState: 'succeeded' })
      const retried = exchange()
      await handled(retried, 'failed')
      const succeeded = lease(retried, 'succeeded')
      expect(await claim(succeeded)).toMatchObject({ outcome: 'claimed', previousState: 'failed' })
      // Completed, not left open: a store with one session (PGlite, transactional) serves one claim at a time.
      expect(await store.complete(succeeded)).toBe(true)
    })

    it('forgets handled states once retentionMs has passed', async () => {
      const short = await subject.open({ retentionMs: RETENTION_MS })
      try {
        const ex = exchange()
        const first = lease(ex, 'succeeded')
        expect((await short.store.claim({ ...first, leaseMs: LEASE_MS })).outcome).toBe('claimed')
        expect(await short.store.complete(first)).toBe(true)
        expect((await short.store.claim({ ...lease(ex, 'succeeded'), leaseMs: LEASE_MS })).outcome).toBe('duplicate')
        await sleep(RETENTION_MS + 300)
        const again = lease(ex, 'succeeded')
        expect(await short.store.claim({ ...again, leaseMs: LEASE_MS })).toMatchObject({ outcome: 'claimed', previousState: null })
        expect(await short.store.complete(again)).toBe(true)
      } finally {
        await short.close()
      }
    })

    timelineContract(subject, () => opened)

    it('tells a claim of another payment of an order whose success was handled which payment paid it', async () => {
      const orderNumber = `ORD-${randomUUID()}`
      const [first, retry, other] = [exchange(), exchange(), exchange()]
      const failed = { ...lease(first, 'failed'), orderNumber }
      expect(await claim(failed)).toMatchObject({ outcome: 'claimed', paidBy: null })
      expect(await store.complete(failed)).toBe(true)
      const paid = { ...lease(retry, 'succeeded'), orderNumber }
      expect(await claim(paid)).toMatchObject({ outcome: 'claimed', paidBy: null })
      expect(await store.complete(paid)).toBe(true)
      // A late result of another attempt at the same order: the claim says the order is paid, and by which payment.
      const late = { ...lease(other, 'failed'), orderNumber }
      expect(await claim(late)).toMatchObject({ outcome: 'claimed', paidBy: retry })
      expect(await store.release(late)).toBe(true)
      // Orders are told apart by the merchant's uid when given, and the paying payment itself is not "paid by" itself.
      const elsewhere = { ...lease(other, 'failed'), orderNumber, uid: 'another-merchant' }
      expect(await claim(elsewhere)).toMatchObject({ outcome: 'claimed', paidBy: null })
      // Released, not left open: a store with one session (PGlite, transactional) serves one claim at a time.
      expect(await store.release(elsewhere)).toBe(true)
    })

    it('says whether an order was paid by another payment while a claim was held', async () => {
      const paidBy = store.paidBy?.bind(store)
      expect(paidBy, 'every built-in store answers paidBy').toBeTypeOf('function')
      if (paidBy === undefined) return
      const orderNumber = `ORD-${randomUUID()}`
      const [failing, paying] = [exchange(), exchange()]
      const failed = { ...lease(failing, 'failed'), orderNumber }
      expect(await claim(failed)).toMatchObject({ outcome: 'claimed', paidBy: null })
      expect(await paidBy(failed)).toBeNull()
      // Released before the next claim: a store with one session (PGlite, transactional) serves one claim at a time.
      expect(await store.release(failed)).toBe(true)
      // Paid by another payment after the failed result was claimed (as while its API call is in flight).
      const paid = { ...lease(paying, 'succeeded'), orderNumber }
      expect(await claim(paid)).toMatchObject({ outcome: 'claimed', paidBy: null })
      expect(await store.complete(paid)).toBe(true)
      expect(await paidBy(failed)).toBe(paying)
      expect(await paidBy(paid), 'not paid by itself').toBeNull()
      expect(await paidBy({ ...failed, uid: 'another-merchant' })).toBeNull()
      expect(await paidBy({ ...failed, orderNumber: undefined })).toBeNull()
    })

    it('names the latest payment that paid an order paid twice, and nothing for an order only failed', async () => {
      const paidBy = store.paidBy?.bind(store)
      if (paidBy === undefined) return
      const orderNumber = `ORD-${randomUUID()}`
      const [asking, first, second] = [exchange(), exchange(), exchange()]
      const failedOnly = { ...lease(exchange(), 'failed'), orderNumber }
      expect(await claim(failedOnly)).toMatchObject({ outcome: 'claimed', paidBy: null })
      expect(await store.complete(failedOnly)).toBe(true)
      expect(await paidBy({ ...lease(asking, 'failed'), orderNumber })).toBeNull()
      for (const ex of [first, second]) {
        const paying = { ...lease(ex, 'succeeded'), orderNumber }
        expect((await claim(paying)).outcome).toBe('claimed')
        expect(await store.complete(paying)).toBe(true)
      }
      expect(await paidBy({ ...lease(asking, 'failed'), orderNumber })).toBe(second)
      expect(await paidBy({ ...lease(first, 'failed'), orderNumber })).toBe(second)
      const late = { ...lease(asking, 'pending'), orderNumber }
      expect(await claim(late)).toMatchObject({ outcome: 'claimed', paidBy: second })
      expect(await store.release(late)).toBe(true)
    })

    it('reads the booked payment with the claim and settles it with the completion', async () => {
      const book = store.paymentBook?.()
      if (book === undefined) return
      const orderNumber = `ORD-${randomUUID()}`
      const uid = `uid-${randomUUID()}`
      await book.record({ orderNumber, amountSen: 1020, uid, kind: 'payment', createdAt: new Date(), exchangeNumber: null, attached: { sku: 'A1' } })
      const ex = exchange()
      const paying = { ...lease(ex, 'succeeded'), orderNumber, uid }
      const claimed = await claim(paying)
      expect(claimed).toMatchObject({ outcome: 'claimed', booked: { orderNumber, amountSen: 1020, uid, status: 'open', attached: { sku: 'A1' } } })
      expect(await store.complete(paying)).toBe(true)
      expect(await book.find(orderNumber, { uid })).toMatchObject({ status: 'succeeded', state: 'succeeded', exchangeNumber: ex })
      // An order the book never saw: nothing read, nothing settled.
      const unbooked = { ...lease(exchange(), 'succeeded'), orderNumber: `ORD-${randomUUID()}` }
      const plain = await claim(unbooked)
      expect(plain.outcome === 'claimed' && plain.booked).toBeFalsy()
      expect(await store.complete(unbooked)).toBe(true)
    })

    it('keeps payments apart', async () => {
      const [a, b] = [exchange(), exchange()]
      await handled(a, 'succeeded')
      const other = lease(b, 'succeeded')
      expect(await claim(other)).toMatchObject({ outcome: 'claimed', previousState: null })
      expect(await store.complete(other)).toBe(true)
    })
  })
}
