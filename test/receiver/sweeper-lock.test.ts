import { beforeEach, describe, expect, it } from 'vitest'
import { createClient, type FpxClient } from '../../src/client/index.js'
import { createReceiver, type Receiver, type ReceiverOptions, type ReceiverStore, type SweepLock, type SweepOptions } from '../../src/index.js'
import { DEMO, type Emulator, paymentInput } from '../client/helpers.js'
import { BOOK_STORES, freshBookStoreEachTest, type OpenedBookStore } from './book-stores.js'
import type { CallbackCapture } from './callback-capture.js'

/* The sweep lock while a pass runs and after close(): what an adversarial review of issue 26 found. */

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const FAST: SweepOptions = { inProcess: false, firstLookupAfterMs: 1, backoff: { baseMs: 20, maxMs: 40 }, abandonAfterMs: 60_000, maxLookupsPerMinute: 60_000 }

/** A handler that stays in until let go: a lookup in flight for as long as a test needs. */
function gate() {
  let entered = false
  let open: () => void = () => {}
  const released = new Promise<void>((resolve) => (open = resolve))
  return {
    handler: async () => {
      entered = true
      await released
    },
    entered: () => entered,
    release: () => open(),
  }
}

async function until(condition: () => boolean, ms = 5000): Promise<void> {
  for (const start = Date.now(); !condition(); await pause(5)) if (Date.now() - start > ms) throw new Error('timed out')
}

describe.each(BOOK_STORES)('the sweep lock ($name store)', ({ make }) => {
  let emulator: Emulator
  let capture: CallbackCapture
  let opened: OpenedBookStore
  let apiClient: FpxClient

  const each = freshBookStoreEachTest(make)
  const { made } = each
  beforeEach(() => {
    ;({ emulator, capture, opened } = each)
    apiClient = createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO, logger: false })
  })

  function receiverOn(store: ReceiverStore<unknown>, options: Partial<ReceiverOptions<unknown>> = {}) {
    const receiver = createReceiver({ checksumToken: DEMO.checksumToken, store, client: apiClient, logger: false as never, sweep: FAST, ...options } as ReceiverOptions<unknown>)
    made.push(receiver)
    return receiver
  }

  /** A payment whose results were all lost, paid: only a lookup finds it. */
  async function lostPayment(receiver: Receiver<unknown>): Promise<void> {
    await emulator.control('/faults', { lose_results: 1 })
    const client = createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO, book: receiver, logger: false })
    const created = await client.createPayment(paymentInput({ callback_url: capture.url }))
    await emulator.complete(created.exchangeNumber as string, 'approve')
    await pause(5)
  }

  it('keeps its lease while a hand-over is in flight longer than the lease: no second process sweeps meanwhile', async () => {
    const a = receiverOn(opened.store, { sweep: { ...FAST, lockMs: 600 } })
    const slow = gate()
    a.on('payment.succeeded', slow.handler)
    await lostPayment(a)
    // Made once the store's tables exist: two PostgreSQL store handles creating them at once collide (23505).
    const b = receiverOn(await opened.shared())
    b.on('payment.succeeded', () => {})
    const sweeping = a.sweep()
    await until(slow.entered)
    // Three leases long, the hand-over of what the transactions list shows (its handlers) still running.
    await pause(1_800)
    const other = await b.sweep()
    slow.release()
    expect(await sweeping).toMatchObject({ swept: true, listed: 1, found: 1, processed: 1 })
    expect(other).toMatchObject({ swept: false, listed: 0, lookups: 0 })
  })

  it('stops for good on close(), even when a pass was running: the lock is not taken again afterwards', async () => {
    const lock = opened.store.sweepLock!()
    const acquired: number[] = []
    const counted: SweepLock = {
      acquire: (owner, ttl) => (acquired.push(Date.now()), lock.acquire(owner, ttl)),
      renew: (owner, token, ttl) => lock.renew(owner, token, ttl),
      release: (owner, token) => lock.release(owner, token),
      notePass: (note) => lock.notePass(note),
      status: () => lock.status(),
    }
    const receiver = receiverOn({ ...opened.store, sweepLock: () => counted }, { sweep: { ...FAST, inProcess: true, everyMs: 20, lockMs: 5000 } })
    const slow = gate()
    receiver.on('payment.succeeded', slow.handler)
    await lostPayment(receiver)
    await until(slow.entered)
    const closing = receiver.close()
    slow.release()
    await closing
    const before = acquired.length
    await pause(200)
    expect(acquired.length).toBe(before)
  })

  it('close() ends a pass at the next turn: lookups queued behind the rate bound are not made', async () => {
    const searched: number[] = []
    const counting = createClient({
      environment: { baseUrl: emulator.baseUrl },
      ...DEMO,
      logger: false,
      fetch: (input, init) => (String(input).includes('search_reference=order_number') && searched.push(Date.now()), fetch(input, init)),
    })
    const receiver = receiverOn(opened.store, { client: counting, sweep: { ...FAST, maxLookupsPerMinute: 20, concurrency: 4 } })
    const client = createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO, book: receiver, logger: false })
    for (let i = 0; i < 4; i++) await client.createPayment(paymentInput({ callback_url: capture.url }))
    await pause(5)
    const sweeping = receiver.sweep()
    await until(() => searched.length === 1)
    const started = Date.now()
    await receiver.close()
    // The next turn was three seconds away (20 a minute): close() does not wait for it, nor for the two after it.
    expect(Date.now() - started).toBeLessThan(2_500)
    expect((await sweeping).lookups).toBe(1)
    expect(searched).toHaveLength(1)
  })

  it('writes no lookup entry when the book did not take the lookup: the payment closed while it was looked up', async () => {
    const book = opened.store.paymentBook!()
    const race: { closing?: () => Promise<unknown> } = {}
    // The payment settles (a delivery handled meanwhile) just as the status API is asked about it.
    const racing = createClient({
      environment: { baseUrl: emulator.baseUrl },
      ...DEMO,
      logger: false,
      fetch: async (input, init) => {
        if (String(input).includes('search_reference=order_number')) await race.closing?.()
        return fetch(input, init)
      },
    })
    const receiver = receiverOn(opened.store, { client: racing })
    const client = createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO, book: receiver, logger: false })
    const input = paymentInput({ callback_url: capture.url })
    await client.createPayment(input)
    race.closing = () => book.settle({ orderNumber: input.order_number, uid: DEMO.uid }, 'failed', 'EX-ELSEWHERE')
    await pause(5)
    // Created, never paid: the API shows no bank answer, so the sweeper would note a lookup and a backoff.
    expect(await receiver.sweep()).toMatchObject({ lookups: 1 })
    expect(await book.find(input.order_number)).toMatchObject({ status: 'failed', lookups: 0 })
    const timeline = await receiver.timeline(input.order_number)
    expect(timeline.map((entry) => entry.event)).toEqual(['created'])
  })
})
