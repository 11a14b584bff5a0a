/**
 * An order paid stays paid, also when it is paid while another attempt's failed result is being confirmed: the
 * failed result's claim said "not paid" before its API call, the success completed during it, so the failed
 * result asks the store again before its handlers run. Real emulator and API client; the failed result's search
 * is held until the success was handled. Memory and PostgreSQL in transactional mode (whose open claim must not
 * block that read: PGlite is one session) in one process, and Redis with two receivers (two processes).
 */
import { randomUUID } from 'node:crypto'
import { PGlite } from '@electric-sql/pglite'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createClient } from '../../src/client/index.js'
import { createReceiver, memoryStore, type PaymentEvent, type Receiver, type ReceiverStore } from '../../src/index.js'
import { postgresStore } from '../../src/stores/postgres/store.js'
import { redisStore } from '../../src/stores/redis/store.js'
import { DEMO, FORM, type Service, service } from '../security/genuine.js'
import { dropStoreTables, uniqueTable } from '../stores/postgres-suites.js'
import { DATABASE_URL, REDIS_URL, serviceAvailable } from '../stores/services.js'

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

/** The failed attempt's callback waits on its API call while the order's success is handled by `paidSide`. */
async function paidWhileConfirming(order: string, failedSide: (fetchFn: typeof fetch) => Receiver, paidSide: Receiver | undefined, events: PaymentEvent[]) {
  const failedAttempt = await svc.pay('reject', { order_number: order })
  const paidAttempt = await svc.pay('approve', { order_number: order })
  const gate = heldSearch(failedAttempt.exchangeNumber)
  const receiver = failedSide(gate.fetch)
  const late = deliver(receiver, failedAttempt.body)
  await gate.asked
  expect((await deliver(paidSide ?? receiver, paidAttempt.body)).outcome).toBe('processed')
  gate.open()
  expect(await late).toMatchObject({ status: 200, outcome: 'stale' })
  expect(events.map((event) => `${event.name}:${event.payment.exchangeNumber}`)).toEqual([`payment.succeeded:${paidAttempt.exchangeNumber}`])
  // Recorded as handled: its retry is a duplicate.
  expect((await deliver(receiver, failedAttempt.body)).outcome).toBe('duplicate')
}

describe('a failed attempt confirmed while its order is paid elsewhere runs no handler', () => {
  it('PGlite, transactional: one session, so the order cannot be paid meanwhile, and the read waits for nothing', async () => {
    const db = new PGlite()
    try {
      const events: PaymentEvent[] = []
      const store = postgresStore({ client: db, table: uniqueTable('paid_meanwhile'), transactional: true })
      const receiver = receiverOn(store as ReceiverStore, fetch, events)
      const failedAttempt = await svc.pay('reject', { order_number: `MEANWHILE-PGLITE-${Date.now()}` })
      // A read beside the open transaction would wait for it, and the delivery would end 503 store_unavailable.
      expect(await deliver(receiver, failedAttempt.body)).toMatchObject({ status: 200, outcome: 'processed' })
      expect(events.map((event) => event.name)).toEqual(['payment.failed'])
    } finally {
      await db.close()
    }
  }, 60_000)

  it('memory store, one receiver', async () => {
    const events: PaymentEvent[] = []
    const store = memoryStore()
    await paidWhileConfirming(`MEANWHILE-${Date.now()}`, (fetchFn) => receiverOn(store, fetchFn, events), undefined, events)
  })
})

const postgresAvailable = await serviceAvailable('PostgreSQL', DATABASE_URL)

describe.skipIf(!postgresAvailable)('the same across two processes sharing PostgreSQL, transactional', () => {
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 4 })
  const table = uniqueTable('paid_meanwhile')
  afterAll(async () => {
    await dropStoreTables(pool, table)
    await pool.end()
  })

  it('the failed result in one receiver, the success in another', async () => {
    const events: PaymentEvent[] = []
    const store = () => postgresStore({ client: pool, table, transactional: true }) as ReceiverStore
    const second = receiverOn(store(), fetch, events)
    await paidWhileConfirming(`MEANWHILE-PG-${Date.now()}`, (fetchFn) => receiverOn(store(), fetchFn, events), second, events)
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
    const events: PaymentEvent[] = []
    const second = receiverOn(redisStore({ client: redis, prefix, inspect: false }), fetch, events)
    await paidWhileConfirming(`MEANWHILE-R-${Date.now()}`, (fetchFn) => receiverOn(redisStore({ client: redis, prefix, inspect: false }), fetchFn, events), second, events)
  })
})
