import { randomUUID } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createReceiver, type PaymentState, type Receiver, type ReceiverResponse } from '../../src/index.js'
import { DEFAULT_TABLE, schemaStatements, tableName } from '../../src/stores/postgres/sql.js'
import { type PostgresQueryable, type PostgresStore, type PostgresStoreOptions, postgresStore } from '../../src/stores/postgres/store.js'
import type { PoolLike } from '../../src/stores/postgres/store.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { DATABASE_URL } from './services.js'

/*
 * Checks shared by the pg and PGlite test files, beyond the contract suite: the schema, pruning, and the
 * transactional mode seen through a receiver.
 */

export const TOKEN = 'cd'.repeat(32)
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** A table name unique to this test run (and `part`), so parallel runs never meet; drop it afterwards. */
export function uniqueTable(part: string): string {
  return `fpx_collect_test_${randomUUID().replace(/-/g, '').slice(0, 12)}_${part}`
}

/** Small pg Pools on the test database, one per would-be process (the server is shared), ended together. */
export function testPools(): { newPool(): pg.Pool; end(): Promise<void> } {
  const pools: pg.Pool[] = []
  return {
    newPool() {
      const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 3, idleTimeoutMillis: 1_000 })
      // Idle connections closed by the server are the pool's to report.
      pool.on('error', () => {})
      pools.push(pool)
      return pool
    },
    end: async () => void (await Promise.all(pools.map((pool) => pool.end()))),
  }
}

/** Drops every table a store on `table` creates (read from its schema, so a table added later is dropped too). */
export async function dropStoreTables(client: PostgresQueryable, table: string): Promise<void> {
  const names = schemaStatements(tableName(table)).flatMap((statement) => /^CREATE TABLE IF NOT EXISTS (\S+)/.exec(statement)?.[1] ?? [])
  await client.query(`DROP TABLE IF EXISTS ${names.join(', ')}`)
}

export async function rows<T>(client: PostgresQueryable, text: string, params: unknown[] = []): Promise<T[]> {
  return (await client.query(text, params)).rows as T[]
}

/** The statements of sql/fpx-collect.sql, comments left out. */
export async function sqlFileStatements(): Promise<string[]> {
  const text = await readFile(new URL('../../sql/fpx-collect.sql', import.meta.url), 'utf8')
  const code = text
    .split('\n')
    .filter((line) => !line.startsWith('--'))
    .join('\n')
  // A statement ends with a `;` at the end of a line, outside a $$ … $$ body (the migration's DO block).
  const statements: string[] = []
  let current = ''
  for (const line of code.split('\n')) {
    current += `${line}\n`
    if ((current.split('$$').length - 1) % 2 === 0 && /;\s*$/.test(line)) {
      statements.push(current.trim().replace(/;$/, ''))
      current = ''
    }
  }
  return [...statements, current.trim()].filter((statement) => statement !== '')
}

/** Columns, constraints and indexes of `table`, with its name taken out so that two tables compare. */
async function shape(client: PostgresQueryable, table: string): Promise<unknown> {
  const columns = await rows(
    client,
    `SELECT column_name, ordinal_position, data_type, udt_name, is_nullable, column_default
     FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`,
    [table],
  )
  const constraints = await rows<{ def: string }>(
    client,
    `SELECT contype::text || ' ' || pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = $1::regclass ORDER BY 1`,
    [table],
  )
  const indexes = await rows<{ def: string }>(client, `SELECT indexdef AS def FROM pg_indexes WHERE tablename = $1 ORDER BY 1`, [table])
  const anonymous = (def: string) => def.split(table).join('<table>')
  return { columns, constraints: constraints.map((c) => anonymous(c.def)), indexes: indexes.map((i) => anonymous(i.def)) }
}

