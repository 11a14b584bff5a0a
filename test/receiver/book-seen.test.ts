/**
 * What the receiver tells the payment book of every delivery it handles, on every store: an order the client never
 * recorded is in the book from its first handled result (the API's record when confirmed), and a handler that keeps
 * failing shows on the order ("paid, handler failing"), its message without the result's values.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createReceiver, type Receiver, type ReceiverOptions } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { createClient } from '../../src/client/index.js'
import { paymentInput } from '../client/helpers.js'
import { DEMO, FORM, type Service, service } from '../security/genuine.js'
import { BOOK_STORES, type OpenedBookStore } from './book-stores.js'

let svc: Service
beforeAll(async () => {
  svc = await service()
})
afterAll(async () => {
  await svc.stop()
})

const deliver = (receiver: Receiver<unknown>, body: string) => receiver.handle({ kind: 'callback', body, contentType: FORM })

describe.each(BOOK_STORES)('the book of every payment seen ($name store)', ({ make }) => {
  let opened: OpenedBookStore
  const made: Receiver<unknown>[] = []
  beforeEach(async () => {
    opened = await make()
  })
  afterEach(async () => {
    await Promise.all(made.splice(0).map((receiver) => receiver.close()))
    await opened.close()
  })
  const receiverWith = (options: Partial<ReceiverOptions<unknown>> = {}) => {
    const receiver = createReceiver({ environment: svc.environment, credentials: DEMO, store: opened.store, logger: false, sweep: false, ...options } as ReceiverOptions<unknown>)
    made.push(receiver)
    return receiver
  }
  const buyer = () => ({ buyer_name: 'Siti Aminah', buyer_email: `Siti.${randomUUID().slice(0, 8)}@Example.com`, transaction_amount: '25.50' })

  it('records an order the client never recorded from the API record its handlers got', async () => {
    const receiver = receiverWith()
    receiver.on('payment.succeeded', () => {})
    const who = buyer()
    const genuine = await svc.pay('approve', who)
    expect((await deliver(receiver, genuine.body)).outcome).toBe('processed')
    const found = await receiver.payments.find(genuine.orderNumber)
    expect(found).toMatchObject({
      kind: 'result',
      uid: DEMO.uid,
      amountSen: 2550,
      askedSen: [2550],
      exchangeNumber: genuine.exchangeNumber,
      status: 'succeeded',
      state: 'succeeded',
      buyerEmail: who.buyer_email,
      buyerName: who.buyer_name,
      failures: 0,
      settledAt: expect.any(Date),
    })
    const page = await receiver.payments.list({ search: who.buyer_email.toLowerCase() })
    expect(page.payments.map((payment) => payment.orderNumber)).toEqual([genuine.orderNumber])
    expect((await receiver.payments.list({ search: genuine.exchangeNumber })).payments).toEqual([found])
    // Its timeline starts with the deliveries: nothing was created here.
    await receiver.flush()
    expect((await receiver.timeline(genuine.orderNumber)).map((entry) => entry.event)).not.toContain('created')
  })

  it('shows a success whose handler keeps failing apart, its message without the buyer, until a delivery is handled', async () => {
    const receiver = receiverWith()
    let broken = true
    receiver.on('payment.succeeded', (event) => {
      if (broken) throw new Error(`cannot ship to ${event.payment.buyer.name} <${event.payment.buyer.email}>`)
    })
    const who = buyer()
    const genuine = await svc.pay('approve', who)
    for (let i = 0; i < 2; i++) expect((await deliver(receiver, genuine.body)).outcome).toBe('failed')
    const failing = await receiver.payments.find(genuine.orderNumber)
    expect(failing).toMatchObject({ kind: 'result', status: 'open', state: null, failures: 2, buyerEmail: who.buyer_email })
    expect(failing?.lastFailure).toEqual({ at: expect.any(Date), state: 'succeeded', message: 'Error: cannot ship to [field value] <[field value]>' })
    expect((await receiver.payments.list({ status: 'paid_failing' })).payments.map((payment) => payment.orderNumber)).toEqual([genuine.orderNumber])
    const window = { from: new Date(Date.now() - 3_600_000), to: new Date(Date.now() + 60_000) }
    expect(await receiver.payments.overview(window)).toMatchObject({ paidFailing: 1, failing: 1, byStatus: { open: 1 } })
    broken = false
    expect((await deliver(receiver, genuine.body)).outcome).toBe('processed')
    expect(await receiver.payments.find(genuine.orderNumber)).toMatchObject({ status: 'succeeded', failures: 0, lastFailure: { state: 'succeeded' } })
    expect((await receiver.payments.list({ status: 'paid_failing' })).payments).toEqual([])
  })

  it('records a result a signature-only receiver acted on, under no known credential set', async () => {
    const receiver = receiverWith({ environment: undefined, credentials: undefined, signatureOnly: true, checksumToken: DEMO.checksumToken })
    receiver.on('payment.failed', () => {})
    const orderNumber = `SEEN-${randomUUID()}`
    const body = signCallback(samplePaymentFields({ order_number: orderNumber, payment_status: 'false', transaction_amount: '7.00' }), DEMO.checksumToken).body
    expect((await deliver(receiver, body)).outcome).toBe('processed')
    expect(await receiver.payments.find(orderNumber)).toMatchObject({ kind: 'result', uid: '', amountSen: 700, status: 'failed', buyerEmail: 'aisyah@example.com' })
  })

  it('keeps the buyer a created payment names, so that an unpaid checkout is found by e-mail', async () => {
    const receiver = receiverWith()
    const client = createClient({ environment: svc.environment, ...DEMO, book: receiver, logger: false })
    const email = `Checkout.${randomUUID().slice(0, 8)}@Example.com`
    const input = paymentInput({ buyer_email: email, buyer_name: 'Tan Mei Ling' })
    await client.createPayment(input)
    const form = client.buildPaymentForm(paymentInput({ buyer_email: email }), { exposeAuthToken: true })
    await form.recorded
    const found = await receiver.payments.list({ search: email.toUpperCase() })
    expect(found.payments.map((payment) => [payment.orderNumber, payment.kind, payment.status, payment.buyerEmail])).toEqual([
      [form.fields.order_number, 'form', 'open', email],
      [input.order_number, 'payment', 'open', email],
    ])
    expect(found.payments[1]?.buyerName).toBe('Tan Mei Ling')
  })

  it('says who holds the sweep lock and what its last pass did', async () => {
    const receiver = receiverWith()
    expect(await receiver.payments.sweepStatus()).toEqual({ holder: null, heldUntil: null, lastPass: null })
    const lock = opened.store.sweepLock!()
    const held = (await lock.acquire('sweeper-1', 60_000))!
    await lock.notePass({ at: new Date(), holder: 'sweeper-1', nextAt: null, lookups: 2, found: 1, closed: 1, failures: [] })
    expect(await receiver.payments.sweepStatus()).toMatchObject({ holder: 'sweeper-1', heldUntil: expect.any(Date), lastPass: { lookups: 2, found: 1 } })
    await lock.release('sweeper-1', held.token)
  })
})
