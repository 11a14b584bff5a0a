import { randomUUID } from 'node:crypto'
import { PGlite } from '@electric-sql/pglite'
import { Redis } from 'ioredis'
import { createClient } from 'redis'
import { afterAll, beforeAll, describe } from 'vitest'
import { memoryStore, type ReceiverStore } from '../../src/index.js'
import { type PostgresQueryable, type PostgresStore, postgresStore } from '../../src/stores/postgres/store.js'
import { type RedisClientLike, redisStore } from '../../src/stores/redis/store.js'
import { type BookUnderTest, paymentBookContract } from './payment-book-contract.js'
import { testPools } from './postgres-suites.js'
import { DATABASE_URL, REDIS_URL, serviceAvailable } from './services.js'

/* The payment book contract on every built-in store; what only one store does is in its own payment-book file. */

const spaces = new Map<string, ReceiverStore>()
paymentBookContract({
  name: 'memory',
  // One process: the same space is the same store.
  open: async (space, options) => {
    let store = spaces.get(space)
    if (store === undefined) spaces.set(space, (store = memoryStore(options)))
    return { store, close: async () => {} }
  },
  cleanup: async () => spaces.clear(),
})

const redisAvailable = await serviceAvailable('Redis', REDIS_URL)
// Unique per run, so parallel runs on one Redis never meet; deleted at the end.
const RUN_PREFIX = `fpx-test:${randomUUID()}:`

const REDIS_CLIENTS = {
  ioredis: async () => {
    const client = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 })
    await client.connect()
    return { client: client as RedisClientLike, close: async () => void (await client.quit()) }
  },
  'node-redis': async () => {
    const client = createClient({ url: REDIS_URL })
    client.on('error', () => {})
    await client.connect()
    return { client: client as RedisClientLike, close: () => client.close() }
  },
} as const

describe.skipIf(!redisAvailable)('Redis', () => {
  for (const [name, connect] of Object.entries(REDIS_CLIENTS)) {
    paymentBookContract({
      name: `redis via ${name}`,
      open: async (space, options) => {
        const { client, close } = await connect()
        return { store: redisStore({ client, prefix: `${RUN_PREFIX}${space}:`, inspect: false, ...options }), close }
      },
      cleanup: async () => {
        const admin = new Redis(REDIS_URL)
        let cursor = '0'
        do {
          const [next, keys] = await admin.scan(cursor, 'MATCH', `${RUN_PREFIX}*`, 'COUNT', 1000)
          if (keys.length > 0) await admin.del(...keys)
          cursor = next
        } while (cursor !== '0')
        await admin.quit()
      },
    })
  }
})

/** A PostgreSQL subject: every space a table of its own, all of its tables dropped at the end. */
function postgresSubject(name: string, client: (space: string) => { client: PostgresQueryable; close(): Promise<void> }, admin: () => PostgresQueryable): BookUnderTest {
  const tables: string[] = []
  return {
    name,
    open: async (space, options) => {
      const table = `fpx_collect_test_${space}`
      if (!tables.includes(table)) tables.push(table)
      const connection = client(space)
      return { store: postgresStore({ client: connection.client, table, pruneEvery: 0, ...options }), close: connection.close }
    },
    prune: async (store) => void (await (store as PostgresStore).prune()),
    cleanup: async () => {
      for (const table of tables)
        for (const suffix of ['', '_inbox', '_timeline', '_book', '_locks']) await admin().query(`DROP TABLE IF EXISTS "${table}${suffix}"`)
    },
  }
}

const postgresAvailable = await serviceAvailable('PostgreSQL', DATABASE_URL)

describe.skipIf(!postgresAvailable)('PostgreSQL', () => {
  // A pool per store, as each process would have its own.
  const pools = testPools()
  const admin = pools.newPool()
  afterAll(pools.end)
  paymentBookContract(postgresSubject('PostgreSQL (pg Pool)', () => ({ client: pools.newPool(), close: async () => {} }), () => admin))
})

describe('PGlite', () => {
  // One instance (starting one takes seconds): every store on it is one more process on the same database.
  const db = new PGlite()
  beforeAll(() => db.waitReady, 60_000)
  afterAll(async () => {
    await db.close()
  })
  paymentBookContract(postgresSubject('PGlite', () => ({ client: db, close: async () => {} }), () => db))
})
