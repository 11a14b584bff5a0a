/**
 * npm run bench:stores — what one delivery's claim + complete costs on each store, next to the cheapest round
 * trip its backend can do, measured in the same run on the same client:
 *   memory                       no floor (no I/O);
 *   Redis (ioredis, node-redis)  floor: a bare `SET key value NX PX 60000`, sent through the same raw-command path
 *                                the store uses (ioredis call(), node-redis sendCommand());
 *   PostgreSQL (pg Pool)         floor: a bare `INSERT INTO <scratch> VALUES ($1)` on the same pool, into a table
 *                                with a text primary key (like the store's), logged, autocommitted, sent as text with
 *                                parameters (like the store's);
 *   PGlite in memory             the same floor, on the same instance.
 * Beside each, the two-round-trip floor a claim + complete cannot beat: SET NX PX then SET on the same key;
 * INSERT then UPDATE of the same row. Ratios against it are printed last, and beside them the ratios against a
 * third floor that writes what the store must keep but checks nothing: SET NX PX then a compare-and-set script
 * (Redis 7.0 has no conditional SET); INSERT then UPDATE of a row of the store's own schema.
 * Every delivery uses an exchange_number never seen before, so every claim succeeds. Each scenario runs one at a
 * time (latency) and with BENCH_CONCURRENCY in flight (throughput), after an untimed warm-up in the same mode.
 *
 * Environment: BENCH_OPS (measured operations per scenario and round, default 200; with BENCH_CONCURRENCY in flight
 * three times as many, see MODES), BENCH_WARMUP (default 100,
 * first round only), BENCH_CONCURRENCY (default 16), BENCH_ROUNDS (default 7; scenarios take turns, the best
 * round of each is reported), BENCH_VERBOSE (print every round),
 * BENCH_ONLY (comma-separated: memory, ioredis, node-redis, postgres, pglite), REDIS_URL, DATABASE_URL. An unreachable service is skipped with a warning, or fails the run when CI is set.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { availableParallelism, cpus } from 'node:os'
import { PGlite } from '@electric-sql/pglite'
import pg from 'pg'
import { createClient } from 'redis'
import type { PostgresQueryable } from '../src/stores/postgres/store.js'
import { schemaStatements, tableName } from '../src/stores/postgres/sql.js'
import { luaScript, type RawCommand, rawCommand, type RedisClientLike } from '../src/stores/redis/client.js'
import type { ReceiverStore } from '../src/contract/store.js'
import { DATABASE_URL, REDIS_URL, redactUrl } from '../test/stores/services.js'
import { CONNECT_TIMEOUT_MS, ioredis } from './connect-redis.js'
import { type Core, fromDist } from './dist.js'
import { measure, type Mode, type Op, type Row, renderTable, type Stats } from './stores-measure.js'
import { envInteger } from './env.js'
import { median } from './stats.js'

// The stores as built; the floors' raw-command helper (rawCommand) is the same few lines either way.
const { memoryStore } = await fromDist<Core>('index')
const { redisStore } = await fromDist<typeof import('../src/stores/redis/store.js')>('redis')
const { postgresStore } = await fromDist<typeof import('../src/stores/postgres/store.js')>('postgres')

const OPS = envInteger('BENCH_OPS', 200, 1)
const WARMUP = envInteger('BENCH_WARMUP', 100, 0)
const CONCURRENCY = envInteger('BENCH_CONCURRENCY', 16, 1)
const ROUNDS = envInteger('BENCH_ROUNDS', 7, 1)
const ONLY = process.env.BENCH_ONLY?.split(',').map((name) => name.trim())
// In flight, an operation's share of a round is a sixteenth of its latency: 200 of them on Redis made a round of
// ~7 ms, which one GC pause or one descheduling moved by a fifth (ratios read 1.04-1.44 where rounds of 1,000 or
// more read 1.0-1.05 in the same session). Three times as many keep the whole run within a minute here (~45 s).
const MODES: (Mode & { ops: number })[] = [
  { label: 'sequential', concurrency: 1, ops: OPS },
  { label: `${CONCURRENCY} in flight`, concurrency: CONCURRENCY, ops: CONCURRENCY > 1 ? 3 * OPS : OPS },
]
// The stores' defaults would keep what a crashed run leaves behind for 30 days; an hour is plenty here.
const RETENTION_MS = 60 * 60 * 1000
const LEASE_MS = 30_000

const RUN_ID = randomBytes(4).toString('hex')
// As the receiver makes them: one random prefix and a counter.
const OWNER_PREFIX = `${randomUUID()}:`
let counter = 0
const next = () => ++counter
// The shape of a real exchange_number (EX + 10 digits), unique within the run's fresh keys and tables.
const exchange = (n: number) => `EX${String(n).padStart(10, '0')}`

interface Opened {
  /** Shown under the table: server version and the settings that move the figures. */
  about: string
  floorName?: string
  floor?: Op
  /** What a claim + complete needs at least: two round trips on the same client (claim, then complete). */
  floor2Name?: string
  floor2?: Op
  /**
   * Two round trips that write what the store must keep, with none of its checks: on Redis a lease then a
   * compare-and-set script (Redis 7.0 has no conditional SET, so any safe completion is a script); on PostgreSQL
   * an INSERT then an UPDATE of a row shaped like the store's (its columns, constraints and indexes).
   */
  shapeFloor?: { name: string; op: Op }
  stores: {
    name: string
    store: ReceiverStore<unknown>
    /** A transactional store's own statement floor: the same two statements in one transaction on the same client. */
    txFloor?: { name: string; op: Op }
  }[]
  /** Deletes what the run wrote and closes the connections. */
  close(): Promise<void>
}

