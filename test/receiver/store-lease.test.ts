/**
 * A store's own leaseMs ("overriding the receiver's leaseMs when given") shorter than the receiver's: the receiver
 * still gives a confirmation half of ITS leaseMs, so a claim can run out while the status API is asked, well within
 * the receiver's budget, and a duplicate delivery on another receiver sharing the store takes the payment over:
 * payment.succeeded runs twice for one payment state with a healthy (merely slow) API.
 */
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { createReceiver, type ReceiverStore } from '../../src/index.js'
import { redisStore } from '../../src/stores/redis/store.js'
import { postgresStore } from '../../src/stores/postgres/store.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { DATABASE_URL, REDIS_URL, serviceAvailable } from '../stores/services.js'

const redisUp = await serviceAvailable('Redis', REDIS_URL)
const postgresUp = await serviceAvailable('PostgreSQL', DATABASE_URL)
const TOKEN = 'ef'.repeat(32)
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

async function twoReceivers(open: () => ReceiverStore<unknown>, ready: (store: ReceiverStore<unknown>) => Promise<void> = async () => {}) {
  const fields = samplePaymentFields()
  // The API's first answers take 600 ms: well within half of the receiver's leaseMs (2 s), past the store's lease
  // (300 ms); later ones are quick (what the API cannot answer in time is kept and confirmed later).
  let asked = 0
  const client = {
    async searchTransactions(_by: string, value: string) {
      if (asked++ < 2) await sleep(600)
      return value === fields.exchange_number ? [{ ...fields, payment_status: true }] : []
    },
  }
  const runs: string[] = []
  const stores = [open(), open()]
  for (const store of stores) await ready(store)
  const receivers = stores.map((store) => {
    const receiver = createReceiver({ client, checksumToken: TOKEN, store, leaseMs: 4_000, logger: false, timeline: false } as never)
    receiver.on('payment.succeeded', (event) => void runs.push(event.id))
    return receiver
  })
  const signed = signCallback(fields, TOKEN)
  const callback = receivers[0]!.handle({ kind: 'callback', body: Buffer.from(signed.body), contentType: signed.contentType })
  await sleep(100)
  const redirect = receivers[1]!.handle({ kind: 'redirect', body: Buffer.from(signed.body), contentType: signed.contentType })
  const answers = await Promise.all([callback, redirect])
  // Whatever was kept for later runs within a few seconds (the inbox's first retry comes after about a second).
  for (let waited = 0; waited < 8_000 && runs.length === 0; waited += 50) await sleep(50)
  await sleep(1_500)
  await Promise.all(receivers.map((receiver) => receiver.close()))
  return { runs, answers: answers.map((answer) => answer.error?.code ?? answer.outcome) }
}

describe.skipIf(!redisUp)('Redis store with its own leaseMs', () => {
  const redis = new Redis(REDIS_URL)
  const prefix = `atk-lease-override:${randomUUID()}:`
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`)
    if (keys.length > 0) await redis.del(...keys)
    await redis.quit()
  })
  it('runs payment.succeeded once when a duplicate arrives while the API is asked', async () => {
    const { runs } = await twoReceivers(() => redisStore({ client: redis, prefix, leaseMs: 300, logger: false }) as ReceiverStore<unknown>)
    expect(runs).toHaveLength(1)
  })
})

describe.skipIf(!postgresUp)('PostgreSQL store with its own leaseMs', () => {
  const pools: pg.Pool[] = []
  const table = `atk_lease_${randomUUID().replace(/-/g, '').slice(0, 10)}`
  afterAll(async () => {
    const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 1 })
    const names = ['', '_inbox', '_timeline', '_book', '_book_sets', '_locks']
    await pool.query(`DROP TABLE IF EXISTS ${names.map((suffix) => `"${table}${suffix}"`).join(', ')}`).catch(() => {})
    await pool.end()
    await Promise.all(pools.map((pool) => pool.end()))
  })
  it('runs payment.succeeded once when a duplicate arrives while the API is asked', async () => {
    const { runs } = await twoReceivers(() => {
      const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 3 })
      pool.on('error', () => {})
      pools.push(pool)
      return postgresStore({ client: pool, table, leaseMs: 300 }) as ReceiverStore<unknown>
    }, (store) => (store as unknown as { migrate(): Promise<void> }).migrate())
    expect(runs).toHaveLength(1)
  })
})
