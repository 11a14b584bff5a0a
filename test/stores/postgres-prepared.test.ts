import { randomUUID } from 'node:crypto'
import { PGlite } from '@electric-sql/pglite'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { literal } from '../../src/stores/postgres/prepared.js'
import { postgresStore } from '../../src/stores/postgres/store.js'
import { dropStoreTables, uniqueTable } from './postgres-suites.js'
import { DATABASE_URL, serviceAvailable } from './services.js'

const available = await serviceAvailable('PostgreSQL', DATABASE_URL)

const lease = (exchangeNumber: string) => ({ exchangeNumber, state: 'succeeded', owner: randomUUID() }) as const

describe.skipIf(!available)('PostgreSQL store on pg: named prepared statements', () => {
  // One connection, so the session that ran the store's statements is the one asked about them.
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 1 })
  const tables = [uniqueTable('prep_a'), uniqueTable('prep_b')]
  afterAll(async () => {
    for (const table of tables) await dropStoreTables(pool, table)
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

describe('PostgreSQL store on PGlite: SQL PREPARE, then EXECUTE with literals', () => {
  const prepared = async (db: PGlite) =>
    (await db.query<{ statement: string }>(`SELECT statement FROM pg_prepared_statements WHERE name LIKE 'fpx_collect_%'`)).rows.map((row) => row.statement)

  it('prepares once per instance, shared by its stores, and prepares again after the session lost them', async () => {
    const db = await PGlite.create()
    try {
      const plain = postgresStore({ client: db })
      const again = postgresStore({ client: db })
      const transactional = postgresStore({ client: db, table: 'fpx_tx', transactional: true })
      for (const store of [plain, again, transactional, plain, again, transactional]) {
        const ref = lease(`EX${randomUUID()}`)
        expect((await store.claim({ ...ref, leaseMs: 30_000 })).outcome).toBe('claimed')
        expect(await store.complete(ref)).toBe(true)
        expect(await store.claim({ ...ref, owner: randomUUID(), leaseMs: 30_000 })).toEqual({ outcome: 'duplicate' })
      }
      const statements = await prepared(db)
      // Claim, inspect, complete and release, per table (a pool transaction's own claim is not used here): the
      // three stores agree on the names (a name per store would make two sets for fpx_collect).
      expect(statements.filter((text) => text.includes('"fpx_collect"'))).toHaveLength(4)
      expect(statements.filter((text) => text.includes('"fpx_tx"'))).toHaveLength(4)
      expect(statements.some((text) => text.includes('set_config'))).toBe(false)

      await db.query('DEALLOCATE ALL')
      for (const store of [plain, transactional]) {
        const ref = lease(`EX${randomUUID()}`)
        // Outside a transaction the lost statement is prepared again at once; inside one, the delivery fails
        // (and is redelivered) and the next finds it prepared again.
        const claimed = await store.claim({ ...ref, leaseMs: 30_000 }).catch((error: unknown) => error)
        if (store === transactional) {
          expect(claimed).toMatchObject({ code: '26000' })
          expect((await store.claim({ ...ref, leaseMs: 30_000 })).outcome).toBe('claimed')
        } else expect(claimed).toMatchObject({ outcome: 'claimed' })
        expect(await store.complete(ref)).toBe(true)
      }
      expect(await prepared(db)).toHaveLength(8)
    } finally {
      await db.close()
    }
  })

  it('writes values with quotes, backslashes and dollar signs as they are, whatever standard_conforming_strings says', async () => {
    const db = await PGlite.create()
    try {
      const store = postgresStore({ client: db })
      const values = [`EX'); DROP TABLE fpx_collect; --\\'`, '$fpx$); DROP TABLE fpx_collect; --', '$fpx', '$', 'tail $fpx$$fpxx']
      for (const conforming of ['on', 'off'])
        for (const [index, value] of values.entries()) {
          await db.query(`SET standard_conforming_strings = ${conforming}`)
          const exchangeNumber = `${value} ${conforming}`
          const ref = { ...lease(exchangeNumber), owner: `o\\'wn''er\\ ${values[values.length - 1 - index]}` }
          expect((await store.claim({ ...ref, leaseMs: 30_000 })).outcome).toBe('claimed')
          const { rows } = await db.query<{ exchange_number: string; lease_owner: string }>(
            'SELECT exchange_number, lease_owner FROM fpx_collect WHERE exchange_number = $1',
            [exchangeNumber],
          )
          expect(rows).toEqual([{ exchange_number: exchangeNumber, lease_owner: ref.owner }])
          expect(await store.complete(ref)).toBe(true)
        }
    } finally {
      await db.close()
    }
  })

  it('writes a literal no value can end early', () => {
    for (const value of ['', '$', '$fpx', '$fpx$', 'a$fpx$b$fpxx$', "it's \\"]) {
      const written = literal(value)!
      const tag = /^\$[a-z]*\$/.exec(written)![0]
      expect(written.endsWith(tag)).toBe(true)
      // Where PostgreSQL ends the string: the first closing tag after the opening one.
      expect(written.indexOf(tag, tag.length)).toBe(written.length - tag.length)
      expect(written.slice(tag.length, -tag.length)).toBe(value)
    }
    expect(literal(-1.5)).toBe('-1.5')
    expect(literal(null)).toBe('NULL')
    expect(literal(Number.NaN)).toBeUndefined()
    expect(literal({})).toBeUndefined()
  })
})
