import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FpxClient } from '../../src/client/index.js'
import { createReceiver, type PaymentEvent, type Receiver, type ReceiverOptions } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { demoClient, DEMO, type Emulator, launch, paymentInput } from '../client/helpers.js'
import { type CallbackCapture, captureCallbacks } from './callback-capture.js'
import { formBody, indexOf, moved, type Pairs, renamed, signedPairs } from './rearrange.js'

const FORM = 'application/x-www-form-urlencoded'
const NUM_RUNS = Number(process.env.FC_RUNS ?? 25)

function recorded(options: Partial<ReceiverOptions>): { receiver: Receiver; events: PaymentEvent[] } {
  const receiver = createReceiver({ checksumToken: DEMO.checksumToken, logger: false as never, ...options } as ReceiverOptions)
  const events: PaymentEvent[] = []
  for (const name of ['payment.succeeded', 'payment.failed', 'payment.pending'] as const) receiver.on(name, (event) => void events.push(event))
  return { receiver, events }
}

const deliver = (receiver: Receiver, body: string) => receiver.handle({ kind: 'callback', body, contentType: FORM })

describe('expect: what the merchant asked for', () => {
  // Order numbers are often plain numbers, and so is payment_id, which sorts after order_number.
  const cheap = samplePaymentFields({ order_number: '1001', payment_id: '1002', transaction_amount: '1.00', transaction_amount_received: '1.00' })
  const orders: Record<string, { amount: string }> = { '1001': { amount: '1.00' }, '1002': { amount: '900.00' } }
  const signed = signCallback(cheap, DEMO.checksumToken).body
  const { pairs, checksum } = signedPairs(signed)
  // payment_id's value moved into order_number, order_number's pushed under a name before it: exchange_number stays.
  const replayed = formBody(moved(pairs, indexOf(pairs, 'payment_id'), 'order_number') as Pairs, checksum)

  it('without it, a value moved into order_number from a field after it passes (the residual docs/security.md names)', async () => {
    const { receiver, events } = recorded({})
    expect((await deliver(receiver, replayed)).outcome).toBe('processed')
    expect(events[0]!.payment.orderNumber).toBe('1002')
  })

  it('refuses that replay before any handler, and handles the genuine result', async () => {
    const { receiver, events } = recorded({ expect: ({ orderNumber }) => orders[orderNumber] })
    const refused = await deliver(receiver, replayed)
    expect(refused).toMatchObject({ status: 400, outcome: 'rejected', error: { code: 'result_mismatch' } })
    expect(refused.error?.message).toContain('transaction_amount')
    expect((await deliver(receiver, signed)).outcome).toBe('processed')
    expect(events.map((event) => event.payment.orderNumber)).toEqual(['1001'])
  })

  it('handles an order it does not know as before, refuses a result without an amount to compare, and answers 503 when the hook throws', async () => {
    const unknown = recorded({ expect: () => undefined })
    expect((await deliver(unknown.receiver, signed)).outcome).toBe('processed')

    const { transaction_amount: _dropped, ...noAmount } = cheap
    const withoutAmount = signCallback(noAmount, DEMO.checksumToken).body
    const strict = recorded({ expect: ({ orderNumber }) => orders[orderNumber] })
    expect(await deliver(strict.receiver, withoutAmount)).toMatchObject({ status: 400, error: { code: 'result_mismatch' } })

    const fields = recorded({ expect: () => ({ fields: { buyer_email: 'someone@else.test' } }) })
    expect(await deliver(fields.receiver, signed)).toMatchObject({ status: 400, error: { code: 'result_mismatch', message: expect.stringContaining('buyer_email') } })

    const broken = recorded({ expect: () => Promise.reject(new Error('database down')) })
    const answer = await deliver(broken.receiver, signed)
    expect(answer).toMatchObject({ status: 503, outcome: 'failed', error: { code: 'expect_failed' } })
    expect(answer.headers['retry-after']).toBeDefined()
    expect(broken.events).toHaveLength(0)
    // Nothing was recorded as handled: the retry runs the handler once the hook answers.
    expect([unknown.events.length, strict.events.length, fields.events.length]).toEqual([1, 0, 0])
  })
})

