import { beforeEach, describe, expect, it } from 'vitest'
import { createClient } from '../../src/client/index.js'
import type { SweepPassNote } from '../../src/contract/payment-book.js'
import { createReceiver, type PaymentEvent } from '../../src/index.js'
import { lostPaid } from '../../soak/lost-paid.js'
import { countingFetch, DEMO, type Emulator } from '../client/helpers.js'
import { BOOK_STORES, freshBookStoreEachTest, type OpenedBookStore } from './book-stores.js'

/*
 * Issue 36, point 5: the sweeper finds a paid payment whose results were all lost whatever else is open. At the
 * default rate (30 requests a minute), one by one in age order, the newest of 1,001 open payments was the 1,001st
 * lookup: over half an hour. The figure with real time is soak/sweep-finds-paid.ts's; this test counts the API
 * requests made before the handler ran.
 */

const HOUR = 3_600_000
const until = async (condition: () => boolean) => {
  for (const start = Date.now(); !condition(); await new Promise((resolve) => setTimeout(resolve, 10)))
    if (Date.now() - start > 60_000) throw new Error('timed out')
}

// The memory store and one durable store: a thousand payments each.
describe.each(BOOK_STORES.filter((store) => store.name === 'memory' || store.name === 'PostgreSQL'))('the sweeper with 1,000 unpaid payments open ($name store)', ({ make }) => {
  let emulator: Emulator
  let opened: OpenedBookStore
  const each = freshBookStoreEachTest(make)
  beforeEach(() => {
    ;({ emulator, opened } = each)
  })

  it('finds the one paid whose results were lost with its first request at the default rate, and notes the pass', { timeout: 120_000 }, async () => {
    const counting = countingFetch()
    const apiClient = createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO, fetch: counting.fetch, logger: false })
    const notes: SweepPassNote[] = []
    const lock = opened.store.sweepLock!()
    // The store's lock, keeping each pass's note (the stores keep them in their own tables).
    const noting = { ...opened.store, sweepLock: () => Object.assign(Object.create(lock) as object, { notePass: async (note: SweepPassNote) => void notes.push(note) }) as typeof lock }
    // The defaults but for the timer: this test runs the pass.
    const receiver = createReceiver({ checksumToken: DEMO.checksumToken, store: noting, client: apiClient, logger: false, sweep: { inProcess: false } })
    each.made.push(receiver)
    const handled: PaymentEvent<unknown>[] = []
    let requestsWhenHandled: string[] = []
    receiver.on('payment.succeeded', (event) => {
      handled.push(event)
      requestsWhenHandled = [...counting.calls]
    })
    const { paid, unpaid } = await lostPaid({ baseUrl: emulator.baseUrl, url: emulator.url, credentials: DEMO, book: receiver.payments, unpaid: 1_000, ageMs: HOUR })
    expect((await receiver.payments.summary()).open).toBe(1_001)
    // The paid one is the newest: not even in the pass's batch of 500 due, oldest first.
    expect((await receiver.payments.listOpen({ limit: 500 })).some((payment) => payment.orderNumber === paid)).toBe(false)

    const sweeping = receiver.sweep()
    await until(() => handled.length > 0)
    expect(handled.map((event) => [event.payment.orderNumber, event.delivery, event.state])).toEqual([[paid, 'reconcile', 'succeeded']])
    // One request: the list's first page of successes. No lookup of the thousand before it.
    expect(requestsWhenHandled.map((url) => new URL(url).pathname.replace(/^.*\/v1\//, ''))).toEqual(['transactions/list'])
    // The pass goes on with the lookups of the rest at 30 a minute; close() ends it at the next turn.
    await receiver.close()
    const report = await sweeping
    expect(report).toMatchObject({ swept: true, listed: 1, found: 1, processed: 1, closed: 1, failures: 0 })
    expect(report.lookups).toBeLessThanOrEqual(1)
    expect(await receiver.payments.find(paid)).toMatchObject({ status: 'succeeded', lookups: 1 })
    expect(await receiver.payments.find(unpaid[999] as string)).toMatchObject({ status: 'open' })
    expect(notes).toEqual([
      { at: expect.any(Date), holder: expect.stringMatching(/^sweeper:/), nextAt: null, lookups: 1 + report.lookups, found: 1, closed: 1, failures: [] },
    ])
  })
})
