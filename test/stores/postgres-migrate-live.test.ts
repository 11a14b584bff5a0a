/**
 * migrate() on a live table: an app that migrates at every start (a rolling deploy, a fleet starting together)
 * meets other processes' transactional claims open while their handlers run. Every schema statement takes a lock
 * on its table even when what it makes is already there, so it would wait behind those transactions, and every
 * claim after it would queue behind it: the whole fleet held for as long as the slowest handler. Once the schema is
 * complete, migrate() has nothing to wait for.
 */
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { postgresStore } from '../../src/stores/postgres/store.js'
import { dropStoreTables, uniqueTable } from './postgres-suites.js'
import { DATABASE_URL, serviceAvailable } from './services.js'

const postgresAvailable = await serviceAvailable('PostgreSQL', DATABASE_URL)

describe.skipIf(!postgresAvailable)('migrate() while another process holds a transactional claim open', () => {
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 4 })
  const table = uniqueTable('migrate_live')
  afterAll(async () => {
    await dropStoreTables(pool, table)
    await pool.end()
  })

  it('returns at once, and a claim of the other process is answered meanwhile', async () => {
    const running = postgresStore({ client: pool, table, transactional: true })
    const request = { exchangeNumber: 'MIGRATE-LIVE-1', state: 'succeeded' as const, owner: 'a:1', leaseMs: 30_000, orderNumber: 'ORDER-1' }
    expect(await running.claim(request)).toMatchObject({ outcome: 'claimed' })
    try {
      const starting = postgresStore({ client: pool, table, transactional: true })
      const late = new Promise<string>((resolve) => setTimeout(() => resolve('still waiting after 3 s'), 3000).unref())
      expect(await Promise.race([starting.migrate().then(() => 'migrated'), late])).toBe('migrated')
      const other = { ...request, exchangeNumber: 'MIGRATE-LIVE-2', owner: 'b:1' }
      expect(await Promise.race([starting.claim(other).then((claim) => claim.outcome), late])).toBe('claimed')
      expect(await starting.release(other)).toBe(true)
    } finally {
      await running.release(request)
    }
  }, 20_000)
})