describe('confirmation through the status API, against the emulator', () => {
  let emulator: Emulator
  let client: FpxClient
  let capture: CallbackCapture

  beforeAll(async () => {
    capture = await captureCallbacks()
    emulator = await launch({ delivery: { attempts: 1, initialDelayMs: 1, maxDelayMs: 1, timeoutMs: 2000 } })
    client = demoClient(emulator)
  })
  afterAll(async () => {
    await emulator.stop()
    await capture.close()
  })

  /** A payment paid at the emulator, and the genuine callback bodies it sent (the service's, signed). */
  async function paid(outcomes: string[], overrides: Record<string, string> = {}): Promise<{ exchangeNumber: string; orderNumber: string; bodies: string[] }> {
    const input = paymentInput({ callback_url: capture.url, ...overrides })
    const { exchangeNumber } = await client.createPayment(input)
    for (const outcome of outcomes) await emulator.complete(exchangeNumber as string, outcome)
    const bodies = await capture.bodies(exchangeNumber as string, outcomes.length)
    expect(bodies).toHaveLength(outcomes.length)
    return { exchangeNumber: exchangeNumber as string, orderNumber: input.order_number, bodies }
  }

  it('handles a genuine result with the API record, and refuses the order_number replay the defaults let through', async () => {
    const { receiver, events } = recorded({ client })
    const { orderNumber, bodies } = await paid(['approve'])
    const { pairs, checksum } = signedPairs(bodies[0]!)
    const replay = moved(pairs, indexOf(pairs, 'payment_id'), 'order_number')
    expect(replay).toBeDefined()
    expect(await deliver(receiver, formBody(replay!, checksum))).toMatchObject({ status: 400, error: { code: 'result_mismatch' } })
    expect((await deliver(receiver, bodies[0]!)).outcome).toBe('processed')
    expect(events).toHaveLength(1)
    expect(events[0]).toMatchObject({ delivery: 'callback', state: 'succeeded', payment: { orderNumber, amountSen: 10020 } })
    // The record came from the API: it carries the list/search fields a callback may lack.
    expect(events[0]!.fields).toHaveProperty('interface_uid')
  })

  it('answers 503 confirmation_pending for a payment the API does not know, and the timeline says so', async () => {
    const { receiver, events } = recorded({ client })
    const forged = signCallback(samplePaymentFields({ exchange_number: 'EXNOTKNOWN1', order_number: 'ORD-NONE' }), DEMO.checksumToken).body
    const answer = await deliver(receiver, forged)
    expect(answer).toMatchObject({ status: 503, outcome: 'failed', error: { code: 'confirmation_pending' } })
    expect(answer.headers['retry-after']).toBeDefined()
    expect(events).toHaveLength(0)
    await receiver.flush()
    const timeline = await receiver.timeline({ exchangeNumber: 'EXNOTKNOWN1' })
    expect(JSON.stringify(timeline)).toContain('confirmation_pending')
  })

  it('a B2B1 99 that arrives after the approval is handled as the success the API shows, once', async () => {
    const { receiver, events } = recorded({ client })
    const { bodies } = await paid(['pending', 'approve'], { model: 'B2B1' } as Record<string, string>)
    expect(new URLSearchParams(bodies[0]!).get('fpx_debit_auth_code')).toBe('99')
    expect((await deliver(receiver, bodies[0]!)).outcome).toBe('processed')
    expect((await deliver(receiver, bodies[1]!)).outcome).toBe('duplicate')
    expect(events.map((event) => event.state)).toEqual(['succeeded'])
  })

  it('generated rearrangements never reach a handler as anything but the payment the API knows', async () => {
    const results = [await paid(['approve'], { buyer_name: 'ORD-OTHER' }), await paid(['reject']), await paid(['pending'], { model: 'B2B1' } as Record<string, string>)]
    const records = new Map<string, Record<string, unknown>>()
    for (const { exchangeNumber } of results) records.set(exchangeNumber, (await client.searchTransactions('exchange_number', exchangeNumber))[0] as Record<string, unknown>)
    const targets = ['exchange_number', 'order_number', 'payment_status', 'fpx_debit_auth_code', 'transaction_amount', 'status_url']
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...results), fc.array(fc.tuple(fc.nat({ max: 40 }), fc.constantFrom(...targets)), { minLength: 1, maxLength: 3 }), async (result, moves) => {
        const { pairs, checksum } = signedPairs(result.bodies[0]!)
        const variant = renamed(pairs, new Map(moves.filter(([at]) => at < pairs.length)))
        fc.pre(variant !== undefined)
        const { receiver, events } = recorded({ client })
        await deliver(receiver, formBody(variant!, checksum))
        const record = records.get(result.exchangeNumber)!
        for (const event of events) {
          expect(event.payment.exchangeNumber).toBe(record.exchange_number)
          expect(event.payment.orderNumber).toBe(record.order_number)
          expect(event.payment.amountSen).toBe(10020)
          expect(event.payment.paid).toBe(record.payment_status)
        }
      }),
      { numRuns: NUM_RUNS },
    )
  })
})
