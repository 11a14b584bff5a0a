import { describe, expect, it } from 'vitest'
import type { PaymentBook, PaymentState } from '../../src/index.js'
import { BOOK_STORES } from './book-stores.js'

/**
 * Two credential sets record the same order_number at the same instant (a partner's merchants, the client's clock in
 * milliseconds). A find, a claim and a completion that name no uid take "the one created last": every store must
 * take the same one, or a result is checked against one merchant's amount on one store and another's on the next,
 * and the other payment is left open to be swept.
 */
describe.each(BOOK_STORES)('an order recorded by two credential sets at the same instant ($name store)', ({ make }) => {
  it('is found, claimed and settled as the same payment by every store: the smallest uid', async () => {
    const opened = await make()
    try {
      const { store } = opened
      const book = (store.paymentBook as () => PaymentBook)()
      const at = new Date()
      for (const [uid, amountSen] of [['UID-B', 100], ['UID-A', 200], ['UID-C', 300]] as const)
        await book.record({ orderNumber: 'SAME-1', amountSen, uid, kind: 'payment', createdAt: at, exchangeNumber: null, attached: {} })
      expect((await book.find('SAME-1'))?.uid).toBe('UID-A')
      const request = { exchangeNumber: 'EX-SAME-1', state: 'succeeded' as PaymentState, owner: 'one', leaseMs: 30_000, orderNumber: 'SAME-1' }
      const claim = await store.claim(request)
      expect(claim).toMatchObject({ outcome: 'claimed', booked: { uid: 'UID-A', amountSen: 200 } })
      expect(await store.complete({ ...request, seen: { uid: null, amountSen: 200, buyerEmail: null, buyerName: null } })).toBe(true)
      expect((await book.find('SAME-1', { uid: 'UID-A' }))?.status).toBe('succeeded')
      expect((await book.listOpen()).map((payment) => payment.uid).sort()).toEqual(['UID-B', 'UID-C'])
    } finally {
      await opened.close()
    }
  })
})
