/**
 * npm run bench:fleet — a flash sale on a fleet (issue 37): one emulator process, three Express receiver processes
 * sharing one store, and each payment delivered three times, each to a different process: the callback (posted
 * by the emulator), the same callback again and the buyer's redirect (both posted by this process, the load
 * generator; fleet-load.ts). Columns, measured one after the other in the same run on the built package:
 *   Redis                      signature only (redisStore);
 *   Redis + confirmation       every new payment state confirmed through the emulator's API;
 *   PostgreSQL + confirmation  postgresStore on a pg Pool per process;
 *   naive                      express.urlencoded + sorted-values HMAC-SHA256 + Redis SET NX, on the same fleet.
 * For each, the offered rate steps up (open loop, a fixed rate per step) until a rate is not held twice in a row:
 * p99 > 1 s, an error (any answer but 2xx to a callback or 303/200 to a redirect, a failure of the emulator's API,
 * a callback left unsettled), deliveries going out slower than offered (the emulator fell behind), or a handler
 * run lost or doubled; then two halvings between the last rate held and the first not held (fleet-search.ts). The
 * columns take turns, one step each per round, so a burst of other work on the machine falls on every column. Each
 * step starts from an emulator reset, so its lookups see one step's payments, not the whole run's.
 *
 * Environment: BENCH_STEP_SECONDS (5), BENCH_WARMUP (seconds at the first rate before a column's steps, 2),
 * BENCH_COLUMNS (comma-separated: redis, redis-confirm, postgres-confirm, naive), BENCH_START_RATE (150),
 * BENCH_RATE_STEP (150), BENCH_MAX_RATE (3000), BENCH_REFINE (halvings, 2), BENCH_RETRY (how many times a step not
 * held is measured again before the search takes its rate as the limit, 1), BENCH_REFERENCE_RATE (300, where
 * latency is read; store work is read at the first rate), BENCH_RATES (a comma-separated list instead of the
 * search), BENCH_SETTLE (seconds to wait for the emulator's callback retries, 20), REDIS_URL, DATABASE_URL (the
 * bench creates and uses the database fpx_fleet_bench beside it, so its transaction counts are its own),
 * BENCH_CPU_PROF (a directory: each child writes a CPU profile there; profiling slows them, so read shares, not rates).
 */
import { randomBytes } from 'node:crypto'
import { availableParallelism, loadavg } from 'node:os'
import type { FpxClient } from '../src/client/index.js'
import { DATABASE_URL, REDIS_URL, redactUrl } from '../test/stores/services.js'
import { ioredis } from './connect-redis.js'
import { fromDist } from './dist.js'
import { envInteger, envNumber } from './env.js'
import { type Child, processSample, startChild } from './fleet-child.js'
import type { EmulatorReady } from './fleet-emulator.js'
import { closeLoad, type FleetTarget } from './fleet-load.js'
import type { ColumnKind, ReceiverConfig } from './fleet-receiver.js'
import { COLUMN_TITLES, commandBreakdown, renderTable, type Step, stepLine } from './fleet-report.js'
import { columnResult, type RateSearch, searchRates } from './fleet-search.js'
import { measureStep, type StepContext } from './fleet-step.js'
import { benchDatabase, pg } from './fleet-store.js'

