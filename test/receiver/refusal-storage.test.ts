/**
 * Refused deliveries cost O(1) storage (issue 21, defect 2): a flood of forged requests, each claiming a payment
 * of its own, creates no key or row in any store. They are counted, and the latest few kept in memory.
 */
import { randomUUID } from 'node:crypto'
import { gzipSync } from 'node:zlib'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { createReceiver, type Delivery, type Receiver, type ReceiverStore } from '../../src/index.js'
import { memoryStore } from '../../src/stores/memory/store.js'
import { postgresStore } from '../../src/stores/postgres/store.js'
import { redisStore } from '../../src/stores/redis/store.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { dropStoreTables } from '../stores/postgres-suites.js'
import { DATABASE_URL, REDIS_URL, serviceAvailable } from '../stores/services.js'

const TOKEN = 'ab'.repeat(32)
const OTHER_TOKEN = 'cd'.repeat(32)
/** Enough to see any per-request growth, few enough for a shared machine. */
const FLOOD = 300

/** FLOOD refused deliveries, each claiming a payment of its own, of every kind of refusal. */
function flood(): Delivery[] {
  const deliveries: Delivery[] = []
  for (let i = 0; i < FLOOD; i++) {
    const fields = samplePaymentFields({ exchange_number: `FLOOD-${randomUUID()}`, order_number: `ORD-FLOOD-${i}` })
    const kind = i % 5
    if (kind === 0) deliveries.push({ kind: 'callback', ...signCallback(fields, OTHER_TOKEN) })
    else if (kind === 1) deliveries.push({ kind: 'redirect', ...signCallback({ ...fields, transaction_amount: 'lots' }, TOKEN) })
    else if (kind === 2) deliveries.push({ kind: 'callback', contentEncoding: 'gzip', ...signCallback(fields, TOKEN) })
    else if (kind === 3) deliveries.push({ kind: 'callback', contentType: 'application/x-www-form-urlencoded', body: gzipSync('x') })
    // Lazily read, as the Node adapters hand bodies over.
    else {
      const { body, contentType } = signCallback(fields, OTHER_TOKEN)
      deliveries.push({ kind: 'callback', contentType, readBody: async () => Buffer.from(body) })
    }
  }
  return deliveries
}

/** Floods the receiver, then checks what it counted and kept, and that a genuine delivery still goes through. */
async function floodAndCheck(receiver: Receiver, count: () => Promise<number>): Promise<void> {
  receiver.onAny(() => {})
  const before = await count()
  const deliveries = flood()
  const statuses = new Set<number>()
  for (const delivery of deliveries) statuses.add((await receiver.handle(delivery)).status)
  expect([...statuses].sort()).toEqual([400, 401, 415])
  await receiver.flush()
  expect(await count()).toBe(before)

  const refusals = receiver.refusals()
  expect(refusals.total).toBe(FLOOD)
  expect(refusals.byCode).toEqual({
    checksum_mismatch: (2 * FLOOD) / 5,
    invalid_fields: FLOOD / 5,
    unsupported_encoding: FLOOD / 5,
    // Bytes that are not UTF-8.
    invalid_encoding: FLOOD / 5,
  })
  // Only the latest are kept, oldest first, with what they claimed (never trusted).
  expect(refusals.recent).toHaveLength(100)
  const last = refusals.recent.at(-1)!
  expect(last).toMatchObject({ code: 'checksum_mismatch', status: 401, source: 'callback', orderNumber: `ORD-FLOOD-${FLOOD - 1}` })
  expect(last.exchangeNumber).toMatch(/^FLOOD-/)
  // The timeline still shows a kept refusal, from this process's memory, marked unverified.
  const shown = await receiver.timeline(`ORD-FLOOD-${FLOOD - 1}`)
  expect(shown.map((entry) => `${entry.event}:${entry.verified}`)).toEqual(['received:false', 'refused:false'])
  // The oldest are gone from memory too.
  expect(await receiver.timeline('ORD-FLOOD-4')).toEqual([])

  // A genuine delivery is stored as before: the verified timeline is unchanged.
  const genuine = samplePaymentFields()
  expect((await receiver.handle({ kind: 'callback', ...signCallback(genuine, TOKEN) })).status).toBe(200)
  await receiver.flush()
  expect(await count()).toBeGreaterThan(before)
  const entries = await receiver.timeline(String(genuine.order_number))
  expect(entries.map((entry) => entry.event)).toEqual(['received', 'verified', 'processed'])
}

describe('refused deliveries in the memory store', () => {
  it('append nothing to the store, however many payments they claim', async () => {
    const store = memoryStore()
    let appended = 0
    let claims = 0
    const watched: ReceiverStore = {
      ...store,
      claim: (request) => {
        claims++
        return store.claim(request)
      },
      appendTimeline: async (entries) => {
        appended += entries.length
        await store.appendTimeline!(entries)
      },
    }
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store: watched })
    await floodAndCheck(receiver, async () => appended + claims)
    // Nothing of the flood is in the store itself.
    expect(await store.readTimeline!({ orderNumber: `ORD-FLOOD-${FLOOD - 1}` })).toEqual([])
  })

  it('are counted, but not kept, with timeline: false', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, timeline: false })
    await receiver.handle({ kind: 'callback', ...signCallback(samplePaymentFields(), OTHER_TOKEN) })
    expect(receiver.refusals()).toEqual({ total: 1, byCode: { checksum_mismatch: 1 }, recent: [] })
  })
})

const redisUp = await serviceAvailable('Redis', REDIS_URL)

describe.skipIf(!redisUp)('refused deliveries in the Redis store', () => {
  const prefix = `fpx-test:${randomUUID()}:`
  const admin = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 })
  const keys = async () => {
    const found: string[] = []
    let cursor = '0'
    do {
      const [next, batch] = await admin.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
      found.push(...batch)
      cursor = next
    } while (cursor !== '0')
    return found
  }
  afterAll(async () => {
    const left = await keys()
    if (left.length > 0) await admin.del(...left)
    await admin.quit()
  })

  it('create no key, however many payments they claim', async () => {
    await admin.connect()
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store: redisStore({ client: admin, prefix }) })
    await floodAndCheck(receiver, async () => (await keys()).length)
  })
})

const postgresUp = await serviceAvailable('PostgreSQL', DATABASE_URL)

describe.skipIf(!postgresUp)('refused deliveries in the PostgreSQL store', () => {
  const table = `fpx_collect_test_${randomUUID().replace(/-/g, '').slice(0, 12)}_refused`
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 3 })
  afterAll(async () => {
    await dropStoreTables(pool, table)
    await pool.end()
  })

  it('create no row, however many payments they claim', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store: postgresStore({ client: pool, table }) })
    // The tables exist once the store was first used.
    await receiver.handle({ kind: 'callback', ...signCallback(samplePaymentFields(), TOKEN) })
    await receiver.flush()
    const count = async () => {
      let total = 0
      for (const name of [table, `${table}_timeline`, `${table}_inbox`])
        total += Number((await pool.query<{ n: string }>(`SELECT count(*) AS n FROM "${name}"`)).rows[0]!.n)
      return total
    }
    await floodAndCheck(receiver, count)
  })
})
