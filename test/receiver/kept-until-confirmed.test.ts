/**
 * A durable store without inbox mode keeps a genuine result the API cannot confirm yet (answered 200 `queued`), and
 * its workers confirm it later. An operator sees and retries those entries through receiver.inbox, as in inbox mode,
 * rather than only from the command line.
 */
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createClient } from '../../src/client/index.js'
import { createReceiver, type ReceiverStore } from '../../src/index.js'
import { postgresStore } from '../../src/stores/postgres/store.js'
import { redisStore } from '../../src/stores/redis/store.js'
import { eventually } from '../inbox/suite.js'
import { DEMO, delivery, type Service, service } from '../security/genuine.js'
import { dropStoreTables, uniqueTable } from '../stores/postgres-suites.js'
import { DATABASE_URL, REDIS_URL, serviceAvailable } from '../stores/services.js'

const available = (await serviceAvailable('Redis', REDIS_URL)) && (await serviceAvailable('PostgreSQL', DATABASE_URL))

describe.skipIf(!available)('a result kept until the API confirms it', () => {
  let svc: Service
  const redis = new Redis(REDIS_URL)
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 4 })
  const prefix = `fpx-kept:${randomUUID()}:`
  const table = uniqueTable('kept')
  beforeAll(async () => {
    svc = await service()
  })
  afterAll(async () => {
    await svc.stop()
    await dropStoreTables(pool, table)
    const keys = await redis.keys(`${prefix}*`)
    if (keys.length > 0) await redis.del(...keys)
    await Promise.all([pool.end(), redis.quit()])
  })

  const stores: [string, () => ReceiverStore<unknown>][] = [
    ['Redis', () => redisStore({ client: redis, prefix, logger: false }) as ReceiverStore<unknown>],
    ['PostgreSQL', () => postgresStore({ client: pool, table }) as ReceiverStore<unknown>],
  ]

  it.each(stores)('%s: receiver.inbox lists it, and a retry once the API is back runs the handler once', async (_name, makeStore) => {
    let apiDown = true
    const fetchUnlessDown: typeof fetch = (input, init) => (apiDown ? Promise.reject(new TypeError('fetch failed')) : fetch(input, init))
    const client = createClient({ environment: svc.environment, ...DEMO, fetch: fetchUnlessDown, logger: false })
    const receiver = createReceiver({ client, checksumToken: DEMO.checksumToken, store: makeStore(), logger: false })
    const handled: string[] = []
    receiver.on('payment.succeeded', (event) => void handled.push(event.id))
    try {
      const genuine = await svc.pay('approve')
      expect(await receiver.handle(delivery(genuine.body, 'body'))).toMatchObject({ status: 200, outcome: 'queued' })

      // Kept, and tried: the attempt failed because the API is still down.
      expect(await eventually(async () => (await receiver.inbox.list())[0]?.lastError != null)).toBe(true)
      const [item] = await receiver.inbox.list()
      expect(item).toMatchObject({ exchangeNumber: genuine.exchangeNumber, state: 'succeeded', status: 'pending', orderNumber: genuine.orderNumber })
      expect(item?.lastError).toMatch(/confirmation_unavailable/)
      expect(handled).toEqual([])

      apiDown = false
      // 1, or 0 when a worker holds the entry for an attempt at this moment (its attempts are reset, and it runs again).
      expect(await receiver.inbox.retry({ exchangeNumber: genuine.exchangeNumber })).toBeLessThanOrEqual(1)
      expect(await eventually(async () => (await receiver.inbox.counts()).pending === 0)).toBe(true)
      expect(handled).toEqual([`${genuine.exchangeNumber}:succeeded`])
      expect(await receiver.inbox.counts()).toEqual({ pending: 0, dead: 0 })
    } finally {
      await receiver.close()
    }
  })
})
