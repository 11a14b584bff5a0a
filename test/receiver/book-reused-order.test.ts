import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createClient } from '../../src/client/index.js'
import { createReceiver, type PaymentEvent, type Receiver, type SweepOptions } from '../../src/index.js'
import { DEMO, type Emulator, paymentInput } from '../client/helpers.js'
import { BOOK_STORES, emulatorWithCapture } from './book-stores.js'
import type { CallbackCapture } from './callback-capture.js'

const FORM = 'application/x-www-form-urlencoded'
const FAST: SweepOptions = { inProcess: false, firstLookupAfterMs: 1, backoff: { baseMs: 20, maxMs: 40 }, abandonAfterMs: 60_000, maxLookupsPerMinute: 60_000 }

/**
 * An order number the merchant created twice, with another amount the second time (the service takes a reused
 * order_number): the results of either creation are genuine and must be handled, delivered or swept.
 */
describe.each(BOOK_STORES)('an order created again with another amount ($name store)', ({ make }) => {
  let emulator: Emulator
  let capture: CallbackCapture
  let opened: Awaited<ReturnType<(typeof BOOK_STORES)[number]['make']>>
  let receiver: Receiver<unknown>
  let events: PaymentEvent<unknown>[]
  let warnings: string[]
  let infos: string[]

  const services = emulatorWithCapture()
  beforeEach(async () => {
    ;({ emulator, capture } = services)
    await emulator.control('/reset', {})
    opened = await make()
    const apiClient = createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO, logger: false })
    receiver = createReceiver({ checksumToken: DEMO.checksumToken, store: opened.store, client: apiClient, signatureOnly: true, logger: false as never, sweep: FAST })
    events = []
    for (const name of ['payment.succeeded', 'payment.failed'] as const) receiver.on(name, (event) => void events.push(event))
    warnings = []
    infos = []
  })
  afterEach(async () => {
    await receiver.close()
    await opened.close()
  })

  const bookingClient = () => {
    const write = (into: string[]) => (details: object, message: string) => void into.push(`${message} ${JSON.stringify(details)}`)
    const logger = { debug: () => {}, info: write(infos), warn: write(warnings), error: write(warnings) }
    return createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO, book: receiver, logger })
  }

  it('handles the result of the later creation, keeps the earlier amount accepted, and warns once at re-recording', async () => {
    const client = bookingClient()
    const first = paymentInput({ transaction_amount: '10.00', callback_url: capture.url })
    const earlier = await client.createPayment(first)
    expect(warnings).toEqual([])
    const later = await client.createPayment({ ...first, transaction_amount: '50.00' })
    expect(warnings.filter((line) => line.includes(first.order_number))).toHaveLength(1)
    expect(warnings[0]).toMatch(/another amount/)
    expect(await receiver.payments.find(first.order_number)).toMatchObject({
      amountSen: 5000,
      askedSen: [1000, 5000],
      kind: 'payment',
      exchangeNumber: later.exchangeNumber,
      status: 'open',
    })

    await emulator.complete(later.exchangeNumber as string, 'approve')
    const [paidLater] = await capture.bodies(later.exchangeNumber as string, 1)
    expect((await receiver.handle({ kind: 'callback', body: paidLater as string, contentType: FORM })).outcome).toBe('processed')
    // The earlier creation's result is as genuine: the buyer may have paid that one too.
    await emulator.complete(earlier.exchangeNumber as string, 'approve')
    const [paidEarlier] = await capture.bodies(earlier.exchangeNumber as string, 1)
    expect((await receiver.handle({ kind: 'callback', body: paidEarlier as string, contentType: FORM })).outcome).toBe('processed')
    expect(events.map((event) => event.payment.exchangeNumber)).toEqual([later.exchangeNumber, earlier.exchangeNumber])
    expect(await receiver.payments.find(first.order_number)).toMatchObject({ status: 'succeeded', state: 'succeeded' })
  })

  it('the sweeper closes a re-recorded order whose later creation was paid and whose results were lost', async () => {
    const client = bookingClient()
    const first = paymentInput({ transaction_amount: '10.00', callback_url: capture.url })
    await client.createPayment(first)
    await emulator.control('/faults', { lose_results: 1 })
    const later = await client.createPayment({ ...first, transaction_amount: '50.00' })
    await emulator.complete(later.exchangeNumber as string, 'approve')
    expect(await receiver.sweep()).toMatchObject({ processed: 1, closed: 1, failures: 0 })
    expect(events.map((event) => [event.payment.exchangeNumber, event.booked?.amountSen])).toEqual([[later.exchangeNumber, 5000]])
    expect(await receiver.payments.find(first.order_number)).toMatchObject({ status: 'succeeded' })
  })

  it('records the same amount again quietly, and keeps only the last 10 amounts asked', async () => {
    const client = bookingClient()
    const first = paymentInput({ transaction_amount: '1.00', callback_url: capture.url })
    await client.buildPaymentForm(first, { exposeAuthToken: true }).recorded
    await client.buildPaymentForm(first, { exposeAuthToken: true }).recorded
    expect(warnings).toEqual([])
    for (let ringgit = 2; ringgit <= 12; ringgit++) await client.buildPaymentForm({ ...first, transaction_amount: `${ringgit}.00` }, { exposeAuthToken: true }).recorded
    const booked = await receiver.payments.find(first.order_number)
    expect(booked?.askedSen).toEqual([300, 400, 500, 600, 700, 800, 900, 1000, 1100, 1200])
    expect(booked?.amountSen).toBe(1200)
  })
})
