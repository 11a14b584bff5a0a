import { randomUUID } from 'node:crypto'
import { PGlite } from '@electric-sql/pglite'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { postgresStore } from '../../src/stores/postgres/store.js'
import { uniqueTable } from './postgres-suites.js'
import { DATABASE_URL, serviceAvailable } from './services.js'

const available = await serviceAvailable('PostgreSQL', DATABASE_URL)

const lease = (exchangeNumber: string) => ({ exchangeNumber, state: 'succeeded', owner: randomUUID() }) as const

describe.skipIf(!available)('PostgreSQL store on pg: named prepared statements', () => {
  // One connection, so the session that ran the store's statements is the one asked about them.
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 1 })
  const tables = [uniqueTable('prep_a'), uniqueTable('prep_b')]
  afterAll(async () => {
    for (const table of tables) await pool.query(`DROP TABLE IF EXISTS "${table}", "${table}_inbox"`)
    await pool.end()
  })

  it('prepares claim and complete once per connection, with distinct names per table, in both modes', async () => {
    const plain = postgresStore({ client: pool, table: tables[0]! })
    const transactional = postgresStore({ client: pool, table: tables[1]!, transactional: true })
    for (const store of [plain, transactional, plain, transactional]) {
      const ref = lease(`EX${randomUUID()}`)
      expect((await store.claim({ ...ref, leaseMs: 30_000 })).outcome).toBe('claimed')
      expect(await store.complete(ref)).toBe(true)
    }
    const duplicate = lease(`EX${randomUUID()}`)
    await plain.claim({ ...duplicate, leaseMs: 30_000 })
    await plain.complete(duplicate)
    // A duplicate runs the claim, then inspect, both prepared.
    expect(await plain.claim({ ...duplicate, owner: randomUUID(), leaseMs: 30_000 })).toEqual({ outcome: 'duplicate' })

    const { rows } = await pool.query<{ name: string; statement: string }>(
      `SELECT name, statement FROM pg_prepared_statements WHERE name LIKE 'fpx_collect_%'`,
    )
    const of = (table: string, start: string) => rows.filter((row) => row.statement.includes(`"${table}"`) && row.statement.trimStart().startsWith(start))
    expect(of(tables[0]!, 'INSERT')).toHaveLength(1)
    // The transactional claim resets lock_timeout in the same statement: WITH claimed AS (INSERT …) SELECT ….
    expect(of(tables[1]!, 'WITH claimed AS (\nINSERT')).toHaveLength(1)
    for (const table of tables) expect(of(table, 'UPDATE')).toHaveLength(1)
    expect(of(tables[0]!, 'SELECT')).toHaveLength(1)
    expect(new Set(rows.map((row) => row.name)).size).toBe(rows.length)
  })
})

describe('PostgreSQL store on PGlite: plain text queries', () => {
  it('claims and completes (PGlite takes no statement names)', async () => {
    const db = await PGlite.create()
    try {
      const store = postgresStore({ client: db })
      const ref = lease('EX0000000001')
      expect((await store.claim({ ...ref, leaseMs: 30_000 })).outcome).toBe('claimed')
      expect(await store.complete(ref)).toBe(true)
      const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_prepared_statements`)
      expect(rows[0]!.n).toBe(0)
    } finally {
      await db.close()
    }
  })
})