interface Group {
  name: string
  open(): Promise<Opened>
}

function delivery(store: ReceiverStore<unknown>): Op {
  return async (n) => {
    const lease = { exchangeNumber: exchange(n), state: 'succeeded', owner: OWNER_PREFIX + String(n) } as const
    const claim = await store.claim({ ...lease, leaseMs: LEASE_MS })
    if (claim.outcome !== 'claimed') throw new Error(`claim of a fresh exchange_number answered ${claim.outcome}`)
    if (!(await store.complete(lease))) throw new Error('complete of a lease just claimed answered false')
  }
}

/** The least a safe completion does: replace the value only if it is still ours. */
const COMPARE_AND_SET = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
`

async function redisCleanup(send: RawCommand, prefix: string): Promise<void> {
  let cursor = '0'
  do {
    const [nextCursor, keys] = (await send(['SCAN', cursor, 'MATCH', `${prefix}*`, 'COUNT', '1000'])) as [unknown, unknown[]]
    cursor = String(nextCursor)
    if (keys.length > 0) await send(['UNLINK', ...keys.map(String)])
  } while (cursor !== '0')
}

function redisGroup(name: string, connect: () => Promise<{ client: RedisClientLike; close(): Promise<void> }>): Group {
  return {
    name,
    async open() {
      const { client, close } = await connect()
      const send = rawCommand(client)
      const compareAndSet = luaScript(send, COMPARE_AND_SET)
      const prefix = `fpx-bench:${RUN_ID}:${name}:`
      const info = String(await send(['INFO', 'server']))
      const version = /redis_version:(\S+)/.exec(info)?.[1] ?? '?'
      return {
        about: `Redis ${version} at ${redactUrl(REDIS_URL)}`,
        floorName: 'SET NX PX',
        floor: async (n) => {
          const reply = await send(['SET', `${prefix}floor:${exchange(n)}`, `succeeded:${OWNER_PREFIX}${n}`, 'NX', 'PX', '60000'])
          if (String(reply) !== 'OK') throw new Error('SET NX of a fresh key did not answer OK')
        },
        floor2Name: 'SET NX PX; SET',
        floor2: async (n) => {
          const key = `${prefix}floor2:${exchange(n)}`
          const reply = await send(['SET', key, `succeeded:${OWNER_PREFIX}${n}`, 'NX', 'PX', '60000'])
          if (String(reply) !== 'OK') throw new Error('SET NX of a fresh key did not answer OK')
          await send(['SET', key, 'succeeded', 'PX', String(RETENTION_MS)])
        },
        shapeFloor: {
          name: 'SET NX PX; CAS script',
          op: async (n) => {
            const key = `${prefix}cas:${exchange(n)}`
            const value = `succeeded:${OWNER_PREFIX}${n}`
            const reply = await send(['SET', key, value, 'NX', 'PX', '60000'])
            if (String(reply) !== 'OK') throw new Error('SET NX of a fresh key did not answer OK')
            if (Number(await compareAndSet([key], [value, `done:${value}`, String(RETENTION_MS)])) !== 1) throw new Error('the lease just taken was not ours')
          },
        },
        stores: [{ name, store: redisStore({ client, prefix, retentionMs: RETENTION_MS }) }],
        async close() {
          try {
            await redisCleanup(send, prefix)
          } finally {
            await close()
          }
        },
      }
    },
  }
}

/** The scratch table, both stores' tables, and a floor INSERT, on a pg Pool or a PGlite instance. */
async function postgresGroup(client: pg.Pool | PGlite, label: string): Promise<Omit<Opened, 'about' | 'close'> & { drop(): Promise<void> }> {
  const base = `fpx_bench_${RUN_ID}_${label}`
  const scratch = `${base}_floor`
  // The stores create their inbox and timeline tables beside their own on first use.
  const tables = [scratch, ...[base, `${base}_tx`].flatMap((table) => [table, `${table}_inbox`, `${table}_timeline`])]
  const db: PostgresQueryable = client
  const drop = async () => {
    for (const table of tables) await db.query(`DROP TABLE IF EXISTS "${table}"`)
  }
  await db.query(`CREATE TABLE "${scratch}" (v text PRIMARY KEY)`)
  await db.query(`CREATE TABLE "${scratch}2" (v text PRIMARY KEY, done boolean NOT NULL DEFAULT false)`)
  tables.push(`${scratch}2`)
  // The store's own schema (with its inbox and timeline tables, unused here), for the shape floor.
  const shaped = `${scratch}_shape`
  for (const statement of schemaStatements(tableName(shaped))) await db.query(statement)
  tables.push(shaped, `${shaped}_inbox`, `${shaped}_timeline`, `${shaped}_book`, `${shaped}_locks`)
  const insertShaped = `INSERT INTO "${shaped}" (exchange_number, lease_owner, lease_state, lease_expires_at, expires_at)
