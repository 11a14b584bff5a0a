/**
 * npm run bench:inbox — inbox mode on the project's own tables and keys next to the well-kept queue libraries it
 * could have been built on (issue 11), on the real services, same machine, same run:
 *   ours, PostgreSQL     createReceiver({ store: postgresStore({ client: pg Pool }), inbox: { concurrency } })
 *   pg-boss 10 + claim   pg-boss as the queue, its job handler a plain receiver's handleTrusted(fields) on
 *                        postgresStore (claim → handlers → complete), pg-boss on the store's pool (`db`)
 *   pg-boss 10           boss.send() with a job id derived from exchange_number:state, boss.work() loops
 *   ours, Redis          createReceiver({ store: redisStore({ client: ioredis }), inbox: { concurrency } })
 *   BullMQ + claim       BullMQ as the queue, its job handler handleTrusted(fields) on redisStore
 *   BullMQ               Queue.add() with jobId exchange_number-state, one Worker with that concurrency
 * The "+ claim" pair is the decision issue 11 asks for: an inbox built on a library must still run every result
 * through the store's claim/complete (once per (exchange_number, state), no regression, transactional
 * completion), so what it would replace is only our enqueue/take/finish (bench/inbox-queues-claim.ts says why
 * handleTrusted() and not a hand-written claim/complete). The library alone is what its queue costs without that.
 * Each run feeds BENCH_RESULTS fresh signed callbacks (a new exchange_number each) from BENCH_CONCURRENCY
 * producers at once while the workers, BENCH_CONCURRENCY handlers in total, drain them with a trivial async
 * handler. Ours goes through the public API: receiver.handle() of the signed body (verify, then write the inbox;
 * it answers 'queued'), the receiver's in-process worker runs the handler. The libraries' producers verify the
 * same body with receiver.verify() of a plain receiver and send its fields, so both sides pay for the HMAC.
 * Timeline and telemetry are off in ours (the libraries have neither).
 *
 * Measured per run: enqueue rate (results accepted per second, from the first enqueue to the last answer), drain
 * time (from the first enqueue to the last handler run), throughput (results / drain time) and the latency from
 * an enqueue's start to its handler. Each handler must run exactly once, or the run fails.
 *
 * Not the same work, library alone: ours runs every result through the store's claim/complete per
 * (exchange_number, state) (once only, ever; no regression: a lower state never runs after a higher one; with
 * transactional: true, not used here, the handlers' writes commit with the completion), re-verifies the stored
 * fields before the handlers, and takes entries so that one exchange_number's arrive in order. pg-boss and BullMQ
 * alone only dedupe on enqueue (their job id) and run the handler; "+ claim" adds the claim/complete and the
 * re-check of the fields, not the in-order taking (neither library's open-source queue has it). In statements per
 * result on PostgreSQL: ours 4 (enqueue INSERT, claim INSERT, complete UPDATE, finish DELETE) plus one take per
 * few results; pg-boss 1 (send) plus one fetch and one complete per batch, the complete not awaited by its worker
 * loop; pg-boss + claim 3 (send, claim INSERT, complete UPDATE) plus the same per batch. pg-boss 10's
 * singletonKey alone dedupes nothing in a standard queue, so the job id (a UUID, as pg-boss requires, derived
 * from exchange_number:state) does it, for as long as the job row is kept; BullMQ's jobId likewise, while the
 * job is kept (completed ones are, by default).
 *
 * Environment: BENCH_RESULTS (per system and round, default 1000; 1500 when there were four systems),
 * BENCH_WARMUP (untimed, first round, default 200), BENCH_CONCURRENCY (producers, and handlers in total, default
 * 16), BENCH_ROUNDS (default 3; systems take turns, medians reported), BENCH_PGBOSS_BATCH (pg-boss batchSize,
 * default 16: one work() loop of 16; see bench/inbox-queues-systems.ts), BENCH_POOL (connections per pg pool, ours
 * and pg-boss's, default 20; pg-boss + claim has one pool for both), BENCH_ONLY (comma-separated: ours-pg,
 * pg-boss-claim, pg-boss, ours-redis, bullmq-claim, bullmq), BENCH_VERBOSE, DATABASE_URL, REDIS_URL.
 * Six systems at the defaults take 30–60 s on 2 cores at load 2–10.
 */