const STEP_SECONDS = envNumber('BENCH_STEP_SECONDS', 5, 0.5)
const WARMUP = envNumber('BENCH_WARMUP', 2, 0)
const START_RATE = envInteger('BENCH_START_RATE', 150, 3)
const RATE_STEP = envInteger('BENCH_RATE_STEP', 150, 3)
const MAX_RATE = envInteger('BENCH_MAX_RATE', 3000, 3)
const REFINE = envInteger('BENCH_REFINE', 2, 0)
const RETRY = envInteger('BENCH_RETRY', 1, 0)
const REFERENCE_RATE = envInteger('BENCH_REFERENCE_RATE', 300, 3)
const SETTLE = envNumber('BENCH_SETTLE', 20, 1)
const RATES = process.env.BENCH_RATES?.split(',').map((text) => Number(text.trim()))
const COLUMNS = (process.env.BENCH_COLUMNS ?? 'redis,redis-confirm,postgres-confirm,naive').split(',').map((name) => name.trim()) as ColumnKind[]
for (const name of COLUMNS) if (!(name in COLUMN_TITLES)) throw new Error(`BENCH_COLUMNS: unknown column ${name}; use ${Object.keys(COLUMN_TITLES).join(', ')}`)
if (RATES?.some((rate) => !(rate >= 3))) throw new Error('BENCH_RATES must be deliveries per second, each at least 3')

const { DEMO_MERCHANT } = await fromDist<typeof import('../src/emulator/index.js')>('emulator')
const { createClient } = await fromDist<typeof import('../src/client/index.js')>('client')
const { postgresStore } = await fromDist<typeof import('../src/stores/postgres/store.js')>('postgres')
const credentials = DEMO_MERCHANT.credentials?.[0] as { uid: string; authToken: string; checksumToken: string }

const runId = randomBytes(3).toString('hex')
const redis = await ioredis(REDIS_URL)
const admin = new pg.Client({ connectionString: DATABASE_URL })
await admin.connect()
const database = await benchDatabase(DATABASE_URL, admin)
const bench = new pg.Client({ connectionString: database.url })
await bench.connect()
const { child: emulator, ready: emulatorReady } = await startChild<EmulatorReady>('./fleet-emulator.ts', {}, 'emulator')
const client: FpxClient = createClient({ environment: { baseUrl: emulatorReady.baseUrl }, ...credentials, logger: false })

console.log(
  `Node ${process.version}, ${availableParallelism()} CPUs; ${STEP_SECONDS} s per step, open loop, 3 deliveries per payment ` +
    `(callback from the emulator, duplicate callback and redirect from the load generator), each to another of 3 Express processes\n` +
    `Redis ${redactUrl(REDIS_URL)}, PostgreSQL database ${database.name}${database.own ? ' (the bench\'s own)' : ''}; run ${runId}\n`,
)

// Every process of the fleet competes for the same CPUs as whatever else runs: a busy machine lowers every column.
const [load] = loadavg()
if ((load as number) > availableParallelism() / 2)
  console.warn(`The machine is already busy (load average ${(load as number).toFixed(1)} on ${availableParallelism()} CPUs): the rates will be lower and noisier than on a quiet one.\n`)

async function startFleet(kind: ColumnKind): Promise<{ fleet: Child[]; target: FleetTarget; config: ReceiverConfig }> {
  const config: ReceiverConfig = {
    kind,
    prefix: `fpx-fleet:${runId}:${kind}:`,
    table: `fleet_${runId}_${kind.replaceAll('-', '_')}`,
    applicationName: `fpx-fleet-${runId}-${kind}`,
    redisUrl: REDIS_URL,
    databaseUrl: database.url,
    emulatorBaseUrl: emulatorReady.baseUrl,
    credentials,
  }
  if (kind === 'postgres-confirm') {
    // Created once here, not raced by three processes on their first delivery.
    const pool = new pg.Pool({ connectionString: database.url })
    await postgresStore({ client: pool, table: config.table }).migrate()
    await pool.end()
  }
  const started = await Promise.all(
    [1, 2, 3].map((n) => startChild<{ port: number }>('./fleet-receiver.ts', { FLEET_RECEIVER: JSON.stringify(config) }, `receiver ${n} (${kind})`)),
  )
  const fleet = started.map(({ child }) => child)
  const target = { emulatorUrl: emulatorReady.url, baseUrl: emulatorReady.baseUrl, receivers: started.map(({ ready }) => `http://127.0.0.1:${ready.port}`), client }
  return { fleet, target, config }
}

