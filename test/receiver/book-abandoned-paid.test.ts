import { beforeEach, describe, expect, it } from 'vitest'
import { createClient, type FpxClient } from '../../src/client/index.js'
import { createReceiver, type PaymentEvent, type ReceiverOptions, type SweepOptions } from '../../src/index.js'
import { DEMO, paymentInput } from '../client/helpers.js'
import { BOOK_STORES, freshBookStoreEachTest } from './book-stores.js'

const FORM = 'application/x-www-form-urlencoded'
const FAST: SweepOptions = { inProcess: false, firstLookupAfterMs: 1, backoff: { baseMs: 20, maxMs: 40 }, abandonAfterMs: 1, pendingAbandonAfterMs: 1, maxLookupsPerMinute: 60_000 }

/**
 * A payment closed as abandoned, paid after all: its late callback's handler fails. Money arriving is never ignored,
 * and a success whose handlers keep failing is never abandoned: it must be open to the sweeper again, or once the
 * service gives up on its callback the success is lost.
 */
describe.each(BOOK_STORES)('an abandoned payment paid after all, its handler failing ($name store)', ({ make }) => {
  const each = freshBookStoreEachTest(make)
  let apiClient: FpxClient
  beforeEach(() => {
    apiClient = createClient({ environment: { baseUrl: each.emulator.baseUrl }, ...DEMO, logger: false })
  })

  it('is open to the sweeper again, which runs the success once its handler works', async () => {
    const { emulator, capture } = each
    const receiver = createReceiver({ checksumToken: DEMO.checksumToken, store: each.opened.store, client: { searchTransactions: apiClient.searchTransactions }, logger: false as never, sweep: FAST } as ReceiverOptions<unknown>)
    each.made.push(receiver)
    const events: string[] = []
    let failSuccess = 1
    receiver.on('payment.succeeded', (event: PaymentEvent<unknown>) => {
      if (failSuccess-- > 0) throw new Error('the fulfilment service is down')
      events.push(`succeeded:${event.payment.exchangeNumber}`)
    })
    const client = createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO, book: receiver, logger: false })
    const input = paymentInput({ callback_url: capture.url })
    const created = await client.createPayment(input)
    await new Promise((resolve) => setTimeout(resolve, 5))
    await receiver.sweep()
    expect(await receiver.payments.find(input.order_number)).toMatchObject({ status: 'abandoned' })

    await emulator.complete(created.exchangeNumber as string, 'approve')
    const [paid] = await capture.bodies(created.exchangeNumber as string, 1)
    expect((await receiver.handle({ kind: 'callback', body: paid as string, contentType: FORM })).outcome).toBe('failed')
    expect(await receiver.payments.find(input.order_number)).toMatchObject({ status: 'open' })
    await receiver.sweep()
    expect(events).toEqual([`succeeded:${created.exchangeNumber}`])
    expect(await receiver.payments.find(input.order_number)).toMatchObject({ status: 'succeeded' })
  })

  it('a failed order paid at its retry, the success handler failing, is open to the sweeper again', async () => {
    const { emulator, capture } = each
    const receiver = createReceiver({ checksumToken: DEMO.checksumToken, store: each.opened.store, client: { searchTransactions: apiClient.searchTransactions }, logger: false as never, sweep: { ...FAST, abandonAfterMs: 60_000 } } as ReceiverOptions<unknown>)
    each.made.push(receiver)
    const events: string[] = []
    let failSuccess = 1
    receiver.on('payment.succeeded', (event: PaymentEvent<unknown>) => {
      if (failSuccess-- > 0) throw new Error('the fulfilment service is down')
      events.push(`succeeded:${event.payment.exchangeNumber}`)
    })
    receiver.on('payment.failed', (event: PaymentEvent<unknown>) => void events.push(`failed:${event.payment.exchangeNumber}`))
    const client = createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO, book: receiver, logger: false })
    const input = paymentInput({ callback_url: capture.url })
    const first = await client.createPayment(input)
    await emulator.complete(first.exchangeNumber as string, 'reject')
    const [failed] = await capture.bodies(first.exchangeNumber as string, 1)
    expect((await receiver.handle({ kind: 'callback', body: failed as string, contentType: FORM })).outcome).toBe('processed')
    expect(await receiver.payments.find(input.order_number)).toMatchObject({ status: 'failed' })

    const retry = await client.createPayment(input)
    await emulator.complete(retry.exchangeNumber as string, 'approve')
    const [paid] = await capture.bodies(retry.exchangeNumber as string, 1)
    expect((await receiver.handle({ kind: 'callback', body: paid as string, contentType: FORM })).outcome).toBe('failed')
    expect(await receiver.payments.find(input.order_number)).toMatchObject({ status: 'open' })
    await receiver.sweep()
    expect(events).toEqual([`failed:${first.exchangeNumber}`, `succeeded:${retry.exchangeNumber}`])
    expect(await receiver.payments.find(input.order_number)).toMatchObject({ status: 'succeeded' })
  })

  it("a failed attempt's completion that raced the success's failing handlers leaves the order open to the sweeper", async () => {
    const { emulator, capture } = each
    const receiver = createReceiver({ checksumToken: DEMO.checksumToken, store: each.opened.store, client: { searchTransactions: apiClient.searchTransactions }, logger: false as never, sweep: { ...FAST, abandonAfterMs: 60_000 } } as ReceiverOptions<unknown>)
    each.made.push(receiver)
    const events: string[] = []
    let failSuccess = 1
    receiver.on('payment.succeeded', (event: PaymentEvent<unknown>) => {
      if (failSuccess-- > 0) throw new Error('the fulfilment service is down')
      events.push(`succeeded:${event.payment.exchangeNumber}`)
    })
    receiver.on('payment.failed', (event: PaymentEvent<unknown>) => void events.push(`failed:${event.payment.exchangeNumber}`))
    const client = createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO, book: receiver, logger: false })
    const input = paymentInput({ callback_url: capture.url })
    const first = await client.createPayment(input)
    await emulator.complete(first.exchangeNumber as string, 'reject')
    const retry = await client.createPayment(input)
    await emulator.complete(retry.exchangeNumber as string, 'approve')
    const [paid] = await capture.bodies(retry.exchangeNumber as string, 1)
    expect((await receiver.handle({ kind: 'callback', body: paid as string, contentType: FORM })).outcome).toBe('failed')
    // The first attempt's failure, claimed before the success's handlers failed, completes now: the book settles it
    // as a completion does. The order was paid: it must stay open for the success.
    const book = each.opened.store.paymentBook!()
    await book.settle({ uid: DEMO.uid, orderNumber: input.order_number }, 'failed', first.exchangeNumber as string)
    expect(await receiver.payments.find(input.order_number)).toMatchObject({ status: 'open' })
    await receiver.sweep()
    expect(events).toEqual([`succeeded:${retry.exchangeNumber}`])
    expect(await receiver.payments.find(input.order_number)).toMatchObject({ status: 'succeeded', state: 'succeeded' })
  })
})
