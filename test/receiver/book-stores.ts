import { randomUUID } from 'node:crypto'
import { PGlite } from '@electric-sql/pglite'
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest'
import { Redis } from 'ioredis'
import pg from 'pg'
import type { Receiver, ReceiverStore } from '../../src/index.js'
import { memoryStore } from '../../src/index.js'
import { postgresStore } from '../../src/stores/postgres/store.js'
import { redisStore } from '../../src/stores/redis/store.js'
import { deleteRedisKeys } from '../../soak/resources.js'
import { dropStoreTables, uniqueTable } from '../stores/postgres-suites.js'
import { DATABASE_URL, REDIS_URL, serviceAvailable } from '../stores/services.js'
import { type Emulator, launch } from '../client/helpers.js'
import { type CallbackCapture, captureCallbacks } from './callback-capture.js'

/**
 * The stores with a payment book and a sweep lock that the payment-life tests run against. Each case makes a fresh,
 * empty store (its own table or key prefix), hands out more handles on the same data (what another process sees),
 * and removes everything when closed.
 */
export interface BookStoreCase {
  readonly name: string
  make(): Promise<OpenedBookStore>
}

export interface OpenedBookStore {
  readonly store: ReceiverStore<unknown>
  /** Another handle on the same store: another connection, as another process would have. */
  shared(): Promise<ReceiverStore<unknown>>
  close(): Promise<void>
}

const redis = await serviceAvailable('Redis', REDIS_URL)
const postgres = await serviceAvailable('PostgreSQL', DATABASE_URL)

let pglite: PGlite | undefined

export const BOOK_STORES: BookStoreCase[] = [
  {
    name: 'memory',
    async make() {
      const store = memoryStore() as ReceiverStore<unknown>
      return { store, shared: async () => store, close: async () => {} }
    },
  },
  ...(redis
    ? [
        {
          name: 'Redis',
          async make(): Promise<OpenedBookStore> {
            const prefix = `fpx-test:${randomUUID()}:`
            const clients: Redis[] = []
            const open = () => {
              const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
              clients.push(client)
              return redisStore({ client, prefix, inspect: false }) as ReceiverStore<unknown>
            }
            return {
              store: open(),
              shared: async () => open(),
              async close() {
                await deleteRedisKeys(clients[0] as Redis, prefix)
                await Promise.all(clients.map((client) => client.quit()))
              },
            }
          },
        },
      ]
    : []),
  ...(postgres
    ? [
        {
          name: 'PostgreSQL',
          async make(): Promise<OpenedBookStore> {
            const table = uniqueTable('book')
            const pools: pg.Pool[] = []
            const open = () => {
              const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 3, idleTimeoutMillis: 1_000 })
              pool.on('error', () => {})
              pools.push(pool)
              return postgresStore({ client: pool, table, pruneEvery: 0 }) as ReceiverStore<unknown>
            }
            return {
              store: open(),
              shared: async () => open(),
              async close() {
                await dropStoreTables(pools[0] as pg.Pool, table)
                await Promise.all(pools.map((pool) => pool.end()))
              },
            }
          },
        },
      ]
    : []),
  {
    name: 'PGlite',
    async make() {
      // One instance per test file (starting one takes seconds); every store on it is another process's view.
      pglite ??= new PGlite()
      const db = pglite
      await db.waitReady
      const table = uniqueTable('book')
      const open = () => postgresStore({ client: db, table, pruneEvery: 0 }) as ReceiverStore<unknown>
      return { store: open(), shared: async () => open(), close: () => dropStoreTables(db, table) }
    },
  },
]

/**
 * For one describe block: an emulator whose callbacks go once, without retries, to a capture that keeps them (the
 * genuine signed results a test then delivers as it likes). Read the fields once the block's tests run.
 */
export function emulatorWithCapture(): { readonly emulator: Emulator; readonly capture: CallbackCapture } {
  const services = {} as { emulator: Emulator; capture: CallbackCapture }
  beforeAll(async () => {
    services.capture = await captureCallbacks()
    services.emulator = await launch({ delivery: { attempts: 1, initialDelayMs: 1, maxDelayMs: 1, timeoutMs: 2000 } })
  })
  afterAll(async () => {
    await services.emulator.stop()
    await services.capture.close()
  })
  return services
}

/**
 * For the tests of one describe block: the emulator (with its capture) reset before each, a fresh store from `make`,
 * and, after each, every receiver the test put in `made` closed before the store is.
 */
export function freshBookStoreEachTest(make: BookStoreCase['make']): {
  readonly emulator: Emulator
  readonly capture: CallbackCapture
  readonly opened: OpenedBookStore
  readonly made: Receiver<unknown>[]
} {
  const services = emulatorWithCapture()
  const each = { opened: undefined as unknown as OpenedBookStore, made: [] as Receiver<unknown>[] }
  beforeEach(async () => {
    await services.emulator.control('/reset', {})
    each.opened = await make()
  })
  afterEach(async () => {
    await Promise.all(each.made.splice(0).map((receiver) => receiver.close()))
    await each.opened.close()
  })
  return {
    get emulator() {
      return services.emulator
    },
    get capture() {
      return services.capture
    },
    get opened() {
      return each.opened
    },
    made: each.made,
  }
}
