import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import type { ReceiverStore, TimelineEntry } from '../../src/index.js'

/** The timeline every built-in store keeps, run from the store contract with the store it opened. */
export function timelineContract(name: string, store: () => ReceiverStore<unknown>): void {
  describe(`${name}: timeline`, () => {
    const entry = (overrides: Partial<TimelineEntry>): TimelineEntry => ({
      at: new Date(),
      event: 'received',
      exchangeNumber: null,
      orderNumber: null,
      state: null,
      source: 'callback',
      attempt: randomUUID(),
      verified: true,
      code: null,
      status: null,
      message: null,
      ...overrides,
    })

    it('has appendTimeline and readTimeline', () => {
      expect(typeof store().appendTimeline).toBe('function')
      expect(typeof store().readTimeline).toBe('function')
    })

    it('finds entries by order_number and by exchange_number, oldest first, with every field as written', async () => {
      const [ex, order, otherEx] = [`EX-${randomUUID()}`, `ORD-${randomUUID()}`, `EX-${randomUUID()}`]
      const t0 = Date.now() - 10_000
      const first = entry({ at: new Date(t0), exchangeNumber: ex, orderNumber: order, state: 'succeeded' })
      const refused = entry({
        at: new Date(t0 + 5),
        event: 'refused',
        exchangeNumber: otherEx,
        orderNumber: order,
        verified: false,
        code: 'checksum_mismatch',
        status: 401,
        message: 'the checksum does not match',
      })
      const last = entry({ at: new Date(t0 + 9), event: 'processed', exchangeNumber: ex, orderNumber: order, state: 'succeeded', status: 200 })
      // Written out of order, in two batches: reads sort by time.
      await store().appendTimeline!([last])
      await store().appendTimeline!([first, refused])
      expect(await store().readTimeline!({ orderNumber: order })).toEqual([first, refused, last])
      expect(await store().readTimeline!({ exchangeNumber: ex })).toEqual([first, last])
      expect(await store().readTimeline!({ exchangeNumber: otherEx })).toEqual([refused])
      expect(await store().readTimeline!({ orderNumber: `ORD-${randomUUID()}` })).toEqual([])
    })

    it('keeps entries of one instant in the order they were written, and returns the latest `limit`', async () => {
      const ex = `EX-${randomUUID()}`
      const at = new Date(Date.now() - 1000)
      const events = ['received', 'verified', 'handler_failed', 'received', 'verified', 'processed'] as const
      await store().appendTimeline!(events.map((event) => entry({ at, event, exchangeNumber: ex })))
      expect((await store().readTimeline!({ exchangeNumber: ex })).map((e) => e.event)).toEqual(events)
      expect((await store().readTimeline!({ exchangeNumber: ex, limit: 2 })).map((e) => e.event)).toEqual(['verified', 'processed'])
    })

    it('refuses a query that names no payment', async () => {
      await expect(async () => store().readTimeline!({} as { orderNumber: string })).rejects.toThrow(/orderNumber.*exchangeNumber/)
      await expect(async () => store().readTimeline!({ orderNumber: 'x', limit: 0 })).rejects.toThrow(/limit/)
    })
  })
}
