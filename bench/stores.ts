/**
 * npm run bench:stores — what one delivery's claim + complete costs on each store, next to the cheapest round
 * trip its backend can do, measured in the same run on the same client:
 *   memory                       no floor (no I/O);
 *   Redis (ioredis, node-redis)  floor: a bare `SET key value NX PX 60000`, sent through the same raw-command path
 *                                the store uses (ioredis call(), node-redis sendCommand());
 *   PostgreSQL (pg Pool)         floor: a bare `INSERT INTO <scratch> VALUES ($1)` on the same pool, into a table
 *                                with a text primary key (like the store's), logged, autocommitted;
 *   PGlite in memory             the same floor, on the same instance.
 * Every delivery uses an exchange_number never seen before, so every claim succeeds. Each scenario runs one at a
 * time (latency) and with BENCH_CONCURRENCY in flight (throughput), after an untimed warm-up in the same mode.
 *
 * Environment: BENCH_OPS (measured operations per scenario, default 3000), BENCH_WARMUP (default 300),
 * BENCH_CONCURRENCY (default 16), BENCH_ROUNDS (default 1; the best round of each scenario is reported),
 * BENCH_ONLY (comma-separated: memory, ioredis, node-redis, postgres, pglite), REDIS_URL, DATABASE_URL. An unreachable service is skipped with a warning, or fails the run when CI is set.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { availableParallelism, cpus } from 'node:os'
import { PGlite } from '@electric-sql/pglite'
import { Redis } from 'ioredis'
import pg from 'pg'
import { createClient } from 'redis'
import type { PostgresQueryable } from '../src/stores/postgres/store.js'
import { type RawCommand, rawCommand, type RedisClientLike } from '../src/stores/redis-client.js'
import type { ReceiverStore } from '../src/stores/store.js'
import { DATABASE_URL, REDIS_URL, redactUrl } from '../test/stores/services.js'
import { type Core, fromDist } from './dist.js'
import { envNumber, measure, type Mode, type Op, type Row, renderTable, type Stats } from './stores-measure.js'

// The stores as built; the floors' raw-command helper (rawCommand) is the same few lines either way.
const { memoryStore } = await fromDist<Core>('index')
const { redisStore } = await fromDist<typeof import('../src/stores/redis.js')>('redis')
const { postgresStore } = await fromDist<typeof import('../src/stores/postgres/store.js')>('postgres')

const OPS = envNumber('BENCH_OPS', 3000, 1)
const WARMUP = envNumber('BENCH_WARMUP', 300, 0)
const CONCURRENCY = envNumber('BENCH_CONCURRENCY', 16, 1)
const ROUNDS = envNumber('BENCH_ROUNDS', 1, 1)
const ONLY = process.env.BENCH_ONLY?.split(',').map((name) => name.trim())
const MODES: Mode[] = [
  { label: 'sequential', concurrency: 1 },
  { label: `${CONCURRENCY} in flight`, concurrency: CONCURRENCY },
]
// The stores' defaults would keep what a crashed run leaves behind for 30 days; an hour is plenty here.
const RETENTION_MS = 60 * 60 * 1000
const LEASE_MS = 30_000
const CONNECT_TIMEOUT_MS = 5_000

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
  stores: { name: string; store: ReceiverStore<unknown> }[]
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
  const tables = [scratch, base, `${base}_tx`]
  const db: PostgresQueryable = client
  const drop = async () => {
    for (const table of tables) await db.query(`DROP TABLE IF EXISTS "${table}"`)
  }
  await db.query(`CREATE TABLE "${scratch}" (v text PRIMARY KEY)`)
  const insert = `INSERT INTO "${scratch}" VALUES ($1)`
  return {
    floorName: 'INSERT',
    floor: async (n) => void (await db.query(insert, [exchange(n)])),
    stores: [
      { name: `${label}`, store: postgresStore({ client, table: base, retentionMs: RETENTION_MS }) },
      {
        name: `${label}, transactional`,
        store: postgresStore({ client, table: `${base}_tx`, retentionMs: RETENTION_MS, transactional: true }),
      },
    ],
    drop,
  }
}

const GROUPS: Group[] = [
  { name: 'memory', open: async () => ({ about: 'no I/O', stores: [{ name: 'memory', store: memoryStore() }], close: async () => {} }) },
  redisGroup('ioredis', async () => {
    const client = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null, connectTimeout: CONNECT_TIMEOUT_MS })
    // Without a listener ioredis prints every connection error as unhandled; the first one says why.
    let failure: unknown
    client.on('error', (error: unknown) => void (failure ??= error))
    try {
      await client.connect()
    } catch (error) {
      client.disconnect()
      throw failure ?? error
    }
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
      `${OPS} measured ops per scenario after ${WARMUP} warm-up ops, best of ${ROUNDS} round(s); concurrency ${CONCURRENCY}; run ${RUN_ID}`,
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
        const best: (Stats | undefined)[] = []
        // Floor and stores take turns within each round, so a noisy neighbour hits both rather than one.
        for (let round = 0; round < ROUNDS; round++) {
          if (opened.floor) floor = better(floor, await measure(opened.floor, OPS, WARMUP, mode.concurrency, next))
          for (const [index, { name, store }] of opened.stores.entries()) {
            const stats = await measure(delivery(store), OPS, WARMUP, mode.concurrency, next)
            console.log(`  ${name}, ${mode.label}, round ${round + 1}: ${stats.opsPerSec.toFixed(0)} ops/s`)
            best[index] = better(best[index], stats)
          }
        }
        for (const [index, { name }] of opened.stores.entries())
          rows.push({ store: name, mode: mode.label, stats: best[index]!, floor, floorName: opened.floorName })
      }
    } finally {
      await opened.close()
    }
  }
  console.log(`\nclaim + complete per delivery (ms); floor = the bare round trip on the same client, same mode\n`)
  console.log(renderTable(rows))
  console.log(`\n${notes.map((note) => `  ${note}`).join('\n')}`)
  console.log(
    '\n  Statements per delivery (floor: 1): Redis 2 (claim script, complete script); PostgreSQL 2 (claim ' +
      'INSERT … ON CONFLICT, complete UPDATE); transactional on a pool 5 round trips (BEGIN + SET LOCAL, claim, ' +
      'SET LOCAL, complete, COMMIT) on a connection held throughout; PGlite transactional 4 (BEGIN, claim, ' +
      'complete, COMMIT), one session for every delivery.',
  )
}

await main()