export function schemaSuite(name: string, connect: () => Promise<{ client: PostgresQueryable; close(): Promise<void> }>): void {
  describe(`${name}: schema`, () => {
    let client: PostgresQueryable
    let close: () => Promise<void>
    const [fromCode, fromFile, earlier, earlierMigrated, firstBook, firstInbox] = [
      uniqueTable('code'),
      uniqueTable('file'),
      uniqueTable('earlier'),
      uniqueTable('earlier_m'),
      uniqueTable('first_book'),
      uniqueTable('first_inbox'),
    ]
    beforeAll(async () => {
      ;({ client, close } = await connect())
    })
    afterAll(async () => {
      for (const table of [fromCode, fromFile, earlier, earlierMigrated, firstBook, firstInbox]) await dropStoreTables(client, table)
      await close()
    })

    it('keeps sql/fpx-collect.sql the statements the store runs', async () => {
      expect(await sqlFileStatements()).toEqual(schemaStatements(tableName(DEFAULT_TABLE)))
    })

    it('migrates idempotently, to the same table shape as the SQL file', async () => {
      const store = postgresStore({ client, table: fromCode })
      await store.migrate()
      await store.migrate()
      await Promise.all([store.migrate(), postgresStore({ client, table: fromCode }).migrate()])
      for (const statement of await sqlFileStatements()) await client.query(statement.split(`"${DEFAULT_TABLE}`).join(`"${fromFile}`))
      const [codeShape, fileShape] = [await shape(client, fromCode), await shape(client, fromFile)]
      expect(codeShape).toEqual(fileShape)
      expect(codeShape).toMatchObject({ columns: expect.arrayContaining([expect.objectContaining({ column_name: 'exchange_number' })]) })
    })

    it('keeps a claims table made before paid orders were kept working, by migrate() or on first use', async () => {
      for (const [table, migrateFirst] of [[earlierMigrated, true], [earlier, false]] as const) {
        // The table as earlier versions (and their sql/fpx-collect.sql) made it, with one payment handled.
        const states = `'pending', 'failed', 'succeeded'`
        await client.query(`CREATE TABLE "${table}" (
  exchange_number text PRIMARY KEY,
  handled text[] NOT NULL DEFAULT '{}' CHECK (handled <@ ARRAY[${states}]),
  lease_owner text,
  lease_state text CHECK (lease_state IN (${states})),
  lease_expires_at timestamptz,
  expires_at timestamptz NOT NULL
)`)
        await client.query(`CREATE INDEX "${table}_expires_at_idx" ON "${table}" (expires_at)`)
        await client.query(`INSERT INTO "${table}" (exchange_number, handled, expires_at) VALUES ('EX-EARLIER', '{pending,succeeded}', now() + interval '1 day')`)
        const store = postgresStore({ client, table })
        if (migrateFirst) await store.migrate()
        const lease = (exchangeNumber: string, state: PaymentState) => ({ exchangeNumber, state, owner: randomUUID(), leaseMs: 30_000 })
        expect(await store.claim(lease('EX-EARLIER', 'succeeded'))).toEqual({ outcome: 'duplicate' })
        expect(await store.claim(lease('EX-EARLIER', 'failed'))).toMatchObject({ outcome: 'stale', currentState: 'succeeded' })
        // Orders are known as paid from the upgrade on.
        const orderNumber = `ORD-${randomUUID()}`
        const paying = { ...lease(`EX-${randomUUID()}`, 'succeeded'), orderNumber }
        expect(await store.claim(paying)).toMatchObject({ outcome: 'claimed', previousState: null, paidBy: null })
        expect(await store.complete(paying)).toBe(true)
        const late = { ...lease(`EX-${randomUUID()}`, 'failed'), orderNumber }
        expect(await store.claim(late)).toMatchObject({ outcome: 'claimed', paidBy: paying.exchangeNumber })
        expect(await store.release(late)).toBe(true)
        // And the table now has the shape of one the store makes itself.
        await store.migrate()
        await postgresStore({ client, table: fromCode }).migrate()
        expect(await shape(client, table)).toEqual(await shape(client, fromCode))
      }
    })

    it('keeps a payment book made by its first version working, with its rows, once migrated on first use', async () => {
      const table = firstBook
      // The book and lock tables as the first version (and its sql/fpx-collect.sql) made them, one payment in each state.
      const states = `'pending', 'failed', 'succeeded'`
      await client.query(`CREATE TABLE "${table}_book" (
  order_number text COLLATE "C" NOT NULL,
  amount_sen bigint NOT NULL,
  asked_sen bigint[] NOT NULL,
  uid text COLLATE "C" NOT NULL,
  kind text NOT NULL CHECK (kind IN ('form', 'payment', 'session')),
  created_at timestamptz NOT NULL,
  exchange_number text,
  attached json NOT NULL,
  status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'succeeded', 'failed', 'abandoned')),
  state text CHECK (state IN (${states})),
  lookups integer NOT NULL DEFAULT 0,
  last_lookup_at timestamptz,
  next_lookup_at timestamptz,
  expires_at timestamptz,
  PRIMARY KEY (order_number, uid)
)`)
      await client.query(`CREATE INDEX "${table}_book_open_idx" ON "${table}_book" (created_at, order_number, uid) WHERE status = 'open'`)
      await client.query(`CREATE INDEX "${table}_book_exp_idx" ON "${table}_book" (expires_at)`)
      await client.query(`CREATE TABLE "${table}_locks" (name text PRIMARY KEY, token bigint NOT NULL, owner text, expires_at timestamptz NOT NULL)`)
      await client.query(`INSERT INTO "${table}_locks" VALUES ('sweep', 7, NULL, '-infinity')`)
      await client.query(`INSERT INTO "${table}_book" (order_number, amount_sen, asked_sen, uid, kind, created_at, exchange_number, attached, status, state, next_lookup_at, expires_at)
VALUES ('OLD-OPEN', 1020, '{1020}', 'uid-1', 'form', '2026-01-01T00:00:00Z', NULL, '{"sku":"A1"}', 'open', NULL, '2026-01-01T00:00:00Z', NULL),
  ('OLD-PAID', 500, '{500}', 'uid-1', 'payment', '2026-01-01T01:00:00Z', 'EX-OLD', '{}', 'succeeded', 'succeeded', NULL, now() + interval '1 day')`)
      const store = postgresStore({ client, table, pruneEvery: 0 })
      const book = store.paymentBook()
      // First use migrates: the rows read as they were, with none of what the first version did not keep.
      expect(await book.find('OLD-OPEN')).toMatchObject({ kind: 'form', amountSen: 1020, attached: { sku: 'A1' }, buyerEmail: null, failures: 0, lastFailure: null, settledAt: null })
      expect((await book.list()).payments.map((payment) => payment.orderNumber)).toEqual(['OLD-PAID', 'OLD-OPEN'])
      expect((await book.list({ search: 'EX-OLD' })).payments.map((payment) => payment.orderNumber)).toEqual(['OLD-PAID'])
      // A result of an order it never recorded: a kind the first version's CHECK refused.
      const lease = { exchangeNumber: `EX-${randomUUID()}`, state: 'succeeded' as const, owner: randomUUID(), orderNumber: 'NEW-SEEN', uid: 'uid-1' }
      expect(await store.claim({ ...lease, leaseMs: 30_000 })).toMatchObject({ outcome: 'claimed' })
      expect(await store.complete({ ...lease, seen: { uid: 'uid-1', amountSen: 300, buyerEmail: 'a@b.test', buyerName: null } })).toBe(true)
      expect(await book.find('NEW-SEEN')).toMatchObject({ kind: 'result', status: 'succeeded' })
      // The lock keeps its token, and keeps a pass now.
      expect((await store.sweepLock().acquire('sweeper', 30_000))?.token).toBe(8)
      await store.sweepLock().notePass({ at: new Date(), holder: 'sweeper', nextAt: null, lookups: 0, found: 0, closed: 0, failures: [] })
      expect((await store.sweepLock().status()).holder).toBe('sweeper')
      // And the tables have the shape of ones the store makes itself.
      await store.migrate()
      await postgresStore({ client, table: fromCode }).migrate()
      for (const suffix of ['_book', '_locks']) expect(await shape(client, `${table}${suffix}`)).toEqual(await shape(client, `${fromCode}${suffix}`))
    })

    it('keeps an inbox made before it kept who signed a result working, with its rows, once migrated on first use', async () => {
      const table = firstInbox
      // Every table as the version before the signer column made them (its full schema, so that only the missing
      // column tells first use to migrate), with one entry waiting.
      await postgresStore({ client, table }).migrate()
      await client.query(`ALTER TABLE "${table}_inbox" DROP COLUMN signer`)
      await client.query(`INSERT INTO "${table}_inbox" (exchange_number, state, rank, source, order_number, fields, rendering) VALUES ('EX-OLD', 'succeeded', 2, 'callback', 'ORD-OLD', '{}', 'plain')`)
      const inbox = postgresStore({ client, table, pruneEvery: 0 }).openInbox()
      const signer = JSON.stringify({ uid: 'uid-1', credential: { uid: 'uid-1', index: 0, by: 'uid' } })
      expect(await inbox.enqueue({ exchangeNumber: 'EX-NEW', state: 'succeeded', source: 'callback', orderNumber: 'ORD-NEW', fields: '{}', rendering: 'plain', signer })).toBe('queued')
      const taken = await inbox.take('worker', 10, 30_000)
      const read = taken.map(({ exchangeNumber, signer }) => ({ exchangeNumber, signer })).sort((a, b) => a.exchangeNumber.localeCompare(b.exchangeNumber))
      expect(read).toEqual([
        { exchangeNumber: 'EX-NEW', signer },
        { exchangeNumber: 'EX-OLD', signer: undefined },
      ])
      // The column is back (a dropped one leaves a gap in the positions, so the shapes are not compared here).
      expect(((await shape(client, `${table}_inbox`)) as { columns: unknown[] }).columns).toContainEqual(expect.objectContaining({ column_name: 'signer', data_type: 'text' }))
    })

    it('uses a table made from the SQL file as it is', async () => {
      const store = postgresStore({ client, table: fromFile })
      const lease = { exchangeNumber: `EX-${randomUUID()}`, state: 'succeeded' as const, owner: randomUUID() }
      expect(await store.claim({ ...lease, leaseMs: 30_000 })).toMatchObject({ outcome: 'claimed' })
      expect(await store.complete(lease)).toBe(true)
    })
  })
}

