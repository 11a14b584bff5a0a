import { describe, expect, it } from 'vitest'
import { MAX_PASS_FAILURES } from '../../src/contract/sweep-pass.js'
import { createdPayment, MINUTE, type OpenSpace, sleep } from './payment-book-fixtures.js'

/**
 * The sweep lock and its fence, run from the payment book contract with its way of opening a store: one holder at
 * a time, tokens that grow with every holder, and the book refusing an old holder's lookups.
 */
export function sweepLockContract(open: OpenSpace): void {
  const t0 = Date.now() - 60 * MINUTE
  describe('sweep lock', () => {
    it('has one holder at a time; a release lets the next one in with a bigger token', async () => {
      const { lock } = await open()
      const first = await lock.acquire('a', MINUTE)
      expect(first?.token).toBeGreaterThan(0)
      expect(await lock.acquire('b', MINUTE)).toBeUndefined()
      // Only the holder, with its token, releases.
      await lock.release('b', first!.token)
      await lock.release('a', first!.token + 1)
      expect(await lock.acquire('b', MINUTE)).toBeUndefined()
      await lock.release('a', first!.token)
      const second = await lock.acquire('b', MINUTE)
      expect(second?.token).toBeGreaterThan(first!.token)
    })

    it('renews only the holder’s lease, which then outlasts its first ttl', async () => {
      const { lock } = await open()
      const held = (await lock.acquire('a', 1000))!
      expect(await lock.renew('b', held.token, MINUTE)).toBe(false)
      expect(await lock.renew('a', held.token + 1, MINUTE)).toBe(false)
      expect(await lock.renew('a', held.token, MINUTE)).toBe(true)
      await sleep(1200)
      expect(await lock.acquire('b', MINUTE)).toBeUndefined()
      expect(await lock.renew('a', held.token, MINUTE)).toBe(true)
    })

    it('lets an expired lease be taken over with a bigger token, and fences the old holder out', async () => {
      const { book, lock } = await open()
      const payment = createdPayment()
      expect(await book.record(payment)).toBe('created')
      const old = (await lock.acquire('a', 100))!
      expect(await book.noteLookup(payment, { at: new Date(t0 + MINUTE), nextLookupAt: new Date(t0 + 2 * MINUTE) }, old.token)).toBe(true)
      await sleep(250)
      const next = (await lock.acquire('b', MINUTE))!
      expect(next.token).toBeGreaterThan(old.token)
      // The old holder, still running: its lease is gone, and so is its say over the book.
      expect(await lock.renew('a', old.token, MINUTE)).toBe(false)
      const late = { at: new Date(t0 + 3 * MINUTE), nextLookupAt: new Date(t0 + 4 * MINUTE) }
      expect(await book.noteLookup(payment, late, old.token)).toBe(false)
      expect(await book.noteLookup(payment, { ...late, abandoned: true }, old.token)).toBe(false)
      expect(await book.find(payment.orderNumber)).toMatchObject({ status: 'open', lookups: 1, nextLookupAt: new Date(t0 + 2 * MINUTE) })
      await lock.release('a', old.token)
      expect(await lock.acquire('c', MINUTE)).toBeUndefined()
      expect(await book.noteLookup(payment, late, next.token)).toBe(true)
      expect(await book.find(payment.orderNumber)).toMatchObject({ lookups: 2, nextLookupAt: late.nextLookupAt })
    })

    it('fences a holder out as soon as a newer token was handed out, even after the newer one released', async () => {
      const { book, lock } = await open()
      const payment = createdPayment()
      expect(await book.record(payment)).toBe('created')
      const old = (await lock.acquire('a', MINUTE))!
      await lock.release('a', old.token)
      const next = (await lock.acquire('b', MINUTE))!
      await lock.release('b', next.token)
      expect(await book.noteLookup(payment, { at: new Date(), nextLookupAt: new Date() }, old.token)).toBe(false)
      expect(await book.noteLookup(payment, { at: new Date(), nextLookupAt: new Date() }, next.token)).toBe(true)
    })

    it('says who holds the lock and until when, and keeps the latest pass noted, for any process to read', async () => {
      const { space, lock } = await open()
      const { lock: elsewhere } = await open(space)
      expect(await lock.status()).toEqual({ holder: null, heldUntil: null, lastPass: null })
      const before = Date.now()
      const held = (await lock.acquire('sweeper-a', MINUTE))!
      const status = await elsewhere.status()
      expect(status).toMatchObject({ holder: 'sweeper-a', lastPass: null })
      // The lease's end as the store's clock has it, read back on this one: within the ttl of now, give or take.
      expect(status.heldUntil!.getTime()).toBeGreaterThan(before + MINUTE - 5_000)
      expect(status.heldUntil!.getTime()).toBeLessThan(Date.now() + MINUTE + 5_000)
      const first = { at: new Date(t0), holder: 'sweeper-a', nextAt: new Date(t0 + MINUTE), lookups: 3, found: 1, closed: 1, failures: [{ orderNumber: 'ORD-1', message: 'the status API could not be asked (timeout)' }] }
      await lock.notePass(first)
      expect((await elsewhere.status()).lastPass).toEqual(first)
      const many = Array.from({ length: MAX_PASS_FAILURES + 5 }, (_, i) => ({ orderNumber: `ORD-${i}`, message: 'failed' }))
      const second = { ...first, at: new Date(t0 + MINUTE), nextAt: null, failures: many }
      await elsewhere.notePass(second)
      expect((await lock.status()).lastPass).toEqual({ ...second, failures: many.slice(0, MAX_PASS_FAILURES) })
      await lock.release('sweeper-a', held.token)
      expect(await elsewhere.status()).toEqual({ holder: null, heldUntil: null, lastPass: { ...second, failures: many.slice(0, MAX_PASS_FAILURES) } })
      // A pass noted before any lock was taken leaves the tokens as they were: the first holder still gets a token.
      const { lock: fresh } = await open()
      await fresh.notePass(first)
      expect((await fresh.acquire('b', MINUTE))?.token).toBeGreaterThan(0)
    })

    it('gives the lock to exactly one of many concurrent acquirers across connections, and tokens never repeat', async () => {
      const { space, book } = await open()
      // The tables made first: the race under test is this one, not the schema's.
      await book.summary()
      const connections = await Promise.all([0, 1, 2, 3].map(() => open(space)))
      const tokens: number[] = []
      for (let round = 0; round < 3; round++) {
        const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => connections[i % 4]!.lock.acquire(`owner-${round}-${i}`, MINUTE)))
        const winners = answers.flatMap((answer, i) => (answer === undefined ? [] : [{ token: answer.token, owner: `owner-${round}-${i}` }]))
        expect(winners).toHaveLength(1)
        tokens.push(winners[0]!.token)
        await connections[round]!.lock.release(winners[0]!.owner, winners[0]!.token)
      }
      expect(tokens).toEqual([...tokens].sort((a, b) => a - b))
      expect(new Set(tokens).size).toBe(3)
    })
  })
}
