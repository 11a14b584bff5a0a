import { randomUUID } from 'node:crypto'
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
    expect(() => createReceiver({ checksumToken: TOKEN, signatureOnly: true, inbox: {} })).toThrow(/inbox mode needs a durable store/)
    expect(() => createReceiver({ checksumToken: TOKEN, signatureOnly: true, store: memoryStore(), inbox: {} })).toThrow(/memory store keeps nothing/)
    const pool = new pg.Pool({ connectionString: DATABASE_URL })
    const store = postgresStore({ client: pool })
    expect(() => createReceiver({ checksumToken: TOKEN, signatureOnly: true, store, inbox: { maxAttempts: 0, work: false } })).toThrow(/maxAttempts/)
    expect(() => createReceiver({ checksumToken: TOKEN, signatureOnly: true, store, inbox: { backoff: { baseMs: 100, maxMs: 10 }, work: false } })).toThrow(/maxMs/)
    expect(() => createReceiver({ checksumToken: TOKEN, signatureOnly: true, store, inbox: { concurrency: 1.5, work: false } })).toThrow(/concurrency/)
    await pool.end()
  })

  it('says so when receiver.inbox is used without inbox mode', async () => {
    const receiver = createReceiver({ checksumToken: TOKEN, signatureOnly: true })
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

  it('retries one (exchange_number, state) when pending or dead, and leaves it alone while a worker holds it', async () => {
    const { pool, close } = newPool()
    try {
      const queue = postgresStore({ client: pool, table: tables[0] }).openInbox()
      const entry = (exchangeNumber: string) =>
        ({ exchangeNumber, state: 'succeeded', source: 'callback', orderNumber: null, fields: '{}', rendering: 'plain' }) as const
      const [pending, dead, leased] = [`EX-${randomUUID()}`, `EX-${randomUUID()}`, `EX-${randomUUID()}`]
      for (const ex of [pending, dead, leased]) expect(await queue.enqueue(entry(ex))).toBe('queued')
      const owner = `test-${randomUUID()}`
      const taken = (await queue.take(owner, 100, 60_000)).filter((item) => [pending, dead, leased].includes(item.exchangeNumber))
      expect(taken).toHaveLength(3)
      for (const item of taken) {
        if (item.exchangeNumber === pending) await queue.fail(item, { error: 'x', delayMs: 60_000, dead: false })
        if (item.exchangeNumber === dead) await queue.fail(item, { error: 'x', delayMs: 0, dead: true })
      }
      const one = (exchangeNumber: string) => queue.retry({ exchangeNumber, state: 'succeeded' })
      expect([await one(pending), await one(dead), await one(leased)]).toEqual([1, 1, 0])
      const [waiting, revived, held] = (await Promise.all([pending, dead, leased].map((ex) => queue.show(ex)))).map((items) => items[0])
      expect(waiting).toMatchObject({ status: 'pending', attempts: 1 })
      expect(waiting?.nextAttemptAt?.getTime()).toBeLessThanOrEqual(Date.now() + 1000)
      expect(revived).toMatchObject({ status: 'pending', attempts: 0 })
      expect(held?.leasedUntil).not.toBeNull()
      // Emptied again, so that no worker of the suite below finds them.
      for (const item of taken.filter((item) => item.exchangeNumber === leased)) await queue.finish(item)
      for (const item of await queue.take(owner, 100, 60_000)) if ([pending, dead].includes(item.exchangeNumber)) await queue.finish(item)
      expect((await Promise.all([pending, dead, leased].map((ex) => queue.show(ex)))).flat()).toEqual([])
    } finally {
      await close()
    }
  })

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
