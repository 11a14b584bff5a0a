import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PGlite, type Transaction } from '@electric-sql/pglite'
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest'
import { createReceiver } from '../../src/index.js'
import { type PostgresStore, postgresStore } from '../../src/stores/postgres/store.js'
import { samplePaymentFields } from '../../src/testing.js'
import { storeContract } from './contract.js'
import { createOrders, deliver, Gate, ordersOf, pruneSuite, schemaSuite, TOKEN, transactionalSuite, transactionSeen, uniqueTable } from './postgres-suites.js'

// PGlite is the embedded PostgreSQL: no server to reach, so nothing here is ever skipped. Starting an instance
// takes seconds, so the in-memory suites share one, each on tables of its own.
const db = new PGlite()
// Not the first test's time: on a machine busy with the other test files, starting it can take half a minute.
beforeAll(() => db.waitReady, 60_000)
afterAll(async () => {
  await db.close()
})
const shared = async () => ({ client: db, close: async () => {} })

/** A store on a table of its own, and how many timeline rows that table holds under a key. */
function contractStore(part: string, options: { transactional?: boolean; retentionMs?: number }) {
  const table = uniqueTable(part)
  return {
    store: options.transactional === true ? postgresStore({ ...options, transactional: true, client: db, table }) : postgresStore({ ...options, transactional: false, client: db, table }),
    close: async () => {},
    keptTimeline: async (kind: 'exchange' | 'order', value: string) =>
      Number((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${table}_timeline" WHERE ${kind}_number = $1`, [value])).rows[0]?.n),
  }
}

storeContract({
  name: 'PGlite in memory',
  shared: true,
  open: async (options) => contractStore('contract', { ...options }),
})

storeContract({
  name: 'PGlite in memory, transactional',
  // One session for the whole process: a claim of a payment whose transaction this store holds open is answered
  // busy in this process, as in memory.
  shared: false,
  transactional: true,
  open: async (options) => contractStore('contract_tx', { transactional: true, ...options }),
})

schemaSuite('PGlite', shared)
pruneSuite('PGlite', shared)

describe('PGlite, transactional', () => {
  transactionalSuite({
    name: 'PGlite',
    open: async (table, options) => ({ store: postgresStore({ client: db, table, transactional: true, ...options }), close: async () => {} }),
    client: () => db,
  })

  it('types event.transaction as a PGlite Transaction, and gives the handler one at run time', async () => {
    const [transactional, plain] = [uniqueTable('types_tx'), uniqueTable('types')]
    const store = postgresStore({ client: db, table: transactional, transactional: true })
    const plainStore = postgresStore({ client: db, table: plain })
    expectTypeOf(store).toEqualTypeOf<PostgresStore<Transaction>>()
    expectTypeOf(plainStore).toEqualTypeOf<PostgresStore>()
    // What the types promise, at run time: the open transaction in transactional mode, nothing otherwise.
    const seen = await transactionSeen(store, db, transactional)
    expect([typeof seen?.query, typeof seen?.rollback]).toEqual(['function', 'function'])
    expect(await transactionSeen(plainStore, db, plain)).toBeUndefined()
  })

  it('has a concurrent duplicate wait for the first delivery, then answers it duplicate', async () => {
    const [table, orders] = [uniqueTable('dup'), uniqueTable('dup_orders')]
    await createOrders(db, orders)
    const gate = new Gate()
    let runs = 0
    // Two stores on one instance, as two receivers in one app would have: they share its one session.
    const receivers = [0, 1].map(() => {
      const receiver = createReceiver({ checksumToken: TOKEN, signatureOnly: true, store: postgresStore({ client: db, table, transactional: true }) })
      receiver.on('payment.succeeded', async (event) => {
        await event.transaction!.query(`INSERT INTO "${orders}" (exchange_number, state) VALUES ($1, $2)`, [event.payment.exchangeNumber, event.state])
        runs++
        await gate.pass()
      })
      return receiver
    })
    const fields = samplePaymentFields()
    const entered = gate.close()
    const first = deliver(receivers[0]!, fields)
    await entered
    const second = deliver(receivers[1]!, fields)
    gate.open()
    expect(await first).toMatchObject({ status: 200, outcome: 'processed' })
    expect(await second).toMatchObject({ status: 200, outcome: 'duplicate' })
    expect(runs).toBe(1)
    expect(await ordersOf(db, orders, fields.exchange_number)).toBe(1)
    for (const name of [table, orders]) await db.query(`DROP TABLE IF EXISTS "${name}", "${name}_inbox"`)
  })
})

describe('PGlite on disk', () => {
  let dataDir: string
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'fpx-collect-pglite-'))
  })
  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true })
  })

  it('remembers handled payments across a restart', async () => {
    const fields = samplePaymentFields()
    for (const expected of ['processed', 'duplicate']) {
      const db = new PGlite(dataDir)
      const receiver = createReceiver({ checksumToken: TOKEN, signatureOnly: true, store: postgresStore({ client: db, transactional: true }) })
      receiver.onAny(() => {})
      expect(await deliver(receiver, fields)).toMatchObject({ status: 200, outcome: expected })
      await db.close()
    }
  })
})
