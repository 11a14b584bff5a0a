/**
 * The confirmed default against the emulator: every new payment state is confirmed over the authenticated API
 * before a handler runs; handlers get the API's record; what the API cannot confirm yet is answered so that it
 * comes back (or, with a durable store, kept: test/stores); an order paid stays paid; `expect` checks the API's
 * record against what the merchant asked.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { answerDelivery, createReceiver, type Receiver, type ReceiverOptions, type PaymentEvent } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { DEMO, FORM, type Service, service } from '../security/genuine.js'

let svc: Service
beforeAll(async () => {
  svc = await service()
})
afterAll(async () => {
  await svc.stop()
})

function recorded(options: Partial<ReceiverOptions> = {}): { receiver: Receiver; events: PaymentEvent[] } {
  const receiver = createReceiver({ environment: svc.environment, credentials: DEMO, logger: false, ...options } as ReceiverOptions)
  const events: PaymentEvent[] = []
  for (const name of ['payment.succeeded', 'payment.failed', 'payment.pending'] as const) receiver.on(name, (event) => void events.push(event))
  return { receiver, events }
}

const deliver = (receiver: Receiver, body: string, kind: 'callback' | 'redirect' = 'callback') => receiver.handle({ kind, body, contentType: FORM })

describe('confirmation through the status API', () => {
  it('handles a genuine result with the API record, confirmed, and asks the API once per payment state', async () => {
    const searches: string[] = []
    const counting: typeof fetch = (input, init) => {
      searches.push(String(input))
      return fetch(input, init)
    }
    const { createClient } = await import('../../src/client/index.js')
    const client = createClient({ environment: svc.environment, ...DEMO, fetch: counting })
    const { receiver, events } = recorded({ client, checksumToken: DEMO.checksumToken, credentials: undefined } as Partial<ReceiverOptions>)
    const genuine = await svc.pay('approve', { transaction_amount: '100.20' })
    expect((await deliver(receiver, genuine.body)).outcome).toBe('processed')
    for (let i = 0; i < 3; i++) expect((await deliver(receiver, genuine.body, i === 0 ? 'redirect' : 'callback')).outcome).toBe('duplicate')
    expect(events).toHaveLength(1)
    expect(events[0]).toMatchObject({ confirmed: true, delivery: 'callback', state: 'succeeded', payment: { orderNumber: genuine.orderNumber, amountSen: 10020 } })
    // The record came from the API: it carries the list/search fields a callback lacks.
    expect(events[0]!.fields).toHaveProperty('interface_uid')
    expect(searches.filter((url) => url.includes('/v1/transactions/search'))).toHaveLength(1)
  })

  it('answers 503 confirmation_pending for a result the API does not know, and a redirect gets a page that checks again', async () => {
    const { receiver, events } = recorded()
    const madeUp = signCallback(samplePaymentFields({ exchange_number: 'EXNOTKNOWN1', order_number: 'ORD-NONE' }), DEMO.checksumToken).body
    const answer = await deliver(receiver, madeUp)
    expect(answer).toMatchObject({ status: 503, outcome: 'failed', error: { code: 'confirmation_pending' } })
    expect(answer.headers['retry-after']).toBe('30')
    expect(events).toHaveLength(0)
    await receiver.flush()
    expect(JSON.stringify(await receiver.timeline({ exchangeNumber: 'EXNOTKNOWN1' }))).toContain('confirmation_pending')
    const page = await answerDelivery(receiver, { kind: 'redirect', body: madeUp, contentType: FORM }, {}, undefined)
    expect(page.status).toBe(200)
    expect(page.body).toContain('Confirming your payment')
    expect(page.body).toMatch(/<meta http-equiv="refresh" content="3;url=\?fpx_recheck=1&#38;/)
    expect(page.body).not.toContain('Error code')
  })

  it('answers 503 confirmation_unavailable when the API cannot be reached, naming no secret', async () => {
    const closed = createServer((_request, response) => response.destroy())
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const baseUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/api`
    const receiver = createReceiver({ environment: { baseUrl }, credentials: DEMO, logger: false })
    receiver.onAny(() => {})
    try {
      const genuine = await svc.pay('approve')
      const answer = await deliver(receiver, genuine.body)
      expect(answer).toMatchObject({ status: 503, error: { code: 'confirmation_unavailable' } })
      expect(JSON.stringify(answer)).not.toContain(DEMO.authToken)
    } finally {
      closed.close()
    }
  })

  it('a B2B1 99 that arrives after the approval is handled as the success the API shows, once', async () => {
    const { receiver, events } = recorded()
    const pending = await svc.pay('pending', { model: 'B2B1' })
    const approved = await svc.approve(pending)
    expect(pending.fields.fpx_debit_auth_code).toBe('99')
    expect((await deliver(receiver, pending.body)).outcome).toBe('processed')
    expect((await deliver(receiver, approved.body)).outcome).toBe('duplicate')
    expect(events.map((event) => event.state)).toEqual(['succeeded'])
  })

  it('an order paid stays paid: a failed attempt delivered after its success runs no handler', async () => {
    const { receiver, events } = recorded()
    const order = `PAID-${Date.now()}`
    const failedAttempt = await svc.pay('reject', { order_number: order })
    const paidAttempt = await svc.pay('approve', { order_number: order })
    expect((await deliver(receiver, paidAttempt.body)).outcome).toBe('processed')
    const late = await deliver(receiver, failedAttempt.body)
    expect([late.status, late.outcome]).toEqual([200, 'stale'])
    expect(events.map((event) => `${event.name}:${event.payment.exchangeNumber}`)).toEqual([`payment.succeeded:${paidAttempt.exchangeNumber}`])
    // The other way round, the failure is handled, and the success after it too: money arriving is never ignored.
    const other = recorded()
    const order2 = `RETRY-${Date.now()}`
    const first = await svc.pay('reject', { order_number: order2 })
    const second = await svc.pay('approve', { order_number: order2 })
    expect((await deliver(other.receiver, first.body)).outcome).toBe('processed')
    expect((await deliver(other.receiver, second.body)).outcome).toBe('processed')
    expect(other.events.map((event) => event.name)).toEqual(['payment.failed', 'payment.succeeded'])
  })
})

describe('an order paid stays paid whichever way its results arrive (client + one bare checksumToken)', () => {
  // Deliveries of a receiver with one bare Checksum Token file their order under no uid; reconciliation reads API
  // records that name interface_uid. Both must find the same paid mark.
  async function receiverAndClient() {
    const { createClient } = await import('../../src/client/index.js')
    const client = createClient({ environment: svc.environment, ...DEMO })
    const { receiver, events } = recorded({ client, checksumToken: DEMO.checksumToken, credentials: undefined } as Partial<ReceiverOptions>)
    // reconcile() reads the whole day too: other tests' payments are handled as well.
    const named = (order: string) => events.filter((event) => event.payment.orderNumber === order).map((event) => `${event.name}:${event.payment.exchangeNumber}`)
    return { client, receiver, named }
  }

  it("a success delivered, then its order's failed attempt found by reconcile(): no failed handler", async () => {
    const { reconcile } = await import('../../src/client/index.js')
    const { client, receiver, named } = await receiverAndClient()
    const order = `RECON-${Date.now()}`
    const failedAttempt = await svc.pay('reject', { order_number: order })
    const paidAttempt = await svc.pay('approve', { order_number: order })
    expect((await deliver(receiver, paidAttempt.body)).outcome).toBe('processed')
    const today = new Date()
    const report = await reconcile({ client, receiver, from: today, to: today, orderNumbers: [order] })
    expect(report.problems).toEqual([])
    expect(named(order)).toEqual([`payment.succeeded:${paidAttempt.exchangeNumber}`])
    // Recorded as handled when reconcile() found the order paid: its callback is a duplicate.
    expect((await deliver(receiver, failedAttempt.body)).outcome).toBe('duplicate')
    expect(named(order)).toEqual([`payment.succeeded:${paidAttempt.exchangeNumber}`])
  })

  it("a success found by reconcile(), then its order's failed attempt delivered: no failed handler", async () => {
    const { reconcile } = await import('../../src/client/index.js')
    const { client, receiver, named } = await receiverAndClient()
    const order = `RECON2-${Date.now()}`
    const paidAttempt = await svc.pay('approve', { order_number: order })
    const today = new Date()
    expect((await reconcile({ client, receiver, from: today, to: today, orderNumbers: [order] })).problems).toEqual([])
    expect(named(order)).toEqual([`payment.succeeded:${paidAttempt.exchangeNumber}`])
    const failedAttempt = await svc.pay('reject', { order_number: order })
    expect((await deliver(receiver, failedAttempt.body)).outcome).toBe('stale')
    expect(named(order)).toEqual([`payment.succeeded:${paidAttempt.exchangeNumber}`])
  })
})

describe('expect: what the merchant asked for, checked against the API record', () => {
  it('refuses a result the API shows with another amount, handles an order it does not know, and answers 503 when the hook throws', async () => {
    const genuine = await svc.pay('approve', { transaction_amount: '1.00' })
    const asked = recorded({ expect: ({ orderNumber }) => (orderNumber === genuine.orderNumber ? { amount: '900.00' } : undefined) })
    const refused = await deliver(asked.receiver, genuine.body)
    expect(refused).toMatchObject({ status: 400, outcome: 'rejected', error: { code: 'result_mismatch' } })
    expect(refused.error?.message).not.toMatch(/900|1\.00/)
    expect(asked.events).toHaveLength(0)

    const unknown = recorded({ expect: () => undefined })
    expect((await deliver(unknown.receiver, genuine.body)).outcome).toBe('processed')

    const broken = recorded({ expect: () => Promise.reject(new Error('database down')) })
    const answer = await deliver(broken.receiver, genuine.body)
    expect(answer).toMatchObject({ status: 503, outcome: 'failed', error: { code: 'expect_failed' } })
    expect(answer.headers['retry-after']).toBeDefined()
    expect(broken.events).toHaveLength(0)
  })
})
