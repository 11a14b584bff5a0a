import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, expectTypeOf, it, vi } from 'vitest'
import { createReceiver, type Receiver } from '../../src/index.js'
import { type PostgresQueryable, type PostgresStore, postgresStore } from '../../src/stores/postgres/store.js'
import { samplePaymentFields } from '../../src/testing.js'
import { storeContract } from './contract.js'
import {
  createOrders,
  deliver,
  dropStoreTables,
  Gate,
  ordersOf,
  pruneSuite,
  rows,
  schemaSuite,
  type StoreTweaks,
  TOKEN,
  transactionalSuite,
  transactionSeen,
  uniqueTable,
} from './postgres-suites.js'
import { DATABASE_URL, serviceAvailable } from './services.js'
import { completedState } from '../../src/contract/lease-ends.js'

const available = await serviceAvailable('PostgreSQL', DATABASE_URL)
// Short, so the contract's busy cases do not each wait the default 2 s on the claimed row.
const LOCK_TIMEOUT_MS = 500

describe('postgresStore options', () => {
  it('refuses clients it cannot drive, unsafe table names and invalid durations', async () => {
    const client = new pg.Client({ connectionString: DATABASE_URL })
    expect(() => postgresStore({ client: {} as PostgresQueryable })).toThrow(/query\(text, params\)/)
    // @ts-expect-error a single Client cannot keep a transaction open per delivery, and the types say so too
    expect(() => postgresStore({ client, transactional: true })).toThrow(/needs a pg Pool .* or a PGlite instance/)
    for (const table of ['orders; DROP TABLE users', 'a.b.c', '"quoted"', '', 'x'.repeat(60)])
      expect(() => postgresStore({ client, table })).toThrow(/table must be/)
    expect(() => postgresStore({ client, leaseMs: 0 })).toThrow(/leaseMs/)
    expect(() => postgresStore({ client, retentionMs: 1.5 })).toThrow(/retentionMs/)
    expect(() => postgresStore({ client, lockTimeoutMs: -1 })).toThrow(/lockTimeoutMs/)
    expect(() => postgresStore({ client, pruneEvery: -1 })).toThrow(/pruneEvery/)
    expect(() => postgresStore({ client, table: 'billing.fpx_payments', pruneEvery: 0 })).not.toThrow()
  })

})