export function pruneSuite(name: string, connect: () => Promise<{ client: PostgresQueryable; close(): Promise<void> }>): void {
  describe(`${name}: retention`, () => {
    let client: PostgresQueryable
    let close: () => Promise<void>
    const table = uniqueTable('prune')
    beforeAll(async () => {
      ;({ client, close } = await connect())
    })
    afterAll(async () => {
      for (const name of [table, `${table}_tx`]) await dropStoreTables(client, name)
      await close()
    })

    const lease = (state: 'pending' | 'succeeded' = 'succeeded', exchangeNumber = `EX-${randomUUID()}`) => ({
      exchangeNumber,
      state,
      owner: randomUUID(),
    })
    async function handled(store: PostgresStore, ref = lease()) {
      expect(await store.claim({ ...ref, leaseMs: 30_000 })).toMatchObject({ outcome: 'claimed' })
      expect(await store.complete(ref)).toBe(true)
      return ref
    }
    const present = async (exchangeNumber: string) =>
      (await rows(client, `SELECT 1 FROM "${table}" WHERE exchange_number = $1`, [exchangeNumber])).length === 1

    it('prune() removes rows past retention and keeps live ones and those a lease holds', async () => {
      const brief = postgresStore({ client, table, retentionMs: 1, pruneEvery: 0 })
      const kept = postgresStore({ client, table, pruneEvery: 0 })
      const expired = await handled(brief)
      const retained = await handled(kept)
      // Past retention too, but a live lease holds it: a delivery is working on it.
      const leased = lease()
      expect(await brief.claim({ ...leased, leaseMs: 60_000 })).toMatchObject({ outcome: 'claimed' })
      await sleep(20)
      expect(await kept.prune()).toBe(1)
      expect(await present(expired.exchangeNumber)).toBe(false)
      expect(await present(retained.exchangeNumber)).toBe(true)
      expect(await present(leased.exchangeNumber)).toBe(true)
      expect(await brief.complete(leased)).toBe(true)
      await sleep(20)
      expect(await kept.prune()).toBe(1)
      expect(await kept.prune()).toBe(0)
    })

    it('keeps a completed payment at least retentionMs, and at most a lease (a thousandth of it at most) longer', async () => {
      // Compared with this process's clock read around the calls (the database's is the same machine's), so that
      // the bounds hold however long the calls and the query take.
      const expiresAtMs = async (exchangeNumber: string, from = table) => {
        const [row] = await rows(client, `SELECT extract(epoch FROM expires_at)::float8 * 1000 AS ms FROM "${from}" WHERE exchange_number = $1`, [exchangeNumber])
        return Number((row as { ms: number }).ms)
      }
      // Completed at once (a store may keep it up to a lease longer: here 3.6 s of a 1 h retention).
      const store = postgresStore({ client, table, retentionMs: 3_600_000, pruneEvery: 0 })
      const beforeQuick = Date.now()
      const quick = await handled(store)
      const afterQuick = Date.now()
      expect(await expiresAtMs(quick.exchangeNumber)).toBeGreaterThanOrEqual(beforeQuick + 3_600_000)
      expect(await expiresAtMs(quick.exchangeNumber)).toBeLessThanOrEqual(afterQuick + 3_603_600)
      // Completed 300 ms after its claim: retention counts from the completion, also when the completion
      // runs in the transaction the claim began (whose now() is the claim's time, 300 ms or more earlier).
      for (const transactional of [false, true]) {
        const options = { client, retentionMs: 2_000, pruneEvery: 0 }
        // The suite's clients are a pg Pool and a PGlite instance, both able to hold a transaction open.
        const short = transactional
          ? postgresStore({ ...options, client: client as PoolLike, table: `${table}_tx`, transactional: true })
          : postgresStore({ ...options, table })
        const slow = lease()
        expect(await short.claim({ ...slow, leaseMs: 30_000 })).toMatchObject({ outcome: 'claimed' })
        await sleep(300)
        const beforeComplete = Date.now()
        expect(await short.complete(slow)).toBe(true)
        expect(await expiresAtMs(slow.exchangeNumber, transactional ? `${table}_tx` : table)).toBeGreaterThanOrEqual(beforeComplete + 2_000)
      }
    })

    it('claims a forgotten payment afresh, as if it had never been handled', async () => {
      const brief = postgresStore({ client, table, retentionMs: 1, pruneEvery: 0 })
      const first = await handled(brief)
      await sleep(20)
      const again = lease('succeeded', first.exchangeNumber)
      expect(await brief.claim({ ...again, leaseMs: 30_000 })).toMatchObject({ outcome: 'claimed', previousState: null })
      expect(await brief.complete(again)).toBe(true)
    })

    it('prunes by itself every pruneEvery completions', async () => {
      const store = postgresStore({ client, table, retentionMs: 1, pruneEvery: 1 })
      const first = await handled(store)
      await sleep(20)
      await handled(store)
      await vi.waitFor(async () => expect(await present(first.exchangeNumber)).toBe(false), { timeout: 5_000 })
    })
  })
}

