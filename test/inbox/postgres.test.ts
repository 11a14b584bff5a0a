import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { createReceiver, memoryStore } from '../../src/index.js'
import { postgresStore } from '../../src/stores/postgres/store.js'
import { dropStoreTables, uniqueTable } from '../stores/postgres-suites.js'
import { DATABASE_URL, serviceAvailable } from '../stores/services.js'
import { inboxSuite, TOKEN } from './suite.js'

const available = await serviceAvailable('PostgreSQL', DATABASE_URL)

describe('inbox mode options', () => {
  it('refuses the memory store, which would lose what it acknowledged, and bad settings', async () => {
    expect(() => createReceiver({ checksumToken: TOKEN, inbox: {} })).toThrow(/inbox mode needs a durable store/)
    expect(() => createReceiver({ checksumToken: TOKEN, store: memoryStore(), inbox: {} })).toThrow(/memory store keeps nothing/)
    const pool = new pg.Pool({ connectionString: DATABASE_URL })
    const store = postgresStore({ client: pool })
    expect(() => createReceiver({ checksumToken: TOKEN, store, inbox: { maxAttempts: 0, work: false } })).toThrow(/maxAttempts/)
    expect(() => createReceiver({ checksumToken: TOKEN, store, inbox: { backoff: { baseMs: 100, maxMs: 10 }, work: false } })).toThrow(/maxMs/)
    expect(() => createReceiver({ checksumToken: TOKEN, store, inbox: { concurrency: 1.5, work: false } })).toThrow(/concurrency/)
    await pool.end()
  })

  it('says so when receiver.inbox is used without inbox mode', async () => {
    const receiver = createReceiver({ checksumToken: TOKEN })
    expect(() => receiver.inbox.work()).toThrow(/created without `inbox`/)
    expect(() => receiver.inbox.list()).toThrow(/created without `inbox`/)
    await expect(receiver.inbox.stop()).resolves.toBeUndefined()
  })
})

describe.skipIf(!available)('PostgreSQL inbox', () => {
  const pools: pg.Pool[] = []
  const tables = [uniqueTable('inbox'), uniqueTable('inbox_tx')]
  afterAll(async () => {
    const admin = new pg.Pool({ connectionString: DATABASE_URL, max: 1 })
    for (const table of tables) await dropStoreTables(admin, table)
    await admin.end()
    await Promise.all(pools.map((pool) => pool.end()))
  })
  // Each receiver's pool is ended with its test: kept to the end, they would hold PostgreSQL's 100 connections
  // against the other test files running at the same time.
  const newPool = () => {
    const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 4 })
    pool.on('error', () => {})
    pools.push(pool)
    const close = async () => {
      pools.splice(pools.indexOf(pool), 1)
      await pool.end()
    }
    return { pool, close }
  }

  inboxSuite({
    name: 'pg Pool',
    open: async () => {
      const { pool, close } = newPool()
      return { store: postgresStore({ client: pool, table: tables[0] }), close }
    },
  })
  inboxSuite({
    name: 'pg Pool, transactional',
    open: async () => {
      const { pool, close } = newPool()
      return { store: postgresStore({ client: pool, table: tables[1], transactional: true, lockTimeoutMs: 200 }), close }
    },
  })
})