describe.skipIf(!available)('PostgreSQL store', () => {
  const contractTable = uniqueTable('contract')
  // Marks this run's connections, so that the end can close those a test left inside a transaction.
  const application = `fpx-collect-test-${randomUUID()}`
  const pools: pg.Pool[] = []
  /** A pool of its own, as another process would have; ended after the file. Small: the server is shared. */
  function newPool(max = 5): pg.Pool {
    const pool = new pg.Pool({ connectionString: DATABASE_URL, max, idleTimeoutMillis: 1_000, application_name: application })
    // Idle connections closed by the server at the end (or by the connection-drop test) are the pool's to report.
    pool.on('error', () => {})
    pools.push(pool)
    return pool
  }
  const admin = () => pools[0]!
  beforeAll(() => {
    newPool(3)
  })
  afterAll(async () => {
    // The contract leaves a claim or two open; in transactional mode, their transactions hold the table.
    const others = 'SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()'
    await admin().query(others, [application])
    await dropStoreTables(admin(), contractTable)
    await Promise.all(pools.map((pool) => pool.end()))
  })

  it('types event.transaction as a PoolClient in transactional mode, and leaves it undefined otherwise', async () => {
    const [transactional, plain] = [uniqueTable('types_tx'), uniqueTable('types')]
    const store = postgresStore({ client: newPool(2), table: transactional, transactional: true })
    const plainStore = postgresStore({ client: admin(), table: plain })
    expectTypeOf(store).toEqualTypeOf<PostgresStore<pg.PoolClient>>()
    expectTypeOf(plainStore).toEqualTypeOf<PostgresStore>()
    expectTypeOf(postgresStore({ client: new pg.Client() })).toEqualTypeOf<PostgresStore>()
    // What the types promise, at run time: the pool's client holding the transaction, nothing otherwise.
    const seen = await transactionSeen(store, admin(), transactional)
    expect(seen).toBeInstanceOf(pg.Client)
    expect(typeof seen?.release).toBe('function')
    expect(await transactionSeen(plainStore, admin(), plain)).toBeUndefined()
  })

  /** The rows the contract's timeline holds under a key, past the read limit. */
  const keptTimeline = async (kind: 'exchange' | 'order', value: string) =>
    Number((await rows<{ n: number }>(admin(), `SELECT count(*)::int AS n FROM "${contractTable}_timeline" WHERE ${kind}_number = $1`, [value]))[0]?.n)
  storeContract({
    name: 'postgres via a pg Pool',
    shared: true,
    open: async (options) => ({ store: postgresStore({ client: newPool(), table: contractTable, ...options }), close: async () => {}, keptTimeline }),
  })
  storeContract({
    name: 'postgres via a pg Client',
    shared: true,
    open: async (options) => {
      const client = new pg.Client({ connectionString: DATABASE_URL })
      await client.connect()
      return { store: postgresStore({ client, table: contractTable, ...options }), close: () => client.end(), keptTimeline }
    },
  })
  storeContract({
    name: 'postgres via a pg Pool, transactional',
    shared: true,
    transactional: true,
    open: async (options) => ({
      store: postgresStore({ client: newPool(10), table: contractTable, transactional: true, lockTimeoutMs: LOCK_TIMEOUT_MS, ...options }),
      close: async () => {},
      keptTimeline,
    }),
  })

  const connect = async () => ({ client: newPool() as PostgresQueryable, close: async () => {} })
  schemaSuite('postgres', connect)
  pruneSuite('postgres', connect)
  let suitePool: pg.Pool | undefined
  transactionalSuite({
    name: 'postgres via a pg Pool',
    open: async (table, options) => ({
      store: postgresStore({ client: (suitePool ??= newPool()), table, transactional: true, lockTimeoutMs: LOCK_TIMEOUT_MS, ...options }),
      close: async () => {},
    }),
    client: admin,
  })

  it('hands the handlers a transaction whose lock_timeout is back at its default, not the claim\'s lockTimeoutMs', async () => {
    // The default is the connection's (here from its startup options), as SET LOCAL ... TO DEFAULT restores it: a
    // session-level SET made on the connection does not count.
    const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 2, application_name: application, options: '-c lock_timeout=7s' })
    pool.on('error', () => {})
    pool.on('connect', (connection) => void connection.query("SET lock_timeout = '3s'"))
    pools.push(pool)
    const table = uniqueTable('lock_timeout')
    try {
      const store = postgresStore({ client: pool, table, transactional: true, lockTimeoutMs: LOCK_TIMEOUT_MS })
      for (const state of ['pending', 'succeeded'] as const) {
        const lease = { exchangeNumber: 'EX0000000001', state, owner: state }
        const claim = await store.claim({ ...lease, leaseMs: 30_000 })
        expect(claim).toMatchObject({ outcome: 'claimed', previousState: state === 'pending' ? null : 'pending' })
        const tx = (claim as { transaction: pg.PoolClient }).transaction
        expect((await tx.query('SHOW lock_timeout')).rows).toEqual([{ lock_timeout: '7s' }])
        expect(await store.complete(lease)).toBe(true)
      }
    } finally {
      await dropStoreTables(admin(), table)
    }
  })

  describe('awaitLeaseEnd: a delivery waits for the holder on another pool, without asking again and again', () => {
    const LONG = 60_000
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
    const ended = (waiting: Promise<unknown>) => Promise.race([waiting.then(() => 'ended'), sleep(10_000).then(() => 'still waiting')])
    const lease = (exchangeNumber = `EX${randomUUID().slice(0, 8)}`, owner = randomUUID()) => ({ exchangeNumber, state: 'succeeded' as const, owner })
    const tables: string[] = []
    const pairOn = (label: string) => {
      const table = uniqueTable(label)
      tables.push(table)
      // Each on a pool of its own, as in two processes.
      return [postgresStore({ client: newPool(3), table }), postgresStore({ client: newPool(3), table })] as const
    }
    afterAll(async () => {
      for (const table of tables) await dropStoreTables(admin(), table)
    })

    it('ends the wait when the holder completes, and when it releases', async () => {
      const [holder, waiter] = pairOn('wait_ends')
      // Twice each: the first wait opens the listening connection; the second finds it listening before its claim.
      for (const end of ['complete', 'release', 'complete', 'release'] as const) {
        const held = lease()
        expect((await holder.claim({ ...held, leaseMs: LONG })).outcome).toBe('claimed')
        expect((await waiter.claim({ ...lease(held.exchangeNumber), leaseMs: LONG })).outcome).toBe('busy')
        let done = false
        const waiting = waiter.awaitLeaseEnd!(held.exchangeNumber, LONG)
        void waiting.then(() => void (done = true))
        await sleep(200)
        expect(done).toBe(false)
        expect(await holder[end](held)).toBe(true)
        expect(await ended(waiting)).toBe('ended')
        // A completion by the holder the busy claim found names its state: no need to claim again for that state.
        expect(completedState(await waiting)).toBe(end === 'complete' ? held.state : undefined)
        expect((await waiter.claim({ ...lease(held.exchangeNumber), leaseMs: LONG })).outcome).toBe(end === 'complete' ? 'duplicate' : 'claimed')
      }
    })

    it("only wakes on a completion of the same table and payment by an owner its busy claim never found", async () => {
      const [holder, waiter] = pairOn('wait_owner')
      const table = tables.at(-1) as string
      const held = lease()
      await holder.claim({ ...held, leaseMs: LONG })
      expect((await waiter.claim({ ...lease(held.exchangeNumber), leaseMs: LONG })).outcome).toBe('busy')
      const waiting = waiter.awaitLeaseEnd!(held.exchangeNumber, LONG)
      await sleep(200)
      // As a store of another schema with a table of the same name would announce it (the table is named unqualified).
      await admin().query(`SELECT pg_notify('fpx_collect_lease_ends', json_build_object('t', $1::text, 'x', $2::text, 'o', $3::text, 's', 'succeeded')::text)`, [
        `"${table}"`,
        held.exchangeNumber,
        randomUUID(),
      ])
      expect(await ended(waiting)).toBe('ended')
      expect(completedState(await waiting)).toBeUndefined()
      expect((await waiter.claim({ ...lease(held.exchangeNumber), leaseMs: LONG })).outcome).toBe('busy')
      expect(await holder.release(held)).toBe(true)
    })

    it('returns at once for a payment nobody holds, and hears only its own table', async () => {
      const [holder, waiter] = pairOn('wait_table')
      const [elsewhere] = pairOn('wait_other')
      expect(await ended(waiter.awaitLeaseEnd!(lease().exchangeNumber, LONG))).toBe('ended')
      const held = lease()
      await holder.claim({ ...held, leaseMs: LONG })
      await elsewhere.claim({ ...held, leaseMs: LONG })
      let done = false
      const waiting = waiter.awaitLeaseEnd!(held.exchangeNumber, LONG)
      void waiting.then(() => void (done = true))
      await sleep(200)
      // The same exchange_number completed in another store's table: not this wait's lease.
      expect(await elsewhere.complete(held)).toBe(true)
      await sleep(300)
      expect(done).toBe(false)
      expect(await holder.release(held)).toBe(true)
      expect(await ended(waiting)).toBe('ended')
    })

    it('is offered with a pg Pool only, and not in transactional mode (its claim waits for the row)', () => {
      expect(postgresStore({ client: new pg.Client({ connectionString: DATABASE_URL }) }).awaitLeaseEnd).toBeUndefined()
      expect(postgresStore({ client: admin(), transactional: true }).awaitLeaseEnd).toBeUndefined()
      expect(postgresStore({ client: admin() }).awaitLeaseEnd).toBeTypeOf('function')
      // The listening connection would leave a pool of one nothing for the store's own statements.
      const single = new pg.Pool({ connectionString: DATABASE_URL, max: 1 })
      expect(postgresStore({ client: single }).awaitLeaseEnd).toBeUndefined()
      void single.end()
    })

    it('lets a receiver on another pool answer the duplicate 200 once the first finished', async () => {
      const table = uniqueTable('wait_receivers')
      tables.push(table)
      const gate = new Gate()
      let runs = 0
      const receivers = [newPool(3), newPool(3)].map((pool) => {
        const receiver = createReceiver({ checksumToken: TOKEN, signatureOnly: true, store: postgresStore({ client: pool, table }), logger: false })
        receiver.on('payment.succeeded', async () => {
          runs++
          await gate.pass()
        })
        return receiver
      }) as [Receiver, Receiver]
      const fields = samplePaymentFields()
      const entered = gate.close()
      const slow = deliver(receivers[0], fields)
      await entered
      const waiting = deliver(receivers[1], fields)
      await sleep(300)
      gate.open()
      expect(await slow).toMatchObject({ status: 200, outcome: 'processed' })
      expect(await waiting).toMatchObject({ status: 200, outcome: 'duplicate' })
      expect(runs).toBe(1)
    })
  })

  describe('transactional receivers on separate pools, as separate processes', () => {
    const [table, orders] = [uniqueTable('procs'), uniqueTable('procs_orders')]
    let processPools: [pg.Pool, pg.Pool]
    beforeAll(async () => {
      processPools = [newPool(), newPool()]
      await createOrders(admin(), orders)
    })
    afterAll(async () => {
      await dropStoreTables(admin(), table)
      await admin().query(`DROP TABLE IF EXISTS "${orders}"`)
    })

    /** Two receivers, each on a pool and store of its own; handler runs are counted outside both. */
    function pair(options: StoreTweaks = {}) {
      const runs = new Map<string, number>()
      const gate = new Gate()
      const receivers = processPools.map((pool) => {
        const store = postgresStore({ client: pool, table, transactional: true, lockTimeoutMs: LOCK_TIMEOUT_MS, ...options })
        const receiver = createReceiver({ checksumToken: TOKEN, signatureOnly: true, store })
        receiver.on('payment.succeeded', async (event) => {
          const exchangeNumber = event.payment.exchangeNumber
          await event.transaction!.query(`INSERT INTO "${orders}" (exchange_number, state) VALUES ($1, $2)`, [exchangeNumber, event.state])
          runs.set(exchangeNumber, (runs.get(exchangeNumber) ?? 0) + 1)
          await gate.pass()
        })
        return receiver
      })
      return { receivers: receivers as [Receiver<pg.PoolClient>, Receiver<pg.PoolClient>], runs, gate }
    }

    it('answers 409 with Retry-After while the other runs the handler, then duplicate once it committed', async () => {
      const { receivers, runs, gate } = pair()
      const [first, second] = receivers
      const fields = samplePaymentFields()
      const entered = gate.close()
      const slow = deliver(first, fields)
      await entered
      const busy = await deliver(second, fields)
      expect(busy).toMatchObject({ status: 409, outcome: 'busy', error: { code: 'in_progress' } })
      expect(Number(busy.headers['retry-after'])).toBeGreaterThanOrEqual(1)
      gate.open()
      expect(await slow).toMatchObject({ status: 200, outcome: 'processed' })
      expect(await deliver(second, fields)).toMatchObject({ status: 200, outcome: 'duplicate' })
      expect(runs.get(String(fields.exchange_number))).toBe(1)
      expect(await ordersOf(admin(), orders, fields.exchange_number)).toBe(1)
    })

    it('lets a duplicate waiting on the claimed row answer duplicate when the first commits', async () => {
      const { receivers, runs, gate } = pair({ lockTimeoutMs: 30_000 })
      const [first, second] = receivers
      const fields = samplePaymentFields()
      const entered = gate.close()
      const slow = deliver(first, fields)
      await entered
      const waiting = deliver(second, fields)
      const blocked = `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%${table}%'`
      await vi.waitFor(async () => expect((await rows<{ n: number }>(admin(), blocked))[0]?.n).toBe(1), { timeout: 5_000 })
      gate.open()
      expect(await slow).toMatchObject({ status: 200, outcome: 'processed' })
      expect(await waiting).toMatchObject({ status: 200, outcome: 'duplicate' })
      expect(runs.get(String(fields.exchange_number))).toBe(1)
    })

    it('runs each handler exactly once when every callback reaches both at once', async () => {
      const { receivers, runs } = pair()
      const payments = Array.from({ length: 20 }, () => samplePaymentFields())
      const responses = await Promise.all(payments.flatMap((fields) => receivers.map((receiver) => deliver(receiver, fields))))
      for (const response of responses) expect([200, 409]).toContain(response.status)
      for (const fields of payments) for (const receiver of receivers) expect((await deliver(receiver, fields)).outcome).toBe('duplicate')
      expect([...runs.values()]).toEqual(payments.map(() => 1))
      for (const fields of payments) expect(await ordersOf(admin(), orders, fields.exchange_number)).toBe(1)
    })

    it('rolls the claim and the writes back when the connection drops mid-handler', async () => {
      const store = postgresStore({ client: processPools[0], table, transactional: true, lockTimeoutMs: LOCK_TIMEOUT_MS })
      const receiver = createReceiver({ checksumToken: TOKEN, signatureOnly: true, store })
      let runs = 0
      receiver.on('payment.succeeded', async (event) => {
        const tx = event.transaction!
        await tx.query(`INSERT INTO "${orders}" (exchange_number, state) VALUES ($1, $2)`, [event.payment.exchangeNumber, event.state])
        if (++runs > 1) return
        const [backend] = (await tx.query('SELECT pg_backend_pid() AS pid')).rows as { pid: number }[]
        // As if the database restarted or the network failed: the server ends the session, waiting until it is gone.
        await admin().query('SELECT pg_terminate_backend($1, 5000)', [backend!.pid])
      })
      const fields = samplePaymentFields()
      const dropped = await deliver(receiver, fields)
      expect(dropped).toMatchObject({ outcome: 'failed', error: { code: 'store_unavailable' } })
      expect(await ordersOf(admin(), orders, fields.exchange_number)).toBe(0)
      expect(await deliver(receiver, fields)).toMatchObject({ status: 200, outcome: 'processed' })
      expect(await ordersOf(admin(), orders, fields.exchange_number)).toBe(1)
    })
  })
})