/** Options a test may vary; the client and the mode are the subject's. */
export type StoreTweaks = Omit<PostgresStoreOptions, 'client' | 'transactional'>

export interface TransactionalSubject {
  name: string
  /** A transactional store on `table`, the orders table, and a client outside its transactions to look with. */
  open(table: string, options?: StoreTweaks): Promise<{ store: PostgresStore<PostgresQueryable>; close(): Promise<void> }>
  client(): PostgresQueryable
}

export function deliver(receiver: Receiver<PostgresQueryable> | Receiver, fields: Record<string, unknown>): Promise<ReceiverResponse> {
  const signed = signCallback(fields as Parameters<typeof signCallback>[0], TOKEN)
  return receiver.handle({ kind: 'callback', body: Buffer.from(signed.body), contentType: signed.contentType })
}

/** What a handler receives as event.transaction for one delivery through a receiver on `store` (its tables dropped after). */
export async function transactionSeen<T>(store: PostgresStore<T>, client: PostgresQueryable, table: string): Promise<T | undefined> {
  const receiver = createReceiver({ checksumToken: TOKEN, signatureOnly: true, store })
  const seen: (T | undefined)[] = []
  receiver.on('payment.succeeded', (event) => void seen.push(event.transaction))
  try {
    expect(await deliver(receiver as Receiver<PostgresQueryable>, samplePaymentFields())).toMatchObject({ status: 200, outcome: 'processed' })
    await receiver.flush()
  } finally {
    await dropStoreTables(client, table)
  }
  expect(seen).toHaveLength(1)
  return seen[0]
}

