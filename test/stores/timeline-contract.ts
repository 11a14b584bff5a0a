import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import type { ReceiverStore, TimelineEntry } from '../../src/index.js'
import { MAX_TIMELINE_ENTRIES } from '../../src/contract/timeline.js'
import { type OpenedStore, RETENTION_MS, type StoreUnderTest } from './contract.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

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

/** Writes `count` entries of one payment as the receiver does: three per delivery, in batches of at most 500. */
async function flood(store: ReceiverStore<unknown>, exchangeNumber: string, orderNumber: string, count: number, from: number): Promise<void> {
  const events = ['received', 'verified', 'duplicate'] as const
  const entries = Array.from({ length: count }, (_, i) =>
    entry({ at: new Date(from + i), event: events[i % 3], exchangeNumber, orderNumber, state: 'succeeded', attempt: `flood-${Math.floor(i / 3)}` }),
  )
  for (let at = 0; at < entries.length; at += 500) await store.appendTimeline!(entries.slice(at, at + 500))
}

/** The timeline every built-in store keeps (src/contract/timeline.ts), run from the store contract with the store it opened. */
export function timelineContract(subject: StoreUnderTest, opened: () => OpenedStore): void {
  const store = () => opened().store
  describe(`${subject.name}: timeline`, () => {
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

    it('keeps entries without an exchange_number under their order_number', async () => {
      const order = `ORD-${randomUUID()}`
      const written = [entry({ at: new Date(Date.now() - 20), orderNumber: order }), entry({ event: 'dead_lettered', orderNumber: order })]
      await store().appendTimeline!(written)
      expect(await store().readTimeline!({ orderNumber: order })).toEqual(written)
    })

    it(`returns at most ${MAX_TIMELINE_ENTRIES} entries, and keeps the latest ${MAX_TIMELINE_ENTRIES} of a payment under a flood`, async () => {
      const [ex, order] = [`EX-${randomUUID()}`, `ORD-${randomUUID()}`]
      const count = Math.floor(2.5 * MAX_TIMELINE_ENTRIES)
      const from = Date.now() - 60_000
      await flood(store(), ex, order, count, from)
      for (const query of [{ exchangeNumber: ex }, { orderNumber: order }]) {
        for (const limit of [undefined, MAX_TIMELINE_ENTRIES, 10 * MAX_TIMELINE_ENTRIES]) {
          const read = await store().readTimeline!({ ...query, ...(limit === undefined ? {} : { limit }) })
          // The latest, oldest first: the entries written last.
          expect(read.map((e) => e.at.getTime())).toEqual(Array.from({ length: MAX_TIMELINE_ENTRIES }, (_, i) => from + count - MAX_TIMELINE_ENTRIES + i))
        }
        expect(await store().readTimeline!({ ...query, limit: 3 })).toHaveLength(3)
      }
      // Past what a read returns, what is kept stays bounded (a Redis list, the table's rows).
      const kept = opened().keptTimeline
      if (kept !== undefined) {
        for (const [kind, value] of [['exchange', ex], ['order', order]] as const) {
          const held = await kept(kind, value)
          expect(held).toBeGreaterThanOrEqual(MAX_TIMELINE_ENTRIES)
          expect(held).toBeLessThanOrEqual(2 * MAX_TIMELINE_ENTRIES)
        }
      }
    })

    it('keeps entries retentionMs after they were written, whenever they happened, and forgets them after', async () => {
      const short = await subject.open({ retentionMs: RETENTION_MS })
      try {
        const [ex, order] = [`EX-${randomUUID()}`, `ORD-${randomUUID()}`]
        // Long before the retention began: kept from when it is written, not from `at`.
        const old = entry({ at: new Date(Date.now() - 100 * RETENTION_MS), exchangeNumber: ex, orderNumber: order, state: 'pending' })
        await short.store.appendTimeline!([old])
        expect(await short.store.readTimeline!({ exchangeNumber: ex })).toEqual([old])
        expect(await short.store.readTimeline!({ orderNumber: order })).toEqual([old])
        await sleep(RETENTION_MS + 300)
        expect(await short.store.readTimeline!({ exchangeNumber: ex })).toEqual([])
        expect(await short.store.readTimeline!({ orderNumber: order })).toEqual([])
      } finally {
        await short.close()
      }
    })

    it('refuses a query that names no payment', async () => {
      await expect(async () => store().readTimeline!({} as { orderNumber: string })).rejects.toThrow(/orderNumber.*exchangeNumber/)
      await expect(async () => store().readTimeline!({ orderNumber: 'x', limit: 0 })).rejects.toThrow(/limit/)
    })
  })
}