VALUES ($1::text, $2::text, 'succeeded', now() + interval '30 seconds', now() + interval '1 hour')`
  const updateShaped = `UPDATE "${shaped}" SET handled = '{succeeded}', lease_owner = NULL, lease_state = NULL, lease_expires_at = NULL WHERE exchange_number = $1::text`
  const insert = `INSERT INTO "${scratch}" VALUES ($1)`
  const insert2 = `INSERT INTO "${scratch}2" (v) VALUES ($1)`
  const update2 = `UPDATE "${scratch}2" SET done = true WHERE v = $1`
  // The floors' statements are sent as the store sends its own: text with parameters, parsed and planned each time.
  const run = (text: string, values: unknown[]) => db.query(text, values)
  return {
    floorName: 'INSERT',
    floor: async (n) => void (await run(insert, [exchange(n)])),
    floor2Name: 'INSERT; UPDATE',
    floor2: async (n) => {
      await run(insert2, [exchange(n)])
      await run(update2, [exchange(n)])
    },
    shapeFloor: {
      name: "INSERT; UPDATE of the store's row",
      op: async (n) => {
        await run(insertShaped, [exchange(n), `${OWNER_PREFIX}${n}`])
        await run(updateShaped, [exchange(n)])
      },
    },
    stores: [
      { name: `${label}`, store: postgresStore({ client, table: base, retentionMs: RETENTION_MS }) },
      {
        name: `${label}, transactional`,
        store: postgresStore({ client, table: `${base}_tx`, retentionMs: RETENTION_MS, transactional: true }),
        txFloor: {
          name: 'BEGIN; INSERT; UPDATE; COMMIT',
          op:
            client instanceof pg.Pool
              ? async (n) => {
                  // As the store holds one: a connection of its own for the whole transaction.
                  const connection = await client.connect()
                  try {
                    await connection.query('BEGIN')
                    await connection.query(insert2, [exchange(n)])
                    await connection.query(update2, [exchange(n)])
                    await connection.query('COMMIT')
                  } finally {
                    connection.release()
                  }
                }
              : async (n) =>
                  void (await client.transaction(async (tx) => {
                    await tx.query(insert2, [exchange(n)])
                    await tx.query(update2, [exchange(n)])
                  })),
        },
      },
    ],
    drop,
  }
}

const GROUPS: Group[] = [
  { name: 'memory', open: async () => ({ about: 'no I/O', stores: [{ name: 'memory', store: memoryStore() }], close: async () => {} }) },
  redisGroup('ioredis', async () => {
    const client = await ioredis(REDIS_URL)
    return { client, close: async () => void (await client.quit()) }
  }),
  redisGroup('node-redis', async () => {
    const client = createClient({ url: REDIS_URL, socket: { reconnectStrategy: false, connectTimeout: CONNECT_TIMEOUT_MS } })
    // node-redis throws on an 'error' event nobody listens to; failing commands still reject.
    client.on('error', () => {})
    await client.connect()
    return { client, close: () => client.close() }
  }),
  {
    name: 'postgres',
    async open() {
      // Room for every delivery in flight to hold a connection (transactional mode does) plus a background prune.
      const pool = new pg.Pool({ connectionString: DATABASE_URL, max: CONCURRENCY + 2, connectionTimeoutMillis: CONNECT_TIMEOUT_MS })
      try {
        const { rows } = await pool.query<{ version: string; sync: string; fsync: string }>(
          `SELECT current_setting('server_version') AS version, current_setting('synchronous_commit') AS sync, current_setting('fsync') AS fsync`,
        )
        const group = await postgresGroup(pool, 'postgres')
        const about = `PostgreSQL ${rows[0]!.version} at ${redactUrl(DATABASE_URL)}, synchronous_commit=${rows[0]!.sync}, fsync=${rows[0]!.fsync}, pool max ${CONCURRENCY + 2}`
        return {
          ...group,
          about,
          close: async () => {
            try {
              await group.drop()
            } finally {
              await pool.end()
            }
          },
        }
      } catch (error) {
        await pool.end()
        throw error
      }
    },
  },
  {
    name: 'pglite',
    async open() {
      const db = await PGlite.create()
      const { rows } = await db.query<{ version: string }>(`SELECT current_setting('server_version') AS version`)
      const group = await postgresGroup(db, 'pglite')
      return { ...group, about: `PGlite (PostgreSQL ${rows[0]!.version}) in memory`, close: () => db.close() }
    },
  },
]

/** The round with the higher throughput, whole: its latencies come from the same round. */
const better = (a: Stats | undefined, b: Stats) => (a === undefined || b.opsPerSec > a.opsPerSec ? b : a)

function problemOf(error: unknown): string {
  const { code, message } = error as { code?: unknown; message?: unknown }
  return typeof code === 'string' ? code : String(message ?? error)
}

async function main(): Promise<void> {
  const groups = GROUPS.filter((group) => ONLY === undefined || ONLY.includes(group.name))
  if (groups.length === 0) throw new Error(`BENCH_ONLY matches none of: ${GROUPS.map((group) => group.name).join(', ')}`)
  console.log(
    `node ${process.version}, ${availableParallelism()} CPU (${cpus()[0]?.model.trim() ?? '?'}); ` +
      `${OPS} measured ops per scenario and round (${MODES[1]?.ops ?? OPS} in flight) after ${WARMUP} warm-up ops, best of ${ROUNDS} round(s); concurrency ${CONCURRENCY}; run ${RUN_ID}`,
  )
  const rows: Row[] = []
  const notes: string[] = []
  for (const group of groups) {
    let opened: Opened
    try {
      opened = await group.open()
    } catch (error) {
      const message = `${group.name}: cannot connect (${problemOf(error)})`
      if (process.env.CI) throw new Error(`${message}; CI is set, so the benchmark fails instead of skipping`, { cause: error })
      console.warn(`!! SKIPPING ${message}`)
      notes.push(`${group.name}: SKIPPED, ${problemOf(error)}`)
      continue
    }
    try {
      notes.push(`${group.name}: ${opened.about}`)
      for (const mode of MODES) {
        let floor: Stats | undefined
        let floor2: Stats | undefined
        const best: (Stats | undefined)[] = []
        const floor2Rounds: Stats[] = []
        const shapeFloorRounds: Stats[] = []
        const storeRounds: Stats[][] = opened.stores.map(() => [])
        const txFloorRounds: Stats[][] = opened.stores.map(() => [])
        // Floors and stores take turns in short rounds, each round starting with the next scenario, so that a
        // noisy neighbour (or a table growing, or autovacuum) hits all of them alike rather than whichever ran
        // last. The tables keep each scenario's best round; the ratios printed last pair each store round with
        // the two-round-trip floor's round of the same turn and take the median, which a burst of load in one
        // round cannot move. Only the first round warms up: later ones run on warm code.
        const scenarios: ((warmup: number) => Promise<void>)[] = []
        if (opened.floor) scenarios.push(async (warmup) => void (floor = better(floor, await measure(opened.floor!, mode.ops, warmup, mode.concurrency, next))))
        if (opened.floor2)
          scenarios.push(async (warmup) => {
            const stats = await measure(opened.floor2!, mode.ops, warmup, mode.concurrency, next)
            floor2Rounds.push(stats)
            floor2 = better(floor2, stats)
          })
        if (opened.shapeFloor)
          scenarios.push(async (warmup) => void shapeFloorRounds.push(await measure(opened.shapeFloor!.op, mode.ops, warmup, mode.concurrency, next)))
        for (const [index, { txFloor }] of opened.stores.entries())
          if (txFloor) scenarios.push(async (warmup) => void txFloorRounds[index]!.push(await measure(txFloor.op, mode.ops, warmup, mode.concurrency, next)))
        for (const [index, { name, store }] of opened.stores.entries())
          scenarios.push(async (warmup) => {
            const stats = await measure(delivery(store), mode.ops, warmup, mode.concurrency, next)
            if (process.env.BENCH_VERBOSE) console.log(`  ${name}, ${mode.label}: ${stats.opsPerSec.toFixed(0)} ops/s`)
            storeRounds[index]!.push(stats)
            best[index] = better(best[index], stats)
          })
        console.log(`  ${group.name}, ${mode.label}: ${ROUNDS} round(s) of ${scenarios.length} scenarios`)
        for (let round = 0; round < ROUNDS; round++)
          for (let turn = 0; turn < scenarios.length; turn++) await scenarios[(round + turn) % scenarios.length]!(round === 0 ? WARMUP : 0)
        for (const [index, { name, txFloor }] of opened.stores.entries()) {
          const pairedWith = (floorRounds: Stats[]) =>
            floorRounds.length > 0 ? median(floorRounds.map((f, round) => f.opsPerSec / storeRounds[index]![round]!.opsPerSec)) : undefined
          rows.push({
            store: name,
            mode: mode.label,
            stats: best[index]!,
            floor,
            floorName: opened.floorName,
            floor2,
            floor2Name: opened.floor2Name,
            floor2Ratio: pairedWith(floor2Rounds),
            txFloorName: txFloor?.name,
            txFloorRatio: pairedWith(txFloorRounds[index]!),
            shapeFloorName: opened.shapeFloor?.name,
            shapeFloorRatio: pairedWith(shapeFloorRounds),
          })
        }
      }
    } finally {
      await opened.close()
    }
  }
  console.log(`\nclaim + complete per delivery (ms); floor = the bare round trip on the same client, same mode\n`)
  console.log(renderTable(rows))
  console.log(`\n${notes.map((note) => `  ${note}`).join('\n')}`)
  console.log(
    '\n  Statements per delivery (floor: 1): Redis 2 (claim SET NX PX GET, complete script); PostgreSQL 2 (claim ' +
      'INSERT … ON CONFLICT, complete UPDATE); transactional on a pool 4 round trips (BEGIN + SET LOCAL ' +
      'lock_timeout, claim resetting lock_timeout in the same statement, complete, COMMIT) on a connection held ' +
      'throughout; PGlite transactional 4 (BEGIN, claim, complete, COMMIT), one session for every delivery.',
  )
  // Ratios last: store time per delivery over the two-round-trip floor's (claim then complete cannot take fewer).
  console.log(`\nclaim + complete time / two-round-trip floor time, median of ${ROUNDS} paired round(s) (goal <= 1.2; PGlite <= 2):`)
  const goalOf = (row: (typeof rows)[0]) => (row.store.startsWith('pglite') ? 2 : 1.2)
  const verdict = (ratio: number, goal: number) => `(goal <= ${goal}: ${ratio <= goal ? 'met' : 'NOT met'})`
  for (const row of rows) {
    if (row.floor2Ratio === undefined) continue
    const ratio = row.floor2Ratio
    // Issue 12: a transactional store is held to its own statement floor (below), which has its BEGIN and COMMIT.
    const judged = row.txFloorRatio === undefined ? verdict(ratio, goalOf(row)) : '(judged against its own floor below)'
    console.log(`  ${`${row.store}, ${row.mode}`.padEnd(36)} ${ratio.toFixed(2)}x  ${judged}`)
  }
  console.log('\nclaim + complete time / the two round trips writing what the store keeps, without its checks, median of paired rounds:')
  for (const row of rows)
    if (row.shapeFloorRatio !== undefined) console.log(`  ${`${row.store}, ${row.mode}`.padEnd(36)} ${row.shapeFloorRatio.toFixed(2)}x  (${row.shapeFloorName})`)
  console.log(`\ntransactional claim + complete time / its own statement floor (${rows.find((row) => row.txFloorName)?.txFloorName ?? '-'}, same client), median of paired rounds:`)
  for (const row of rows)
    if (row.txFloorRatio !== undefined)
      console.log(`  ${`${row.store}, ${row.mode}`.padEnd(36)} ${row.txFloorRatio.toFixed(2)}x  ${verdict(row.txFloorRatio, goalOf(row))}`)
}

await main()
