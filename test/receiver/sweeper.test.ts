import * as api from '@opentelemetry/api'
import { type DataPoint, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics'
import { beforeEach, describe, expect, it } from 'vitest'
import { createClient, type FpxClient } from '../../src/client/index.js'
import { createReceiver, type PaymentEvent, type Receiver, type ReceiverOptions, type ReceiverStore, type SweepLock, type SweepOptions } from '../../src/index.js'
import { countingFetch, DEMO, type Emulator, paymentInput } from '../client/helpers.js'
import type { SweepPassNote } from '../../src/contract/payment-book.js'
import { BOOK_STORES, freshBookStoreEachTest, type OpenedBookStore } from './book-stores.js'
import type { CallbackCapture } from './callback-capture.js'

const FORM = 'application/x-www-form-urlencoded'
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
/** Short horizons: a test's minutes are milliseconds. */
const FAST: SweepOptions = { inProcess: false, firstLookupAfterMs: 1, backoff: { baseMs: 20, maxMs: 40 }, abandonAfterMs: 400, pendingAbandonAfterMs: 800, maxLookupsPerMinute: 60_000 }

class PullReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

describe.each(BOOK_STORES)('the sweeper ($name store)', ({ make }) => {
  let emulator: Emulator
  let capture: CallbackCapture
  let opened: OpenedBookStore
  let searches: string[]
  let apiClient: FpxClient

  const each = freshBookStoreEachTest(make)
  const { made } = each
  beforeEach(() => {
    ;({ emulator, capture, opened } = each)
    const counting = countingFetch()
    searches = counting.calls
    apiClient = createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO, fetch: counting.fetch, logger: false })
  })

  function receiverOn(store: ReceiverStore<unknown>, options: Partial<ReceiverOptions<unknown>> = {}) {
    const receiver = createReceiver({ checksumToken: DEMO.checksumToken, store, client: apiClient, logger: false as never, sweep: FAST, ...options } as ReceiverOptions<unknown>)
    const events: PaymentEvent<unknown>[] = []
    for (const name of ['payment.succeeded', 'payment.failed', 'payment.pending'] as const) receiver.on(name, (event) => void events.push(event))
    made.push(receiver)
    const client = createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO, book: receiver, logger: false })
    return { receiver, events, client }
  }

  const lookups = () => searches.filter((url) => url.includes('search_reference=order_number'))
  const listPages = () => searches.filter((url) => url.includes('/v1/transactions/list'))

  /** The book's lookup count and last lookup agree with the lookups the timeline shows. */
  async function countsAgree(receiver: Receiver<unknown>, orderNumber: string): Promise<number> {
    const [booked, timeline] = await Promise.all([receiver.payments.find(orderNumber), receiver.timeline(orderNumber)])
    const looked = timeline.filter((entry) => entry.event === 'lookup' || entry.event === 'abandoned')
    expect(booked?.lookups).toBe(looked.length)
    expect(booked?.lastLookupAt?.getTime() ?? null).toBe(looked.at(-1)?.at.getTime() ?? null)
    return looked.length
  }

  it('finds a paid payment whose redirect and callback were lost in the transactions list, runs its handlers once, and closes it', async () => {
    const { receiver, events, client } = receiverOn(opened.store)
    await emulator.control('/faults', { lose_results: 1 })
    const input = paymentInput({ callback_url: capture.url })
    const created = await client.createPayment(input)
    await emulator.complete(created.exchangeNumber as string, 'approve')
    const report = await receiver.sweep()
    expect(report).toMatchObject({ swept: true, due: 1, listed: 1, found: 1, lookups: 0, processed: 1, closed: 1, open: 0, skipped: 1, failures: 0, failing: [] })
    expect(events.map((event) => [event.state, event.delivery, event.booked?.orderNumber])).toEqual([['succeeded', 'reconcile', input.order_number]])
    // The issue's `lookups 0, last lookup -` beside a timeline that showed the lookup: counted now, before the close.
    expect(await receiver.payments.find(input.order_number)).toMatchObject({ status: 'succeeded', lookups: 1 })
    expect(await countsAgree(receiver, input.order_number)).toBe(1)
    // Closed: the next sweeps leave it alone, and never ask the API about it again.
    expect(await receiver.sweep()).toMatchObject({ due: 0, lookups: 0 })
    expect(lookups()).toHaveLength(0)
    // One page, of successes only, 100 to a page, in the Malaysian dates since the oldest open payment.
    const query = new URL(listPages()[0] as string).searchParams
    const today = new Date(Date.now() + 8 * 3_600_000).toISOString().slice(0, 10)
    expect(Object.fromEntries(query)).toEqual({ per_page: '100', page: '1', payment_status: 'true', start_date: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/), end_date: today })
    expect(listPages()).toHaveLength(1)
    const timeline = await receiver.timeline(input.order_number)
    expect(timeline.map((entry) => `${entry.event}/${entry.source}`)).toEqual(['created/client', 'lookup/sweep', 'received/reconcile', 'verified/reconcile', 'processed/reconcile'])
    expect(timeline[1]).toMatchObject({ state: 'succeeded', orderNumber: input.order_number, exchangeNumber: created.exchangeNumber, message: expect.stringMatching(/^the transactions list shows it paid; handed to the receiver \(looked up again at .* \+08:00 unless it takes it\)$/) })
  })

  it('checks what the list shows against the amount asked: a success of another amount is refused, named, and left open', async () => {
    const { receiver, events } = receiverOn(opened.store)
    await emulator.control('/faults', { lose_results: 1 })
    const input = paymentInput({ callback_url: capture.url })
    const created = await apiClient.createPayment(input)
    await emulator.complete(created.exchangeNumber as string, 'approve')
    // The shop asked 50.00 for this order; the service's success is of 100.20.
    await receiver.payments.record({ orderNumber: input.order_number, amountSen: 5_000, uid: DEMO.uid, kind: 'payment', createdAt: new Date(Date.now() - 60_000), exchangeNumber: null, attached: {} })
    const report = await receiver.sweep()
    // Refused once: handed over from the list, and not looked up again in the same pass (its next lookup is later).
    expect(report).toMatchObject({ listed: 1, found: 1, lookups: 0, processed: 0, closed: 0, open: 1, skipped: 1, failures: 1 })
    expect(report.failing).toEqual([{ orderNumber: input.order_number, message: expect.stringMatching(/^transaction_amount differs from the amount recorded/) }])
    expect(events).toEqual([])
    expect(await receiver.payments.find(input.order_number)).toMatchObject({ status: 'open', lookups: 1 })
  })

  it('looks a lost result up one by one when the client has no transactions list, and counts the lookup in the book', async () => {
    const searchOnly = { searchTransactions: apiClient.searchTransactions }
    const { receiver, events, client } = receiverOn(opened.store, { client: searchOnly })
    await emulator.control('/faults', { lose_results: 1 })
    const input = paymentInput({ callback_url: capture.url })
    const created = await client.createPayment(input)
    await emulator.complete(created.exchangeNumber as string, 'approve')
    expect(await receiver.sweep()).toMatchObject({ due: 1, listed: 0, found: 0, lookups: 1, processed: 1, closed: 1, failures: 0 })
    expect(events.map((event) => event.delivery)).toEqual(['reconcile'])
    expect(await receiver.payments.find(input.order_number)).toMatchObject({ status: 'succeeded', lookups: 1 })
    expect(await countsAgree(receiver, input.order_number)).toBe(1)
    expect([lookups().length, listPages().length]).toEqual([1, 0])
    const timeline = await receiver.timeline(input.order_number)
    expect(timeline[1]).toMatchObject({ event: 'lookup', state: 'succeeded', message: expect.stringMatching(/^the status API shows a final result; handed to the receiver/) })
  })

  it('follows a B2B1 payment left at 99 until its lost 00 shows, then closes it', async () => {
    const { receiver, events, client } = receiverOn(opened.store)
    await emulator.control('/faults', { lose_approvals: 1 })
    const created = await client.createPayment(paymentInput({ callback_url: capture.url, model: 'B2B1' }))
    const exchange = created.exchangeNumber as string
    await emulator.complete(exchange, 'pending')
    const [pending] = await capture.bodies(exchange, 1)
    expect((await receiver.handle({ kind: 'callback', body: pending as string, contentType: FORM })).outcome).toBe('processed')
    expect((await receiver.payments.listOpen())[0]).toMatchObject({ state: 'pending', status: 'open' })
    // Still at 99: looked up, left open, looked up again after a backoff.
    expect(await receiver.sweep()).toMatchObject({ lookups: 1, open: 1, processed: 0 })
    await emulator.control(`/payments/${exchange}/approve`, {})
    await pause(60)
    expect(await receiver.sweep()).toMatchObject({ lookups: 1, processed: 1, closed: 1 })
    expect(events.map((event) => `${event.state}:${event.delivery}`)).toEqual(['pending:callback', 'succeeded:reconcile'])
    expect(events[1]?.previousState).toBe('pending')
    expect((await receiver.payments.summary()).open).toBe(0)
    expect(await countsAgree(receiver, (events[0] as PaymentEvent<unknown>).payment.orderNumber)).toBe(2)
  })

  it('backs off, then closes a payment never paid as abandoned after its horizon (and a 99 after its own)', async () => {
    // Horizons with room for a loaded machine: a pass takes well under the backoff, and each pause clears a horizon
    // by more than half a second while the next horizon stays more than a second away.
    const sweep = { ...FAST, backoff: { baseMs: 500, maxMs: 500 }, abandonAfterMs: 1_000, pendingAbandonAfterMs: 2_600 }
    const { receiver, events, client } = receiverOn(opened.store, { sweep })
    const input = paymentInput({ callback_url: capture.url })
    await client.createPayment(input)
    await pause(5)
    expect(await receiver.sweep()).toMatchObject({ lookups: 1, open: 1 })
    const open = await receiver.payments.find(input.order_number)
    expect(open).toMatchObject({ lookups: 1, status: 'open' })
    expect(open!.nextLookupAt!.getTime() - open!.lastLookupAt!.getTime()).toBeGreaterThanOrEqual(10)
    // Not due again before its backoff.
    expect(await receiver.sweep()).toMatchObject({ lookups: 0 })
    await pause(1_100)
    expect(await receiver.sweep()).toMatchObject({ lookups: 1, abandoned: 1 })
    expect(await receiver.payments.find(open!.orderNumber)).toMatchObject({ status: 'abandoned', nextLookupAt: null })
    const timeline = await receiver.timeline(open!.orderNumber)
    expect(timeline[0]?.event).toBe('created')
    expect(timeline.at(-1)).toMatchObject({ event: 'abandoned', source: 'sweep' })
    expect(timeline.filter((entry) => entry.event === 'lookup').map((entry) => entry.message)).toEqual([expect.stringMatching(/no bank answer yet; next lookup at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+08:00$/)])
    expect(await countsAgree(receiver, open!.orderNumber)).toBe(2)
    expect(events).toEqual([])

    // A 99 outlives the first horizon and is closed only after its own.
    const b2b1Input = paymentInput({ callback_url: capture.url, model: 'B2B1' })
    const b2b1 = await client.createPayment(b2b1Input)
    await emulator.complete(b2b1.exchangeNumber as string, 'pending')
    const [pending] = await capture.bodies(b2b1.exchangeNumber as string, 1)
    await receiver.handle({ kind: 'callback', body: pending as string, contentType: FORM })
    await pause(1_100)
    expect(await receiver.sweep()).toMatchObject({ open: 1, abandoned: 0 })
    await pause(1_600)
    expect(await receiver.sweep()).toMatchObject({ abandoned: 1 })
    // A late result still counts: an abandoned payment that is paid after all is handled and closed as paid.
    await emulator.control(`/payments/${b2b1.exchangeNumber}/approve`, {})
    const [, approved] = await capture.bodies(b2b1.exchangeNumber as string, 2)
    expect((await receiver.handle({ kind: 'callback', body: approved as string, contentType: FORM })).outcome).toBe('processed')
    expect(await receiver.payments.find(b2b1Input.order_number)).toMatchObject({ status: 'succeeded', state: 'succeeded' })
  })

  it('re-checks a payment just before its lookup: one settled meanwhile is never looked up', async () => {
    const { receiver, client } = receiverOn(opened.store)
    const created = await client.createPayment(paymentInput({ callback_url: capture.url }))
    const stale = await receiver.payments.listOpen()
    await emulator.complete(created.exchangeNumber as string, 'approve')
    const [body] = await capture.bodies(created.exchangeNumber as string, 1)
    expect((await receiver.handle({ kind: 'callback', body: body as string, contentType: FORM })).outcome).toBe('processed')
    // A book whose list is older than the result (read just before it came in).
    const book = opened.store.paymentBook!()
    const staleStore: ReceiverStore<unknown> = { ...opened.store, paymentBook: () => Object.assign(Object.create(book) as object, { listOpen: async () => stale }) as typeof book }
    const late = receiverOn(staleStore)
    expect(await late.receiver.sweep()).toMatchObject({ due: 1, skipped: 1, lookups: 0 })
    expect(lookups()).toEqual([])
  })

  it('keeps within maxLookupsPerMinute, evenly spaced', async () => {
    const stamps: number[] = []
    const timed = createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO, logger: false, fetch: (input, init) => (stamps.push(Date.now()), fetch(input, init)) })
    const paced = receiverOn(opened.store, { client: timed, sweep: { ...FAST, maxLookupsPerMinute: 600 } })
    for (let i = 0; i < 5; i++) await paced.client.createPayment(paymentInput({ callback_url: capture.url }))
    await pause(5)
    stamps.length = 0
    expect(await paced.receiver.sweep()).toMatchObject({ lookups: 5 })
    // The pacing spaces the turns' starts 100 ms apart; the request leaves a few ms after its turn starts (the book
    // is read again first), so the requests' own gaps may come out a little short. Unpaced, they are 1-5 ms apart.
    const gaps = stamps.slice(1).map((stamp, i) => stamp - (stamps[i] as number))
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(80)
    expect((stamps[4] as number) - (stamps[0] as number)).toBeGreaterThanOrEqual(390)
  })

  it('sweeps one at a time across receivers sharing the store, and stops when its lock is lost', async () => {
    const a = receiverOn(opened.store)
    await emulator.control('/faults', { lose_results: 1 })
    for (let i = 0; i < 3; i++) {
      const created = await a.client.createPayment(paymentInput({ callback_url: capture.url }))
      await emulator.complete(created.exchangeNumber as string, 'approve')
    }
    // Made once the store's tables exist: two PostgreSQL store handles creating them at once collide (23505 on an
    // index), and the first payment's record was lost to that, not to the sweeper.
    const b = receiverOn(await opened.shared())

    const reports = await Promise.all([a.receiver.sweep(), b.receiver.sweep()])
    expect(reports.map((report) => report.swept).sort()).toEqual([false, true])
    expect(reports.reduce((sum, report) => sum + report.processed, 0)).toBe(3)
    expect(a.events.length + b.events.length).toBe(3)
    // All three on the list's one page: no lookup needed.
    expect([listPages().length, lookups().length]).toEqual([1, 0])

    // A lock that cannot be renewed: the sweeper stops after the lookup it was allowed.
    const lock = opened.store.sweepLock!()
    const losing: SweepLock = {
      acquire: (owner, ttl) => lock.acquire(owner, ttl),
      renew: async () => false,
      release: (owner, token) => lock.release(owner, token),
      notePass: (note) => lock.notePass(note),
      status: () => lock.status(),
    }
    const c = receiverOn({ ...opened.store, sweepLock: () => losing }, { sweep: { ...FAST, lockMs: 30, maxLookupsPerMinute: 1200 } })
    for (let i = 0; i < 3; i++) await c.client.createPayment(paymentInput({ callback_url: capture.url }))
    const report = await c.receiver.sweep()
    // At most the request of its first turn (the list's page, or the first lookup), then nothing more.
    expect(report.listed + report.lookups).toBeLessThanOrEqual(1)
  })

  it('sweeps in-process on its own timer, holding the lock until close()', async () => {
    await emulator.control('/faults', { lose_results: 1 })
    const { receiver, events, client } = receiverOn(opened.store, { sweep: { ...FAST, inProcess: true, everyMs: 20 } })
    const created = await client.createPayment(paymentInput({ callback_url: capture.url }))
    await emulator.complete(created.exchangeNumber as string, 'approve')
    for (let i = 0; i < 200 && events.length === 0; i++) await pause(10)
    expect(events.map((event) => event.delivery)).toEqual(['reconcile'])
    const other = receiverOn(await opened.shared())
    expect((await other.receiver.sweep()).swept).toBe(false)
    await receiver.close()
    expect((await other.receiver.sweep()).swept).toBe(true)
  })

  it('notes each pass on the lock: its holder, its next turn in-process, and each failing order with its message', async () => {
    await emulator.control('/faults', { lose_results: 1 })
    const notes: SweepPassNote[] = []
    const lock = opened.store.sweepLock!()
    const noting = { ...opened.store, sweepLock: () => Object.assign(Object.create(lock) as object, { notePass: async (note: SweepPassNote) => void notes.push(note) }) as SweepLock }
    // Lookups only, so that the pass's requests are the one lookup.
    const { receiver, client } = receiverOn(noting, { client: { searchTransactions: apiClient.searchTransactions }, sweep: { ...FAST, inProcess: true, everyMs: 20 } })
    receiver.on('payment.failed', () => {
      throw new Error('fulfilment down')
    })
    const input = paymentInput({ callback_url: capture.url })
    await emulator.complete((await client.createPayment(input)).exchangeNumber as string, 'reject')
    for (let i = 0; i < 300 && !notes.some((note) => note.failures.length > 0); i++) await pause(10)
    const note = notes.find((one) => one.failures.length > 0)
    // Its lookup found it failed, and the handler threw.
    expect(note).toMatchObject({ holder: expect.stringMatching(/^sweeper:/), lookups: 1, found: 0, closed: 0 })
    expect(note?.failures).toEqual([{ orderNumber: input.order_number, message: expect.stringMatching(/^a payment\.failed handler failed/) }])
    expect(note!.nextAt!.getTime() - note!.at.getTime()).toBe(20)
    await receiver.close()
    const manual = receiverOn(noting)
    await manual.receiver.sweep()
    expect(notes.at(-1)?.nextAt).toBeNull()
  })

  it('never gives up on a final result the handlers failed on, and needs the client and a book', async () => {
    await emulator.control('/faults', { lose_results: 1 })
    const { receiver, client } = receiverOn(opened.store, { sweep: { ...FAST, abandonAfterMs: 1, firstLookupAfterMs: 1 } })
    let failing = true
    receiver.on('payment.failed', () => {
      if (failing) throw new Error('fulfilment down')
    })
    const created = await client.createPayment(paymentInput({ callback_url: capture.url }))
    await emulator.complete(created.exchangeNumber as string, 'reject')
    expect(await receiver.sweep()).toMatchObject({ lookups: 1, failures: 1, open: 1, abandoned: 0 })
    failing = false
    await pause(50)
    expect(await receiver.sweep()).toMatchObject({ lookups: 1, processed: 1, closed: 1 })

    const bare = createReceiver({ signatureOnly: true, checksumToken: DEMO.checksumToken, store: opened.store, logger: false as never })
    await expect(bare.sweep()).rejects.toThrow(/needs the service API/)
    await bare.close()
  })

  it('reports open payments and the oldest open age as metrics, and lookups by outcome', async () => {
    const reader = new PullReader()
    const meterProvider = new MeterProvider({ readers: [reader] })
    try {
      // Abandoned only much later: on a busy machine the sweep can start past FAST's 400 ms, and the payment would
      // then be closed rather than counted open.
      const sweep = { ...FAST, abandonAfterMs: 60_000, pendingAbandonAfterMs: 60_000 }
      const { receiver, client } = receiverOn(opened.store, { telemetry: { api: api as never, meterProvider }, sweep })
      await client.createPayment(paymentInput({ callback_url: capture.url }))
      await pause(30)
      await receiver.sweep()
      const { resourceMetrics } = await reader.collect()
      const metrics = new Map(resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics).map((metric) => [metric.descriptor.name, metric.dataPoints as DataPoint<number>[]]))
      expect(metrics.get('fpx.payments.open')?.[0]?.value).toBe(1)
      expect(metrics.get('fpx.payments.oldest_open_age')?.[0]?.value).toBeGreaterThan(0.02)
      expect(metrics.get('fpx.sweeper.lookups')?.map((point) => [point.attributes['fpx.lookup.outcome'], point.value])).toEqual([['open', 1]])
    } finally {
      await meterProvider.shutdown()
    }
  })
})

describe('sweep options', () => {
  it('refuses settings that cannot work, naming the option', () => {
    const make = (sweep: SweepOptions) => () => createReceiver({ signatureOnly: true, checksumToken: DEMO.checksumToken, sweep, logger: false as never })
    expect(make({ everyMs: 0 })).toThrow(/sweep\.everyMs must be a positive integer/)
    expect(make({ backoff: { baseMs: 10, maxMs: 5 } })).toThrow(/backoff\.maxMs must be at least/)
    expect(make({ firstLookupAfterMs: 10_000, abandonAfterMs: 5_000 })).toThrow(/abandonAfterMs must be at least firstLookupAfterMs/)
    expect(make({ everyMs: 60_000, lockMs: 30_000 })).toThrow(/everyMs must be at most half of sweep\.lockMs/)
    expect(make({ everyMs: 40_000, lockMs: 60_000 })).toThrow(/everyMs must be at most half of sweep\.lockMs/)
    expect(make({ everyMs: 30_000, lockMs: 60_000 })).not.toThrow()
    expect(make({ everyMs: 60_000, lockMs: 30_000, inProcess: false })).not.toThrow()
  })
})
