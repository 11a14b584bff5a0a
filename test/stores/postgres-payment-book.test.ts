import type pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { tableName } from '../../src/stores/postgres/sql.js'
import { postgresStore } from '../../src/stores/postgres/store.js'
import { bookTable } from '../../src/stores/postgres/payment-book-schema.js'
import { bookStatements } from '../../src/stores/postgres/payment-book-sql.js'
import { listStatement, overviewStatement } from '../../src/stores/postgres/book-query-sql.js'
import { type CheckedList, cursorAfter, listQuery } from '../../src/contract/book-query.js'
import type { BookedPayment } from '../../src/contract/payment-book.js'
import { createdPayment, ref } from './payment-book-fixtures.js'
import { dropStoreTables, rows, sleep, testPools, uniqueTable } from './postgres-suites.js'
import { DATABASE_URL, serviceAvailable } from './services.js'

/*
 * What only the PostgreSQL book does: one statement per operation, pruning with the store, the index the
 * sweeper's questions use, and the fence holding against a new holder's acquire that runs at the same moment.
 */

const available = await serviceAvailable('PostgreSQL', DATABASE_URL)
const MINUTE = 60_000

const payment = (orderNumber: string) => createdPayment({ orderNumber })

describe.skipIf(!available)('PostgreSQL payment book', () => {
  const pools = testPools()
  const newPool = pools.newPool
  const tables: string[] = []
  const admin = newPool()
  const newTable = (part: string) => {
    const table = uniqueTable(part)
    tables.push(table)
    return table
  }
  afterAll(async () => {
    for (const table of tables) await dropStoreTables(admin, table)
    await pools.end()
  })

  it('records, finds, settles, notes a lookup, lists and locks each in one statement once its tables exist', async () => {
    const sent: string[] = []
    const client = { query: (text: string, params?: unknown[]) => (sent.push(text), admin.query(text, params)) }
    const store = postgresStore({ client, table: newTable('statements'), pruneEvery: 0 })
    const [book, lock] = [store.paymentBook(), store.sweepLock()]
    await book.summary()
    const one = async (name: string, operation: () => Promise<unknown>) => {
      sent.length = 0
      await operation()
      expect([name, sent.length]).toEqual([name, 1])
    }
    await one('record', () => book.record(payment('A')))
    await one('find', () => book.find('A'))
    await one('find by uid', () => book.find('A', { uid: ref('A').uid }))
    await one('settle', () => book.settle(ref('A'), 'pending', 'EX-A'))
    const { token } = (await lock.acquire('sweeper', MINUTE))!
    await one('noteLookup', () => book.noteLookup(ref('A'), { at: new Date(), nextLookupAt: new Date() }, token))
    await one('listOpen', () => book.listOpen({ dueBy: new Date() }))
    await one('summary', () => book.summary())
    await one('acquire', () => lock.acquire('other', MINUTE))
    await one('renew', () => lock.renew('sweeper', token, MINUTE))
    await one('release', () => lock.release('sweeper', token))
    await one('list', () => book.list({ status: 'open', search: 'A', from: new Date(0), limit: 10 }))
    await one('overview', () => book.overview({ from: new Date(Date.now() - MINUTE), to: new Date() }))
    await one('notePass', () => lock.notePass({ at: new Date(), holder: 'sweeper', nextAt: null, lookups: 1, found: 0, closed: 0, failures: [] }))
    await one('status', () => lock.status())
    // A delivery: its claim and its completion one statement each, the result seen included; a duplicate one; a
    // release after a handler failure one.
    const seen = { uid: ref('B').uid, amountSen: 100, buyerEmail: 'b@example.com', buyerName: null }
    const lease = { exchangeNumber: 'EX-B', state: 'succeeded' as const, owner: 'o1', orderNumber: 'B', uid: ref('B').uid }
    await one('claim', () => store.claim({ ...lease, leaseMs: MINUTE }))
    await one('complete', () => store.complete({ ...lease, seen }))
    await one('duplicate claim', () => store.claim({ ...lease, owner: 'o2', leaseMs: MINUTE }))
    const failing = { ...lease, exchangeNumber: 'EX-C', orderNumber: 'C', owner: 'o3' }
    await store.claim({ ...failing, leaseMs: MINUTE })
    await one('release after a failure', () => store.release({ ...failing, failure: { message: 'handler threw', seen } }))
    expect(await book.find('B')).toMatchObject({ kind: 'result', status: 'succeeded' })
    expect(await book.find('C')).toMatchObject({ kind: 'result', failures: 1 })
  })

  it('counts a handler failure after a transactional release rolled the claim back', async () => {
    const table = newTable('tx_failure')
    const store = postgresStore({ client: newPool(), table, transactional: true, pruneEvery: 0 })
    const book = store.paymentBook()
    await book.record(payment('T'))
    const lease = { exchangeNumber: 'EX-T', state: 'succeeded' as const, owner: 'o1', orderNumber: 'T', uid: ref('T').uid }
    const claim = await store.claim({ ...lease, leaseMs: MINUTE })
    expect(claim.outcome).toBe('claimed')
    if (claim.outcome !== 'claimed') return
    // The handler's write, rolled back with the claim; the failure is counted all the same.
    await (claim.transaction as pg.PoolClient).query(`UPDATE "${table}_book" SET attached = '{"written":true}' WHERE order_number = 'T'`)
    expect(await store.release({ ...lease, failure: { message: 'handler threw' } })).toBe(true)
    expect(await book.find('T')).toMatchObject({ failures: 1, lastFailure: { state: 'succeeded', message: 'handler threw' }, attached: payment('T').attached })
    expect(await store.release({ ...lease, failure: { message: 'again' } })).toBe(false)
    expect(await book.find('T')).toMatchObject({ failures: 1 })
  })

  it('answers the operator’s questions from the book’s indexes', async () => {
    const table = newTable('plan_list')
    const store = postgresStore({ client: admin, table, pruneEvery: 0 })
    await store.migrate()
    const t = bookTable(tableName(table))
    const cursor = cursorAfter({ createdAt: new Date(), orderNumber: 'A', uid: 'u' } as BookedPayment)
    const shapes: [string, CheckedList][] = [
      ['new', listQuery({ cursor })],
      ['st', listQuery({ status: 'succeeded', from: new Date(Date.now() - MINUTE), to: new Date() })],
      ['open', listQuery({ status: 'open', cursor })],
      ['fail', listQuery({ status: 'paid_failing' })],
      ['mail', listQuery({ search: 'a@b.test' })],
    ]
    const connection = await admin.connect()
    try {
      await connection.query('BEGIN; SET LOCAL enable_seqscan = off')
      for (const [index, query] of shapes) {
        const { text, params } = listStatement(t, query)
        const plan = (await connection.query(`EXPLAIN ${text}`, params)).rows.map((row: { 'QUERY PLAN': string }) => row['QUERY PLAN']).join('\n')
        expect([index, plan]).toEqual([index, expect.stringContaining(`${table}_book_${index}_idx`)])
        if (index === 'mail') expect(plan).toContain(`${table}_book_ex_idx`)
      }
      const overview = (await connection.query(`EXPLAIN ${overviewStatement(t)}`, [0, Date.now(), 0, 0, 0])).rows.map((row: { 'QUERY PLAN': string }) => row['QUERY PLAN']).join('\n')
      for (const index of ['set', 'fail', 'open']) expect(overview).toContain(`${table}_book_${index}_idx`)
    } finally {
      await connection.query('ROLLBACK')
      connection.release()
    }
  })

  it('prunes closed payments past retention with the store, and never an open one', async () => {
    const table = newTable('prune')
    const store = postgresStore({ client: admin, table, retentionMs: 50, pruneEvery: 0 })
    const book = store.paymentBook()
    for (const order of ['open', 'paid', 'failed']) await book.record(payment(order))
    await book.settle(ref('paid'), 'succeeded', 'EX-P')
    await book.settle(ref('failed'), 'failed', 'EX-F')
    await sleep(120)
    expect(await store.prune()).toBe(0)
    const left = await rows<{ order_number: string }>(admin, `SELECT order_number FROM "${table}_book" ORDER BY 1`)
    expect(left.map((row) => row.order_number)).toEqual(['open'])
  })

  it('answers the sweeper’s questions from the open payments’ index', async () => {
    const table = newTable('plan')
    const store = postgresStore({ client: admin, table, pruneEvery: 0 })
    await store.migrate()
    const sql = bookStatements(bookTable(tableName(table)))
    const connection = await admin.connect()
    try {
      await connection.query('BEGIN; SET LOCAL enable_seqscan = off')
      for (const [text, params] of [
        [sql.listDue, [Date.now(), 100]],
        [sql.listOpen, [100]],
        [sql.summary, []],
      ] as const) {
        const plan = await connection.query(`EXPLAIN ${text}`, [...params])
        expect(plan.rows.map((row: { 'QUERY PLAN': string }) => row['QUERY PLAN']).join('\n')).toContain(`${table}_book_open_idx`)
      }
    } finally {
      await connection.query('ROLLBACK')
      connection.release()
    }
  })

  /** A book whose payment A had one lookup noted by holder `a`, whose lease then ran out. */
  async function expiredHolder(part: string) {
    const table = newTable(part)
    const store = postgresStore({ client: newPool(), table })
    await store.paymentBook().record(payment('A'))
    const old = (await store.sweepLock().acquire('a', 50))!
    await sleep(100)
    return { table, book: store.paymentBook(), old, sql: bookStatements(bookTable(tableName(table))) }
  }

  /**
   * Runs `statement` in a transaction left open while `meanwhile` starts, checks that `meanwhile` waits for it,
   * then commits and returns what `meanwhile` answered.
   */
  async function waitsFor<T>(statement: (connection: pg.PoolClient) => Promise<void>, meanwhile: () => Promise<T>): Promise<T> {
    const connection = await admin.connect()
    try {
      await connection.query('BEGIN')
      await statement(connection)
      let settled = false
      const answer = meanwhile().finally(() => (settled = true))
      await sleep(300)
      expect(settled).toBe(false)
      await connection.query('COMMIT')
      return await answer
    } finally {
      connection.release()
    }
  }

  it('fences with the lock row: an acquire waits for a lookup being written under the old token, then refuses it', async () => {
    const { table, book, old, sql } = await expiredHolder('fence')
    const successor = postgresStore({ client: newPool(), table }).sweepLock()
    // The old holder's lookup, caught mid-statement: in a transaction that has not committed yet.
    const noteUncommitted = async (connection: pg.PoolClient) => {
      const noted = await connection.query(sql.noteLookup, ['A', old.token, Date.now(), Date.now() + MINUTE, false, MINUTE, ref('A').uid])
      expect(noted.rows).toHaveLength(1)
    }
    const acquired = await waitsFor(noteUncommitted, () => successor.acquire('b', MINUTE))
    expect(acquired?.token).toBeGreaterThan(old.token)
    expect(await book.noteLookup(ref('A'), { at: new Date(), nextLookupAt: new Date() }, old.token)).toBe(false)
    expect(await book.find('A')).toMatchObject({ lookups: 1 })
  })

  it('fences with the lock row: a lookup under the old token waits for an acquire in flight, then is refused', async () => {
    const { book, old, sql } = await expiredHolder('fence_acquire')
    const acquireUncommitted = async (connection: pg.PoolClient) => {
      const taken = await connection.query(sql.acquire, ['b', MINUTE])
      expect(Number(taken.rows[0].token)).toBeGreaterThan(old.token)
    }
    const noted = await waitsFor(acquireUncommitted, () => book.noteLookup(ref('A'), { at: new Date(), nextLookupAt: new Date() }, old.token))
    expect(noted).toBe(false)
    expect(await book.find('A')).toMatchObject({ lookups: 0 })
  })
})
