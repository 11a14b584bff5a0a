import { describe, expect, it } from 'vitest'
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
