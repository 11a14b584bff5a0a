import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createClient, type FpxClient } from '../../src/client/index.js'
import { createReceiver, type PaymentBook, type PaymentEvent, type Receiver } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { DEMO, type Emulator, paymentInput } from '../client/helpers.js'
import { BOOK_STORES, emulatorWithCapture } from './book-stores.js'
import type { CallbackCapture } from './callback-capture.js'
import { eventually } from '../inbox/suite.js'
import { formBody, indexOf, moved, type Pairs, signedPairs } from './rearrange.js'

const FORM = 'application/x-www-form-urlencoded'
const deliver = (receiver: Receiver<unknown>, body: string, kind: 'callback' | 'redirect' = 'callback') => receiver.handle({ kind, body, contentType: FORM })

describe.each(BOOK_STORES)('payments known from creation ($name store)', ({ name, make }) => {
  let emulator: Emulator
  let capture: CallbackCapture
  let opened: Awaited<ReturnType<(typeof BOOK_STORES)[number]['make']>>
  let receiver: Receiver<unknown>
  let client: FpxClient
  let events: PaymentEvent<unknown>[]

  const services = emulatorWithCapture()
  beforeEach(async () => {
    ;({ emulator, capture } = services)
    opened = await make()
    receiver = createReceiver({ signatureOnly: true, checksumToken: DEMO.checksumToken, store: opened.store, logger: false as never })
    events = []
    for (const name of ['payment.succeeded', 'payment.failed', 'payment.pending'] as const) receiver.on(name, (event) => void events.push(event))
    client = createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO, book: receiver })
  })
  afterEach(async () => {
    await receiver.close()
    await opened.close()
  })

  /** Pays an order at the emulator and returns the callback body the service signed for it. */
  async function paid(order: { exchangeNumber: string | null }, outcome = 'approve', count = 1): Promise<string> {
    await emulator.complete(order.exchangeNumber as string, outcome)
    const bodies = await capture.bodies(order.exchangeNumber as string, count)
    return bodies[count - 1] as string
  }

  it('createPayment records the order, amount, credential set, exchange_number and what was attached, in one write', async () => {
    const book = (opened.store.paymentBook as () => PaymentBook)()
    const writes: string[] = []
    const original = book.record.bind(book)
    book.record = (payment) => (writes.push(payment.orderNumber), original(payment))
    const counted = createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO, book })
    const input = paymentInput({ transaction_amount: '100.2', callback_url: capture.url })
    const created = await counted.createPayment(input, { attach: { cart: 'C-42', items: 3 } })
    expect(writes).toEqual([input.order_number])
    expect(await receiver.payments.find(input.order_number)).toMatchObject({
      orderNumber: input.order_number,
      amountSen: 10020,
      uid: DEMO.uid,
      kind: 'payment',
      exchangeNumber: created.exchangeNumber,
      attached: { cart: 'C-42', items: 3 },
      status: 'open',
      state: null,
      lookups: 0,
    })
  })

  it('buildPaymentForm and createPaymentSession record too; the form says when, and stays the form', async () => {
    const input = paymentInput()
    const form = client.buildPaymentForm(input, { exposeAuthToken: true, attach: { customer: 7 } })
    expect(await form.recorded).toBe(true)
    expect(JSON.parse(JSON.stringify(form))).not.toHaveProperty('recorded')
    expect({ ...form }).not.toHaveProperty('recorded')
    expect(await receiver.payments.find(input.order_number)).toMatchObject({ kind: 'form', amountSen: 10020, exchangeNumber: null, attached: { customer: 7 } })

    // A session in USD is recorded at the MYR amount the results will carry (the emulator's 4.2 per USD).
    const session = await client.createPaymentSession({ transaction_amount: '10.00', currency: 'USD' })
    expect(await receiver.payments.find(session.data.order_number)).toMatchObject({ kind: 'session', amountSen: 4200 })

    // Without a book there is nothing to keep `attach` in: refused before any request.
    const plain = createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO })
    expect(() => plain.buildPaymentForm(paymentInput(), { exposeAuthToken: true, attach: { a: 1 } })).toThrow(/give createClient a book/)
    expect(plain.buildPaymentForm(paymentInput(), { exposeAuthToken: true }).recorded).toBeUndefined()
    expect(() => client.buildPaymentForm(paymentInput(), { exposeAuthToken: true, attach: { nested: {} as never } })).toThrow(/attach\.nested/)
  })

  it('a result of a recorded order runs its handlers with the record, settles the book, and the timeline begins with created', async () => {
    const input = paymentInput({ callback_url: capture.url })
    const created = await client.createPayment(input, { attach: { cart: 'C-1' } })
    const body = await paid(created)
    expect((await deliver(receiver, body)).outcome).toBe('processed')
    expect(events).toHaveLength(1)
    expect(events[0]?.booked).toMatchObject({ orderNumber: input.order_number, amountSen: 10020, attached: { cart: 'C-1' } })
    expect(await receiver.payments.find(input.order_number)).toMatchObject({ status: 'succeeded', state: 'succeeded', exchangeNumber: created.exchangeNumber })
    expect(await receiver.payments.listOpen()).toEqual([])
    // A duplicate changes nothing.
    expect((await deliver(receiver, body, 'redirect')).outcome).toBe('duplicate')
    const timeline = await receiver.timeline(input.order_number)
    expect(timeline[0]).toMatchObject({ event: 'created', source: 'client', orderNumber: input.order_number, exchangeNumber: created.exchangeNumber })
    expect(timeline.map((entry) => entry.event)).toEqual(['created', 'received', 'verified', 'processed', 'received', 'verified', 'duplicate'])
    expect((await receiver.timeline({ exchangeNumber: created.exchangeNumber as string }))[0]?.event).toBe('created')
  })

  it('refuses a result whose amount or credential set disagrees with the record, naming what (never a value); the genuine one is handled', async () => {
    // The buyer's expensive order, recorded; the cheap one is paid, its payment_id is the expensive order's number.
    await receiver.payments.record({ orderNumber: '2002', amountSen: 90000, uid: DEMO.uid, kind: 'form', createdAt: new Date(), exchangeNumber: null, attached: {} })
    await receiver.payments.record({ orderNumber: '2001', amountSen: 100, uid: DEMO.uid, kind: 'form', createdAt: new Date(), exchangeNumber: null, attached: {} })
    const cheap = samplePaymentFields({ order_number: '2001', payment_id: '2002', transaction_amount: '1.00', transaction_amount_received: '1.00' })
    const signed = signCallback(cheap, DEMO.checksumToken).body
    const { pairs, checksum } = signedPairs(signed)
    // D: payment_id's value moved into order_number (order_number's pushed under a name before it).
    const replayed = formBody(moved(pairs, indexOf(pairs, 'payment_id'), 'order_number') as Pairs, checksum)
    // Without confirmation, the copy's order_number could be another signed value: refused before the book is read.
    expect(await deliver(receiver, replayed)).toMatchObject({ status: 400, outcome: 'rejected', error: { code: 'needs_confirmation' } })
    // A genuine result whose amount differs from every amount recorded for its order: refused, naming what, no value.
    const otherAmount = signCallback({ ...cheap, transaction_amount: '9.00', transaction_amount_received: '9.00' }, DEMO.checksumToken).body
    const refused = await deliver(receiver, otherAmount)
    expect(refused).toMatchObject({ status: 400, outcome: 'rejected', error: { code: 'result_mismatch' } })
    expect(refused.error?.message).toMatch(/transaction_amount differs from the amount recorded/)
    expect(refused.error?.message).not.toMatch(/2002|900|9\.00|1\.00/)
    expect(events).toHaveLength(0)
    // Nothing was recorded as handled: the genuine result still runs the handlers, for the cheap order.
    expect((await deliver(receiver, signed)).outcome).toBe('processed')
    expect(events.map((event) => event.payment.orderNumber)).toEqual(['2001'])
    expect((await receiver.payments.find('2002'))?.status).toBe('open')
    // A minimal result (no address, order_number pinned by its shape) of a recorded order is handled without an amount.
    await receiver.payments.record({ orderNumber: 'MIN-1', amountSen: 500, uid: DEMO.uid, kind: 'form', createdAt: new Date(), exchangeNumber: null, attached: {} })
    const minimal = signCallback({ exchange_number: 'EXMIN0000001', order_number: 'MIN-1', payment_status: 'true' }, DEMO.checksumToken).body
    expect((await deliver(receiver, minimal, 'redirect')).outcome).toBe('processed')
  })

  // Order numbers are unique per merchant only: the other credential set's result is its own order's, which it
  // never recorded (book-merchants.test.ts has both merchants record). It used to be refused as a mismatch.
  it('checks a result signed with another credential set against that set’s record, not the order’s first one', async () => {
    const other = { uid: '11111111-2222-4333-8444-555555555555', checksumToken: 'ab'.repeat(32) }
    const sets = createReceiver({ signatureOnly: true, credentials: [{ uid: DEMO.uid, checksumToken: DEMO.checksumToken }, other], store: opened.store, logger: false as never })
    const booked: unknown[] = []
    sets.on('payment.succeeded', (event) => void booked.push(event.booked?.uid))
    await sets.payments.record({ orderNumber: 'SET-1', amountSen: 10020, uid: DEMO.uid, kind: 'payment', createdAt: new Date(), exchangeNumber: null, attached: {} })
    const fields = samplePaymentFields({ order_number: 'SET-1', uid: other.uid })
    expect((await deliver(sets, signCallback(fields, other.checksumToken).body)).outcome).toBe('processed')
    const mine = samplePaymentFields({ order_number: 'SET-1', uid: DEMO.uid, transaction_amount: '1.00' })
    const answer = await deliver(sets, signCallback(mine, DEMO.checksumToken).body)
    expect(answer).toMatchObject({ status: 400, error: { code: 'result_mismatch', message: expect.stringMatching(/transaction_amount/) } })
    expect((await deliver(sets, signCallback({ ...mine, transaction_amount: '100.20' }, DEMO.checksumToken).body)).outcome).toBe('processed')
    expect(booked).toEqual([undefined, DEMO.uid])
    await sets.close()
  })

  // Inbox mode needs a durable queue: the memory store has none (test/inbox covers that it refuses inbox mode).
  if (name !== 'memory')
  it('inbox mode: the check and the settle run from the inbox; a mismatch is dead-lettered', async () => {
    const queued = createReceiver({ signatureOnly: true, checksumToken: DEMO.checksumToken, store: opened.store, inbox: { pollMs: 20, maxAttempts: 3 }, logger: false as never })
    const runs: string[] = []
    queued.on('payment.succeeded', (event) => void runs.push(`${event.payment.orderNumber}:${event.booked?.attached.cart}`))
    try {
      await queued.payments.record({ orderNumber: 'INBOX-1', amountSen: 10020, uid: DEMO.uid, kind: 'form', createdAt: new Date(), exchangeNumber: null, attached: { cart: 'C-9' } })
      const forged = samplePaymentFields({ order_number: 'INBOX-1', transaction_amount: '1.00', transaction_amount_received: '1.00' })
      expect((await deliver(queued, signCallback(forged, DEMO.checksumToken).body)).outcome).toBe('queued')
      expect(await eventually(async () => (await queued.inbox.counts()).dead === 1)).toBe(true)
      expect((await queued.inbox.list({ status: 'dead' }))[0]?.lastError).toMatch(/result_mismatch/)
      const genuine = samplePaymentFields({ order_number: 'INBOX-1' })
      expect((await deliver(queued, signCallback(genuine, DEMO.checksumToken).body)).outcome).toBe('queued')
      expect(await eventually(async () => (await queued.payments.find('INBOX-1'))?.status === 'succeeded')).toBe(true)
      expect(runs).toEqual(['INBOX-1:C-9'])
    } finally {
      await queued.inbox.stop()
      await queued.close()
    }
  })

  it('with book: false the store’s book is left alone', async () => {
    await receiver.payments.record({ orderNumber: 'OFF-1', amountSen: 1, uid: DEMO.uid, kind: 'form', createdAt: new Date(), exchangeNumber: null, attached: {} })
    const off = createReceiver({ signatureOnly: true, checksumToken: DEMO.checksumToken, store: opened.store, book: false, logger: false as never })
    off.on('payment.succeeded', () => {})
    const body = signCallback(samplePaymentFields({ order_number: 'OFF-1' }), DEMO.checksumToken).body
    expect((await deliver(off, body)).outcome).toBe('processed')
    await expect(off.payments.listOpen()).rejects.toThrow(/keeps no payment book/)
    await off.close()
  })
})