import { randomBytes } from 'node:crypto'
import { availableParallelism, loadavg } from 'node:os'
import { DATABASE_URL, REDIS_URL, redactUrl } from '../test/stores/services.js'
import { type Core, fromDist } from './dist.js'
import { bullmqClaim, pgBossClaim } from './inbox-queues-claim.js'
import { bullmq, oursPostgres, oursRedis, pgBoss, type Setup, type System } from './inbox-queues-systems.js'
import { signedCallbacks } from './signed-callbacks.js'
import { envInteger } from './env.js'
import { median } from './stats.js'

const core = await fromDist<Core>('index')
const { postgresStore } = await fromDist<typeof import('../src/stores/postgres/store.js')>('postgres')
const { redisStore } = await fromDist<typeof import('../src/stores/redis/store.js')>('redis')

const RESULTS = envInteger('BENCH_RESULTS', 1000, 1)
const WARMUP = envInteger('BENCH_WARMUP', 200, 0)
const CONCURRENCY = envInteger('BENCH_CONCURRENCY', 16, 1)
const ROUNDS = envInteger('BENCH_ROUNDS', 3, 1)
const PGBOSS_BATCH = envInteger('BENCH_PGBOSS_BATCH', 16, 1)
const POOL = envInteger('BENCH_POOL', 20, 2)
const RUN_TIMEOUT_MS = 60_000
const checksumToken = randomBytes(32).toString('hex')

const SYSTEMS = [
  { key: 'ours-pg', open: oursPostgres },
  { key: 'pg-boss-claim', open: pgBossClaim },
  { key: 'pg-boss', open: pgBoss },
  { key: 'ours-redis', open: oursRedis },
  { key: 'bullmq-claim', open: bullmqClaim },
  { key: 'bullmq', open: bullmq },
]

interface Sink {
  start: Float64Array
  index: Map<string, number>
  latencies: number[]
  lastAt: number
  done(): void
  problem?: Error
}
let sink: Sink | undefined

const setup: Setup = {
  core,
  postgresStore,
  redisStore,
  checksumToken,
  concurrency: CONCURRENCY,
  poolMax: POOL,
  pgBossBatch: PGBOSS_BATCH,
  runId: randomBytes(4).toString('hex'),
  databaseUrl: DATABASE_URL,
  redisUrl: REDIS_URL,
  handled(exchangeNumber) {
    const now = performance.now()
    const at = sink?.index.get(exchangeNumber)
    if (sink === undefined || at === undefined) {
      // A handler ran for a result of no run under way (twice, or late): fail the run it lands in, or the next.
      console.error(`!! a handler ran for ${exchangeNumber}, which no run is waiting for`)
      process.exitCode = 1
      return
    }
    sink.index.delete(exchangeNumber)
    sink.latencies.push(now - sink.start[at]!)
    sink.lastAt = now
    if (sink.index.size === 0) sink.done()
  },
}

interface Result {
  enqueuePerSec: number
  drainSeconds: number
  throughput: number
  p50: number
  p99: number
}

function quantile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!
}

const exchangeOf = (body: Buffer) => new URLSearchParams(body.toString()).get('exchange_number')!