async function cleanUp(config: ReceiverConfig): Promise<void> {
  let cursor = '0'
  do {
    const [next, keys] = (await redis.call('SCAN', cursor, 'MATCH', `${config.prefix}*`, 'COUNT', '1000')) as [string, string[]]
    cursor = next
    if (keys.length > 0) await redis.call('UNLINK', ...keys)
  } while (cursor !== '0')
  const tables = await bench.query<{ name: string }>("SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE $1", [`${config.table}%`])
  for (const { name } of tables.rows) await bench.query(`DROP TABLE IF EXISTS "${name}" CASCADE`)
}

interface Column {
  kind: ColumnKind
  context: StepContext
  config: ReceiverConfig
  search: RateSearch
  next: IteratorResult<number, void>
  steps: Step[]
}

async function openColumn(kind: ColumnKind): Promise<Column> {
  const { fleet, target, config } = await startFleet(kind)
  const context: StepContext = { kind, fleet, emulator, target, redis, admin, bench, database: database.name, config, stepSeconds: STEP_SECONDS, settleSeconds: SETTLE }
  // Unrecorded: the processes' first seconds compile their code paths and open their connections.
  if (WARMUP > 0) await measureStep({ ...context, stepSeconds: WARMUP }, START_RATE, `${runId}-${kind}-warm`)
  const search = searchRates({ startRate: START_RATE, rateStep: RATE_STEP, maxRate: MAX_RATE, refine: REFINE, retry: RETRY, referenceRate: REFERENCE_RATE, rates: RATES })
  return { kind, context, config, search, next: search.next(), steps: [] }
}

async function closeColumn(column: Column): Promise<void> {
  await Promise.all(column.context.fleet.map((child) => child.close()))
  await cleanUp(column.config)
}

const started = performance.now()
processSample()
const columns: Column[] = []
try {
  // Every fleet stays up for the whole run (idle between its turns), so that the columns can take turns.
  for (const kind of COLUMNS) columns.push(await openColumn(kind))
  for (let round = 1; columns.some((column) => !column.next.done); round++) {
    for (const column of columns) {
      if (column.next.done) continue
      const step = await measureStep(column.context, column.next.value, `${runId}-${column.kind}-${round}`)
      console.log(stepLine(column.kind, step))
      column.steps.push(step)
      column.next = column.search.next(step)
    }
  }
} finally {
  for (const column of columns) await closeColumn(column)
  const log = await emulator.call<{ count: number; first: string[] }>('log')
  if (log.count > 0) console.log(`The emulator logged ${log.count} lines, first: ${log.first.join(' | ')}`)
  await emulator.close()
  closeLoad()
  redis.disconnect()
  await Promise.all([admin.end(), bench.end()])
}

const results = columns.map((column) => columnResult(column.kind, column.steps, REFERENCE_RATE))
for (const result of results)
  if (result.atFirst?.store?.kind === 'redis') console.log(`${COLUMN_TITLES[result.name]}: Redis commands per delivery at ${result.atFirst.rate}/s: ${commandBreakdown(result.atFirst.store)}`)
console.log(`\n${renderTable(results, REFERENCE_RATE)}\n`)
console.log(
  `${((performance.now() - started) / 60_000).toFixed(1)} min. Latency: the emulator times its callbacks' first attempts, the load generator the duplicates and ` +
    `redirects, each from its send to the end of the answer. Round trips: commands (Redis) or statements (PostgreSQL) sent by ` +
    `the receivers' own clients; Redis commands count those run inside scripts (INFO commandstats, the whole server's); ` +
    `transactions from pg_stat_database of the bench's database; rows read: seq_tup_read + idx_tup_fetch of the column's tables, ` +
    `and in the database: its tup_returned + tup_fetched, catalog lookups and the bench's own statistics queries included. ` +
    `Machine busy: all CPUs, other users' work included.`,
)
if (results.some((column) => column.best === undefined)) process.exitCode = 1
