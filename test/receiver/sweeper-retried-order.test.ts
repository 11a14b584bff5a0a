import { beforeEach, describe, expect, it } from 'vitest'
import { createClient, type FpxClient } from '../../src/client/index.js'
import { createReceiver, type PaymentEvent, type ReceiverOptions, type SweepOptions } from '../../src/index.js'
import { DEMO, paymentInput } from '../client/helpers.js'
import { BOOK_STORES, freshBookStoreEachTest } from './book-stores.js'

const FAST: SweepOptions = { inProcess: false, firstLookupAfterMs: 1, backoff: { baseMs: 20, maxMs: 40 }, abandonAfterMs: 60_000, pendingAbandonAfterMs: 60_000, maxLookupsPerMinute: 60_000 }
const FORM = 'application/x-www-form-urlencoded'
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * An order whose first attempt failed and whose retry was paid, both results lost: the sweeper finds them at one
 * lookup. The order is paid: the earlier failure must not close it as failed, or a success handler that failed once
 * is never tried again ("a final result the API shows but your handlers keep failing on is never abandoned").
 */
describe.each(BOOK_STORES)('the sweeper and an order paid at its retry ($name store)', ({ make }) => {
  const each = freshBookStoreEachTest(make)
  let apiClient: FpxClient
  beforeEach(() => {
    apiClient = createClient({ environment: { baseUrl: each.emulator.baseUrl }, ...DEMO, logger: false })
  })

  it('keeps trying the success until its handler runs, and runs no failed handler for the paid order', async () => {
    const { emulator, capture } = each
    // Lookups alone (no transactions list): the lookup sees every attempt at the order.
    const searchOnly = { searchTransactions: apiClient.searchTransactions }
    const receiver = createReceiver({ checksumToken: DEMO.checksumToken, store: each.opened.store, client: searchOnly, logger: false as never, sweep: FAST } as ReceiverOptions<unknown>)
    each.made.push(receiver)
    const events: string[] = []
    let failSuccess = 1
    receiver.on('payment.succeeded', (event: PaymentEvent<unknown>) => {
      if (failSuccess-- > 0) throw new Error('the fulfilment service is down')
      events.push(`succeeded:${event.payment.exchangeNumber}`)
    })
    receiver.on('payment.failed', (event: PaymentEvent<unknown>) => void events.push(`failed:${event.payment.exchangeNumber}`))
    const client = createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO, book: receiver, logger: false })
    // Callbacks go to the capture only: both results are lost to the receiver.
    const input = paymentInput({ callback_url: capture.url })
    const first = await client.createPayment(input)
    await emulator.complete(first.exchangeNumber as string, 'reject')
    const retry = await client.createPayment(input)
    await emulator.complete(retry.exchangeNumber as string, 'approve')

    const firstPass = await receiver.sweep()
    expect(firstPass.failures).toBe(1)
    // Still to be tried again: the order is paid, not failed.
    expect(await receiver.payments.find(input.order_number)).toMatchObject({ status: 'open' })
    await pause(100)
    await receiver.sweep()
    expect(events).toEqual([`succeeded:${retry.exchangeNumber}`])
    expect(await receiver.payments.find(input.order_number)).toMatchObject({ status: 'succeeded', state: 'succeeded' })
  })

  it('a late failed attempt of an order whose success handler failed runs no failed handler and leaves it to be swept', async () => {
    const { emulator, capture } = each
    const searchOnly = { searchTransactions: apiClient.searchTransactions }
    const receiver = createReceiver({ checksumToken: DEMO.checksumToken, store: each.opened.store, client: searchOnly, logger: false as never, sweep: FAST } as ReceiverOptions<unknown>)
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
    const [failedBody] = await capture.bodies(first.exchangeNumber as string, 1)
    const [paidBody] = await capture.bodies(retry.exchangeNumber as string, 1)

    // The success's callback: its handler fails (the service would retry it, and may give up).
    expect((await receiver.handle({ kind: 'callback', body: paidBody as string, contentType: FORM })).outcome).toBe('failed')
    // The first attempt's failure arrives late: the order is paid, its failure changes nothing.
    expect(await receiver.handle({ kind: 'callback', body: failedBody as string, contentType: FORM })).toMatchObject({ status: 200, outcome: 'stale' })
    expect(events).toEqual([])
    expect(await receiver.payments.find(input.order_number)).toMatchObject({ status: 'open' })
    // The success's deliveries are over: the sweeper brings it.
    await receiver.sweep()
    expect(events).toEqual([`succeeded:${retry.exchangeNumber}`])
    expect(await receiver.payments.find(input.order_number)).toMatchObject({ status: 'succeeded', state: 'succeeded' })
  })

  it("an operator's look-up of the order hands over its success only, and a failing handler leaves it open to be swept", async () => {
    const { emulator, capture } = each
    const receiver = createReceiver({ checksumToken: DEMO.checksumToken, store: each.opened.store, client: { searchTransactions: apiClient.searchTransactions }, logger: false as never, sweep: FAST } as ReceiverOptions<unknown>)
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

    await receiver.operator.lookUp({ orderNumber: input.order_number, uid: DEMO.uid }, 'ops')
    expect(events).toEqual([])
    expect(await receiver.payments.find(input.order_number)).toMatchObject({ status: 'open' })
    await receiver.sweep()
    expect(events).toEqual([`succeeded:${retry.exchangeNumber}`])
    expect(await receiver.payments.find(input.order_number)).toMatchObject({ status: 'succeeded', state: 'succeeded' })
  })
})