async function run(system: System, bodies: Buffer[]): Promise<Result> {
  const exchanges = bodies.map(exchangeOf)
  let finished!: () => void
  const drained = new Promise<void>((resolve) => (finished = resolve))
  const current: Sink = { start: new Float64Array(bodies.length), index: new Map(exchanges.map((x, i) => [x, i])), latencies: [], lastAt: 0, done: () => finished() }
  sink = current
  let next = 0
  const t0 = performance.now()
  const producer = async () => {
    while (next < bodies.length) {
      const i = next++
      current.start[i] = performance.now()
      await system.enqueue(bodies[i]!)
    }
  }
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, bodies.length) }, producer))
  const enqueued = performance.now()
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${system.name}: ${current.index.size} of ${bodies.length} handlers had not run after ${RUN_TIMEOUT_MS / 1000} s`)), RUN_TIMEOUT_MS)
  })
  try {
    await Promise.race([drained, timeout])
  } finally {
    clearTimeout(timer)
    sink = undefined
  }
  // Let completions behind the last handler land before the next system starts (untimed).
  await new Promise((resolve) => setTimeout(resolve, 300))
  const sorted = current.latencies.sort((a, b) => a - b)
  const drainSeconds = (current.lastAt - t0) / 1000
  return {
    enqueuePerSec: bodies.length / ((enqueued - t0) / 1000),
    drainSeconds,
    throughput: bodies.length / drainSeconds,
    p50: quantile(sorted, 0.5),
    p99: quantile(sorted, 0.99),
  }
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)))
  const line = (row: string[]) => row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ')
  return [line(rows[0]!), widths.map((width) => '-'.repeat(width)).join('  '), ...rows.slice(1).map(line)].join('\n')
}

async function main(): Promise<void> {
  const only = process.env.BENCH_ONLY?.split(',').map((name) => name.trim())
  const chosen = SYSTEMS.filter((system) => only === undefined || only.includes(system.key))
  if (chosen.length === 0) throw new Error(`BENCH_ONLY matches none of: ${SYSTEMS.map((system) => system.key).join(', ')}`)
  const loadBefore = loadavg()[0]!
  const bodies = signedCallbacks(chosen.length * (RESULTS * ROUNDS + WARMUP), checksumToken)
  let taken = 0
  const take = (count: number) => bodies.slice(taken, (taken += count))
  console.log(
    `node ${process.version}, ${availableParallelism()} CPU, load average ${loadBefore.toFixed(1)}; ${RESULTS} results per system and round, ` +
      `${CONCURRENCY} producers and ${CONCURRENCY} handlers, ${ROUNDS} round(s) after ${WARMUP} warm-up results; PostgreSQL ${redactUrl(DATABASE_URL)}, Redis ${redactUrl(REDIS_URL)}`,
  )
  const systems: System[] = []
  try {
    for (const { open } of chosen) systems.push(await open(setup))
    for (const system of systems) if (WARMUP > 0) await run(system, take(WARMUP))
    const results: Result[][] = systems.map(() => [])
    for (let round = 0; round < ROUNDS; round++)
      for (let turn = 0; turn < systems.length; turn++) {
        const at = (round + turn) % systems.length
        const result = await run(systems[at]!, take(RESULTS))
        results[at]!.push(result)
        if (process.env.BENCH_VERBOSE)
          console.log(`  round ${round + 1}, ${systems[at]!.name}: ${result.throughput.toFixed(0)} results/s, drain ${result.drainSeconds.toFixed(2)} s`)
      }
    if (process.exitCode === 1) throw new Error('a handler ran for a result no run was waiting for (see above)')
    const pick = (index: number, field: keyof Result) => median(results[index]!.map((result) => result[field]))
    const rows = [['system', 'enqueue/s', 'drain s', 'results/s', 'p50 ms', 'p99 ms']]
    for (const [index, system] of systems.entries())
      rows.push([
        system.name,
        pick(index, 'enqueuePerSec').toFixed(0),
        pick(index, 'drainSeconds').toFixed(2),
        pick(index, 'throughput').toFixed(0),
        pick(index, 'p50').toFixed(1),
        pick(index, 'p99').toFixed(1),
      ])
    console.log(`\nmedians of ${ROUNDS} round(s); results/s = results / drain time (first enqueue to last handler run); latency = enqueue start to handler\n`)
    console.log(table(rows))
    console.log(`\n${systems.map((system) => `  ${system.name}: ${system.about}`).join('\n')}`)
    console.log(`  load average ${loadBefore.toFixed(1)} before, ${loadavg()[0]!.toFixed(1)} after`)
    // Ratios last: each round of ours over the library's round of the same turn, median of those.
    // ours / (library + claim) is the decision of issue 11 (an inbox built on the library still claims and
    // completes every result); ours / library alone is the queue's cost without that work.
    console.log(`\nours / library by end-to-end throughput (and by enqueue rate), median of ${ROUNDS} paired round(s):`)
    for (const [mine, theirs] of [
      ['ours, PostgreSQL', 'pg-boss 10 + claim'],
      ['ours, Redis', 'BullMQ + claim'],
      ['ours, PostgreSQL', 'pg-boss 10'],
      ['ours, Redis', 'BullMQ'],
    ] as const) {
      const a = systems.findIndex((system) => system.name === mine)
      const b = systems.findIndex((system) => system.name === theirs)
      if (a < 0 || b < 0) continue
      const paired = (field: keyof Result) => median(results[a]!.map((result, round) => result[field] / results[b]![round]![field]))
      console.log(`  ${`${mine} / ${theirs}`.padEnd(38)} ${paired('throughput').toFixed(2)}x  (enqueue ${paired('enqueuePerSec').toFixed(2)}x)`)
    }
  } finally {
    for (const system of systems) await system.close().catch((error: unknown) => console.error(`closing ${system.name}:`, error))
  }
}

await main()
