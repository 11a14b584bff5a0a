/**
 * An order paid stays paid, also when it is paid while another attempt's failed result is being confirmed: the
 * failed result's claim said "not paid" before its API call, the success completed during it, so the failed
 * result asks the store again before its handlers run. Real emulator and API client; the failed result's search
 * is held until the success was handled. Memory (one process), and Redis with two receivers (two processes).
 */
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createClient } from '../../src/client/index.js'
import { createReceiver, memoryStore, type PaymentEvent, type Receiver, type ReceiverStore } from '../../src/index.js'
import { redisStore } from '../../src/stores/redis/store.js'
import { DEMO, FORM, type Service, service } from '../security/genuine.js'
import { REDIS_URL, serviceAvailable } from '../stores/services.js'

let svc: Service
beforeAll(async () => {
  svc = await service()
})
afterAll(async () => {
  await svc.stop()
})

/** A fetch whose searches for `held` wait until `open()`; every other request goes straight through. */
function heldSearch(held: string): { fetch: typeof fetch; asked: Promise<void>; open(): void } {
  let open = () => {}
  let asked = () => {}
  const gate = new Promise<void>((resolve) => (open = resolve))
  const reached = new Promise<void>((resolve) => (asked = resolve))
  const gated: typeof fetch = async (input, init) => {
    if (String(input).includes(held)) {
      asked()
      await gate
    }
    return fetch(input, init)
  }
  return { fetch: gated, asked: reached, open }
}

function receiverOn(store: ReceiverStore, fetchFn: typeof fetch, events: PaymentEvent[]): Receiver {
  const client = createClient({ environment: svc.environment, ...DEMO, fetch: fetchFn })
  const receiver = createReceiver({ client, credentials: DEMO, store, logger: false })
  for (const name of ['payment.succeeded', 'payment.failed', 'payment.pending'] as const) receiver.on(name, (event) => void events.push(event))
  return receiver
}

const deliver = (receiver: Receiver, body: string) => receiver.handle({ kind: 'callback', body, contentType: FORM })

describe('a failed attempt confirmed while its order is paid elsewhere runs no handler', () => {
  it('memory store, one receiver', async () => {
    const order = `MEANWHILE-${Date.now()}`
    const failedAttempt = await svc.pay('reject', { order_number: order })
    const paidAttempt = await svc.pay('approve', { order_number: order })
    const gate = heldSearch(failedAttempt.exchangeNumber)
    const events: PaymentEvent[] = []
    const receiver = receiverOn(memoryStore(), gate.fetch, events)
    const late = deliver(receiver, failedAttempt.body)
    await gate.asked
    expect((await deliver(receiver, paidAttempt.body)).outcome).toBe('processed')
    gate.open()
    expect(await late).toMatchObject({ status: 200, outcome: 'stale' })
    expect(events.map((event) => `${event.name}:${event.payment.exchangeNumber}`)).toEqual([`payment.succeeded:${paidAttempt.exchangeNumber}`])
    // Recorded as handled: its retry is a duplicate, and asks the API nothing more.
    expect((await deliver(receiver, failedAttempt.body)).outcome).toBe('duplicate')
  })
})

const redisAvailable = await serviceAvailable('Redis', REDIS_URL)

describe.skipIf(!redisAvailable)('the same across two processes sharing Redis', () => {
  const redis = new Redis(REDIS_URL)
  const prefix = `fpx-paid-meanwhile:${randomUUID()}:`
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`)
    if (keys.length > 0) await redis.del(...keys)
    await redis.quit()
  })

  it('the failed result in one receiver, the success in another', async () => {
    const order = `MEANWHILE-R-${Date.now()}`
    const failedAttempt = await svc.pay('reject', { order_number: order })
    const paidAttempt = await svc.pay('approve', { order_number: order })
    const gate = heldSearch(failedAttempt.exchangeNumber)
    const events: PaymentEvent[] = []
    const first = receiverOn(redisStore({ client: redis, prefix, inspect: false }), gate.fetch, events)
    const second = receiverOn(redisStore({ client: redis, prefix, inspect: false }), fetch, events)
    const late = deliver(first, failedAttempt.body)
    await gate.asked
    expect((await deliver(second, paidAttempt.body)).outcome).toBe('processed')
    gate.open()
    expect(await late).toMatchObject({ status: 200, outcome: 'stale' })
    expect(events.map((event) => `${event.name}:${event.payment.exchangeNumber}`)).toEqual([`payment.succeeded:${paidAttempt.exchangeNumber}`])
  })
})
