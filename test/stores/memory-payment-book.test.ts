import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../src/index.js'
import type { CreatedPayment } from '../../src/contract/payment-book.js'
import { ref, UID } from './payment-book-fixtures.js'

const payment = (orderNumber: string, minutes = 0): CreatedPayment => ({
  orderNumber,
  amountSen: 100,
  uid: UID,
  kind: 'form',
  createdAt: new Date(Date.UTC(2026, 0, 1, 0, minutes)),
  exchangeNumber: null,
  attached: {},
})

describe('memory payment book: maxEntries', () => {
  it('at the cap, forgets the payment closed longest ago first, then the open one recorded first', async () => {
    const store = memoryStore({ maxEntries: 3 })
    const book = store.paymentBook!()
    for (const order of ['A', 'B', 'C']) expect(await book.record(payment(order))).toBe('created')
    // Closed in the order C, A: C goes first, though A was recorded before it.
    await book.settle(ref('C'), 'succeeded', 'EX-C')
    await book.settle(ref('A'), 'failed', 'EX-A')
    expect(await book.record(payment('D'))).toBe('created')
    expect(await book.find('C')).toBeUndefined()
    expect(await book.find('A')).toMatchObject({ status: 'failed' })
    expect(await book.record(payment('E'))).toBe('created')
    expect(await book.find('A')).toBeUndefined()
    // Only open ones left (B, D, E): the one recorded first goes.
    expect(await book.record(payment('F'))).toBe('created')
    expect(await book.find('B')).toBeUndefined()
    expect((await book.listOpen()).map((booked) => booked.orderNumber)).toEqual(['D', 'E', 'F'])
    expect(await book.summary()).toMatchObject({ open: 3 })
  })

  it('keeps a closed payment that closed again later (a success after a failure) behind those closed since', async () => {
    const store = memoryStore({ maxEntries: 3 })
    const book = store.paymentBook!()
    for (const order of ['A', 'B', 'C']) await book.record(payment(order))
    await book.settle(ref('A'), 'failed', 'EX-A')
    await book.settle(ref('B'), 'failed', 'EX-B')
    await book.settle(ref('A'), 'succeeded', 'EX-A')
    await book.record(payment('D'))
    expect(await book.find('B')).toBeUndefined()
    expect(await book.find('A')).toMatchObject({ status: 'succeeded' })
  })
  it('keeps forgetting the payment closed longest ago as payments keep coming past the cap', async () => {
    const store = memoryStore({ maxEntries: 3 })
    const book = store.paymentBook!()
    for (let i = 0; i < 20; i++) {
      expect(await book.record(payment(`P${i}`))).toBe('created')
      expect(await book.settle(ref(`P${i}`), 'succeeded', `EX-${i}`)).toBe(true)
      if (i < 3) continue
      expect(await book.find(`P${i - 3}`)).toBeUndefined()
      for (const kept of [i - 2, i - 1, i]) expect(await book.find(`P${kept}`)).toMatchObject({ status: 'succeeded' })
    }
  })
})
