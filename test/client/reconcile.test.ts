import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type FpxClient, reconcile } from '../../src/client/index.js'
import { createReceiver, type PaymentEvent, type Receiver } from '../../src/receiver/receiver.js'
import { encodeForm } from '../../src/testing.js'
import { settled } from '../emulator/delivery-merchant.js'
import { demoClient, DEMO, type Emulator, launch, paymentInput } from './helpers.js'
import { faultyProxy } from './proxy.js'

let emulator: Emulator
let client: FpxClient
let receiver: Receiver
let refusingUrl: string
const handled: PaymentEvent[] = []
const today = () => new Date()

beforeAll(async () => {
  // One attempt per callback, so a refused callback is given up at once.
  emulator = await launch({ delivery: { attempts: 1, initialDelayMs: 1, maxDelayMs: 1, timeoutMs: 2000 } })
  client = demoClient(emulator)
  receiver = createReceiver({ signatureOnly: true, checksumToken: DEMO.checksumToken })
  for (const name of ['payment.succeeded', 'payment.failed', 'payment.pending'] as const) receiver.on(name, (event) => void handled.push(event))
  // A port that was just closed: the callback's connection is refused, as during a deploy.
  const closed = await faultyProxy(emulator.url, 0, 500)
  await closed.close()
  refusingUrl = closed.baseUrl.replace('/api', '/fpx/callback')
})
afterAll(() => emulator.stop())

const eventsFor = (exchangeNumber: string) => handled.filter((event) => event.payment.exchangeNumber === exchangeNumber)

async function payWithLostCallback(outcome: 'approve' | 'reject', overrides = {}): Promise<string> {
  const { exchangeNumber } = await client.createPayment(paymentInput({ callback_url: refusingUrl, ...overrides }))
  await emulator.complete(exchangeNumber as string, outcome)
  const [delivery] = await settled(emulator, exchangeNumber as string)
  expect(delivery).toMatchObject({ state: 'failed' })
  return exchangeNumber as string
}

describe('reconcile', () => {
  it('recovers a payment whose callback was dropped, once; a second run does not run the handler again', async () => {
    const paid = await payWithLostCallback('approve')
    const declined = await payWithLostCallback('reject')
    const { exchangeNumber: unanswered } = await client.createPayment(paymentInput())

    const first = await reconcile({ client, receiver, from: today(), to: today() })
    expect(first).toMatchObject({ examined: 3, processed: 2, duplicate: 0, unfinished: 1, problems: [], notFound: [] })
    expect(eventsFor(paid).map((event) => [event.name, event.delivery])).toEqual([['payment.succeeded', 'reconcile']])
    expect(eventsFor(paid)[0]?.payment).toMatchObject({ orderNumber: expect.any(String), amountSen: 10020, paid: true })
    expect(eventsFor(declined).map((event) => event.name)).toEqual(['payment.failed'])
    expect(eventsFor(unanswered as string)).toEqual([])

    const second = await reconcile({ client, receiver, from: today(), to: today() })
    expect(second).toMatchObject({ examined: 3, processed: 0, duplicate: 2, unfinished: 1 })
    expect(eventsFor(paid)).toHaveLength(1)
    expect(eventsFor(declined)).toHaveLength(1)
  })

  it('treats a payment whose callback did arrive as a duplicate', async () => {
    const { exchangeNumber } = await client.createPayment(paymentInput())
    const { result } = (await emulator.complete(exchangeNumber as string, 'approve')) as { result: Record<string, string> }
    const callback = await receiver.handle({ kind: 'callback', body: encodeForm(result), contentType: 'application/x-www-form-urlencoded' })
    expect(callback.outcome).toBe('processed')
    const report = await reconcile({ client, receiver, from: today(), to: today() })
    expect(report.processed).toBe(0)
    expect(eventsFor(exchangeNumber as string)).toHaveLength(1)
  })

  it('follows a B2B1 payment from pending approval to success, and looks up given orders', async () => {
    const input = paymentInput({ model: 'B2B1', callback_url: refusingUrl })
    const { exchangeNumber } = await client.createPayment(input)
    const number = exchangeNumber as string
    await emulator.complete(number, 'pending')
    // Outside any window: only the order number brings it in.
    const pending = await reconcile({ client, receiver, from: '2020-01-01', to: '2020-01-02', orderNumbers: [input.order_number, 'NO-SUCH-ORDER'] })
    expect(pending).toMatchObject({ examined: 1, processed: 1, notFound: ['NO-SUCH-ORDER'] })
    expect(eventsFor(number).map((event) => event.name)).toEqual(['payment.pending'])

    expect((await emulator.control(`/payments/${number}/approve`, {})).status).toBe(200)
    await reconcile({ client, receiver, from: today(), to: today() })
    expect(eventsFor(number).map((event) => [event.name, event.previousState])).toEqual([
      ['payment.pending', null],
      ['payment.succeeded', 'pending'],
    ])
  })

  it('walks a range longer than 90 days in windows the service accepts', async () => {
    const from = new Date(Date.now() - 200 * 86_400_000)
    const report = await reconcile({ client, receiver, from, to: today() })
    expect(report.problems).toEqual([])
    expect(report.processed).toBe(0)
    expect(report.examined).toBeGreaterThanOrEqual(5)
  })
})