export async function createOrders(client: PostgresQueryable, orders: string): Promise<void> {
  await client.query(`CREATE TABLE IF NOT EXISTS "${orders}" (id serial PRIMARY KEY, exchange_number text NOT NULL, state text NOT NULL)`)
}

export async function ordersOf(client: PostgresQueryable, orders: string, exchangeNumber: unknown): Promise<number> {
  const [row] = await rows<{ n: number }>(client, `SELECT count(*)::int AS n FROM "${orders}" WHERE exchange_number = $1`, [exchangeNumber])
  return row?.n ?? 0
}

export function transactionalSuite(subject: TransactionalSubject): void {
  describe(`${subject.name}: transactional mode through a receiver`, () => {
    const [table, orders] = [uniqueTable('tx'), uniqueTable('orders')]
    const closers: (() => Promise<void>)[] = []
    async function receiverFor(options: StoreTweaks = {}, leaseMs?: number) {
      const { store, close } = await subject.open(table, options)
      closers.push(close)
      // Made before the deliveries: a first use's migration is not a claim's work, and a short lease's store calls
      // get half of it.
      await store.migrate()
      return createReceiver({ checksumToken: TOKEN, signatureOnly: true, store, leaseMs })
    }
    beforeAll(async () => {
      await createOrders(subject.client(), orders)
    })
    afterAll(async () => {
      for (const close of closers) await close()
      await dropStoreTables(subject.client(), table)
      await subject.client().query(`DROP TABLE IF EXISTS "${orders}"`)
    })

    /** Writes the order through the claim's transaction, then does `then` with it. */
    const writeOrder = (receiver: Receiver<PostgresQueryable>, then: (tx: PostgresQueryable) => Promise<void> = async () => {}) =>
      receiver.on('payment.succeeded', async (event) => {
        expect(event.transaction).toBeDefined()
        const tx = event.transaction!
        await tx.query(`INSERT INTO "${orders}" (exchange_number, state) VALUES ($1, $2)`, [event.payment.exchangeNumber, event.state])
        await then(tx)
      })

    it('commits the handler’s writes together with the completion', async () => {
      const receiver = await receiverFor()
      writeOrder(receiver)
      const fields = samplePaymentFields()
      expect(await deliver(receiver, fields)).toMatchObject({ status: 200, outcome: 'processed' })
      expect(await ordersOf(subject.client(), orders, fields.exchange_number)).toBe(1)
      expect(await deliver(receiver, fields)).toMatchObject({ status: 200, outcome: 'duplicate' })
      expect(await ordersOf(subject.client(), orders, fields.exchange_number)).toBe(1)
    })

    it('rolls the writes back with the claim when a handler throws; the next delivery runs it', async () => {
      const receiver = await receiverFor()
      let runs = 0
      writeOrder(receiver, async () => {
        if (++runs === 1) throw new Error('the order service is down')
      })
      const fields = samplePaymentFields()
      expect(await deliver(receiver, fields)).toMatchObject({ status: 500, outcome: 'failed', error: { code: 'handler_failed' } })
      expect(await ordersOf(subject.client(), orders, fields.exchange_number)).toBe(0)
      expect(await deliver(receiver, fields)).toMatchObject({ status: 200, outcome: 'processed' })
      expect(await ordersOf(subject.client(), orders, fields.exchange_number)).toBe(1)
      expect(runs).toBe(2)
    })

    it('commits nothing when a statement failed in the transaction, even if the handler caught it', async () => {
      const receiver = await receiverFor()
      let runs = 0
      writeOrder(receiver, async (tx) => {
        if (++runs > 1) return
        // PostgreSQL aborts the whole transaction on an error; catching it in JavaScript does not undo that.
        await tx.query('SELECT 1 / 0').catch(() => {})
      })
      const fields = samplePaymentFields()
      expect(await deliver(receiver, fields)).toMatchObject({ outcome: 'failed', error: { code: 'store_unavailable' } })
      expect(await ordersOf(subject.client(), orders, fields.exchange_number)).toBe(0)
      expect(await deliver(receiver, fields)).toMatchObject({ status: 200, outcome: 'processed' })
      expect(await ordersOf(subject.client(), orders, fields.exchange_number)).toBe(1)
    })

    it('rolls the writes back when the lease runs out before the handlers return', async () => {
      // Only the first run's lease is short, so a slow machine cannot make the second run lose its lease; the
      // lease timer is due long before the handler's sleep ends, and timers fire in order.
      const [hasty, patient] = [await receiverFor({}, 200), await receiverFor()]
      writeOrder(hasty, () => sleep(800))
      writeOrder(patient)
      const fields = samplePaymentFields()
      expect(await deliver(hasty, fields)).toMatchObject({ status: 500, outcome: 'failed', error: { code: 'lease_lost' } })
      expect(await ordersOf(subject.client(), orders, fields.exchange_number)).toBe(0)
      expect(await deliver(patient, fields)).toMatchObject({ status: 200, outcome: 'processed' })
      expect(await ordersOf(subject.client(), orders, fields.exchange_number)).toBe(1)
    })
  })
}

export { Gate } from './gate.js'
