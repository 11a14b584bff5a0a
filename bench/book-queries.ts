/**
 * npm run bench:book-queries (after `npm run build`) — the operator's questions (PaymentBook.list and overview: the
 * console's pages, `fpx-collect payments list`) with BENCH_PAYMENTS payments in the book (default 100,000), on each
 * store, beside the cheapest question a book answers (find of one order_number) in the same run.
 *
 * The book is filled through the store's own API, as deliveries fill it: payments created over 30 days, most of
 * them paid, some failed, abandoned, pending approval or open, a share first seen in a result (never recorded by
 * the client), and some whose success handler fails. Then each question is asked BENCH_REPEAT times (default 15)
 * one at a time (PostgreSQL's table analyzed first, as autovacuum would have): every status, a search by order_number, exchange_number and e-mail, a day's window, a page far
 * down (the 21st, through the cursors before it), the overview of a day and of 30 days. Printed: the median and
 * the slowest of each, the median's ratio to find's, and each store's slowest median.
 *
 * Environment: BENCH_PAYMENTS, BENCH_REPEAT, BENCH_ONLY (comma-separated: memory, redis, postgres), REDIS_URL,
 * DATABASE_URL. An unreachable service is skipped with a warning, or fails the run when CI is set.
 */
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import pg from 'pg'
import type { ListQuery, OverviewWindow, PaymentBook, SweepLock } from '../src/contract/payment-book.js'
import type { ReceiverStore } from '../src/contract/store.js'
import type { PostgresStore } from '../src/stores/postgres/store.js'
import type { RedisStore } from '../src/stores/redis/store.js'
import { DATABASE_URL, REDIS_URL, redactUrl } from '../test/stores/services.js'
import { type Core, fromDist } from './dist.js'
import { envInteger } from './env.js'
import { median } from './stats.js'

const PAYMENTS = envInteger('BENCH_PAYMENTS', 100_000, 100)
const REPEAT = envInteger('BENCH_REPEAT', 15, 1)
const ONLY = new Set((process.env.BENCH_ONLY ?? 'memory,redis,postgres').split(',').map((name) => name.trim()))
const DAY = 86_400_000
/** Payments filled at a time: the stores' own concurrency, as many deliveries at once would give. */
const IN_FLIGHT = 32
const UID = 'bench-uid'

interface Subject {
  readonly name: string
  readonly store: ReceiverStore<unknown>
  /** What the backend does by itself soon after so many writes, done before the questions (PostgreSQL's analyze). */
  settled?(): Promise<void>
  close(): Promise<void>
}

/** What payment `i` is: its order, e-mail (ten payments share one), and what happens to it. */
function plan(i: number, now: number) {
  const roll = i % 100
  const fate =
    roll < 55 ? 'paid' : roll < 65 ? 'failed' : roll < 70 ? 'abandoned' : roll < 75 ? 'pending' : roll < 85 ? 'open' : roll < 97 ? 'seen' : roll < 99 ? 'failing' : 'failing-seen'
  return {
    orderNumber: `ORD-${String(i).padStart(7, '0')}`,
    exchangeNumber: `EX-${String(i).padStart(7, '0')}`,
    email: `buyer${Math.floor(i / 10)}@example.com`,
    createdAt: new Date(now - 30 * DAY + Math.floor((i / PAYMENTS) * 30 * DAY)),
    fate,
  }
}

/** Fills the book with PAYMENTS payments through the store's API. */
async function fill(store: ReceiverStore<unknown>, book: PaymentBook, lock: SweepLock, now: number): Promise<void> {
  const { token } = (await lock.acquire('bench', 10 * 60_000)) as { token: number }
  const one = async (i: number) => {
    const { orderNumber, exchangeNumber, email, createdAt, fate } = plan(i, now)
    const seen = { uid: UID, amountSen: 10_020, buyerEmail: email, buyerName: 'Buyer' }
    const lease = { exchangeNumber, state: 'succeeded' as const, owner: `bench-${i}`, orderNumber, uid: UID }
    if (fate === 'seen' || fate === 'failing-seen') {
      await store.claim({ ...lease, leaseMs: 60_000 })
      if (fate === 'seen') await store.complete({ ...lease, seen })
      else await store.release({ ...lease, failure: { message: 'Error: the warehouse API timed out', seen } })
      return
    }
    await book.record({ orderNumber, amountSen: 10_020, uid: UID, kind: 'form', createdAt, exchangeNumber: null, attached: { cart: `C-${i}` }, buyerEmail: email, buyerName: 'Buyer' })
    const ref = { orderNumber, uid: UID }
    if (fate === 'paid' || fate === 'failed' || fate === 'pending') await book.settle(ref, fate === 'paid' ? 'succeeded' : fate, exchangeNumber)
    if (fate === 'abandoned') await book.noteLookup(ref, { at: new Date(now), nextLookupAt: null, abandoned: true }, token)
    if (fate === 'failing') {
      await store.claim({ ...lease, leaseMs: 60_000 })
      await store.release({ ...lease, failure: { message: 'Error: the warehouse API timed out', seen } })
    }
  }
  let next = 0
  const worker = async () => {
    while (next < PAYMENTS) await one(next++)
  }
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker))
  await lock.release('bench', token)
}

interface Question {
  readonly name: string
  ask(book: PaymentBook): Promise<unknown>
}

function questions(now: number): Question[] {
  const middle = Math.floor(PAYMENTS / 2)
  const list = (name: string, query: ListQuery): Question => ({ name, ask: (book) => book.list(query) })
  const overview = (name: string, window: OverviewWindow): Question => ({ name, ask: (book) => book.overview(window) })
  return [
    { name: 'find (baseline)', ask: (book) => book.find(plan(middle, now).orderNumber) },
    list('list, newest 50', {}),
    list('list open', { status: 'open' }),
    list('list succeeded', { status: 'succeeded' }),
    list('list failed', { status: 'failed' }),
    list('list abandoned', { status: 'abandoned' }),
    list('list paid_failing', { status: 'paid_failing' }),
    list('search order_number', { search: plan(middle, now).orderNumber }),
    list('search exchange_number', { search: plan(middle + 1, now).exchangeNumber }),
    list('search e-mail', { search: plan(middle, now).email.toUpperCase() }),
    list('a day 15 days ago', { from: new Date(now - 15 * DAY), to: new Date(now - 14 * DAY) }),
    list('succeeded, a day 15 days ago', { status: 'succeeded', from: new Date(now - 15 * DAY), to: new Date(now - 14 * DAY) }),
    overview('overview, a day', { from: new Date(now - DAY), to: new Date(now) }),
    overview('overview, 30 days', { from: new Date(now - 30 * DAY), to: new Date(now) }),
  ]
}

async function time(ask: () => Promise<unknown>): Promise<number> {
  const t0 = process.hrtime.bigint()
  await ask()
  return Number(process.hrtime.bigint() - t0) / 1e6
}

async function run(subject: Subject): Promise<{ name: string; slowest: [string, number] }> {
  const book = subject.store.paymentBook?.() as PaymentBook
  const lock = subject.store.sweepLock?.() as SweepLock
  const now = Date.now()
  const filling = Date.now()
  await fill(subject.store, book, lock, now)
  process.stdout.write(`\n${subject.name}: ${PAYMENTS} payments filled in ${((Date.now() - filling) / 1000).toFixed(1)} s\n`)
  await subject.settled?.()
  // A page far down: the cursor of the 21st, walked to through the 20 before it (the walk is not timed).
  let cursor: string | undefined
  for (let page = 0; page < 20; page++) cursor = (await book.list({ limit: 50, ...(cursor === undefined ? {} : { cursor }) })).next ?? undefined
  const farDown: Question = { name: 'the 21st page', ask: (asked) => asked.list({ limit: 50, ...(cursor === undefined ? {} : { cursor }) }) }
  const rows: [string, number, number, string][] = []
  for (const question of [...questions(now), farDown]) {
    const ask = () => question.ask(book)
    // What it answers, so that a fast answer is seen to be a whole one: the payments of a page, the hours counted.
    const answer = (await ask()) as { payments?: unknown[]; perHour?: unknown[] } | undefined
    const size = answer?.payments?.length ?? (answer?.perHour === undefined ? (answer === undefined ? 0 : 1) : `${answer.perHour.length} h`)
    const times: number[] = []
    for (let i = 0; i < REPEAT; i++) times.push(await time(ask))
    rows.push([question.name, median(times), Math.max(...times), String(size)])
  }
  const baseline = rows[0]?.[1] ?? NaN
  process.stdout.write(`${'question'.padEnd(32)}${'answer'.padStart(8)}${'median ms'.padStart(11)}${'slowest ms'.padStart(12)}${'× find'.padStart(9)}\n`)
  for (const [name, mid, max, size] of rows)
    process.stdout.write(`${name.padEnd(32)}${size.padStart(8)}${mid.toFixed(2).padStart(11)}${max.toFixed(2).padStart(12)}${(mid / baseline).toFixed(1).padStart(9)}\n`)
  const slowest = rows.slice(1).reduce((worst, row) => (row[1] > worst[1] ? row : worst))
  return { name: subject.name, slowest: [slowest[0], slowest[1]] }
}

async function subjects(core: Core): Promise<Subject[]> {
  const found: Subject[] = []
  const unreachable = (what: string, url: string, error: unknown) => {
    const message = `${what} at ${redactUrl(url)} is not reachable (${(error as Error).message}): skipped`
    if (process.env.CI !== undefined) throw new Error(message)
    process.stdout.write(`warning: ${message}\n`)
  }
  if (ONLY.has('memory')) found.push({ name: 'memory', store: core.memoryStore() as ReceiverStore<unknown>, close: async () => {} })
  if (ONLY.has('redis')) {
    const { redisStore } = await fromDist<{ redisStore: (options: { client: Redis; prefix: string; inspect: boolean }) => RedisStore }>('redis')
    const client = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 })
    try {
      await client.connect()
      const prefix = `fpx-bench-book:${randomUUID()}:`
      found.push({
        name: 'Redis',
        store: redisStore({ client, prefix, inspect: false }),
        async close() {
          let cursor = '0'
          do {
            const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
            if (keys.length > 0) await client.del(...keys)
            cursor = next
          } while (cursor !== '0')
          await client.quit()
        },
      })
    } catch (error) {
      unreachable('Redis', REDIS_URL, error)
      client.disconnect()
    }
  }
  if (ONLY.has('postgres')) {
    const { postgresStore } = await fromDist<{ postgresStore: (options: { client: pg.Pool; table: string; pruneEvery: number }) => PostgresStore }>('postgres')
    const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 8 })
    pool.on('error', () => {})
    try {
      await pool.query('SELECT 1')
      const table = `fpx_bench_book_${randomUUID().replace(/-/g, '').slice(0, 12)}`
      const store = postgresStore({ client: pool, table, pruneEvery: 0 })
      await store.migrate()
      found.push({
        name: 'PostgreSQL',
        store,
        // Autovacuum analyzes a table that grew this much within a minute or so; the planner needs its figures.
        settled: async () => void (await pool.query(`ANALYZE "${table}_book"`)),
        async close() {
          for (const suffix of ['', '_inbox', '_timeline', '_book', '_locks']) await pool.query(`DROP TABLE IF EXISTS "${table}${suffix}"`)
          await pool.end()
        },
      })
    } catch (error) {
      unreachable('PostgreSQL', DATABASE_URL, error)
      await pool.end()
    }
  }
  return found
}

const core = await fromDist<Core>('index')
const results: { name: string; slowest: [string, number] }[] = []
for (const subject of await subjects(core)) {
  try {
    results.push(await run(subject))
  } finally {
    await subject.close()
  }
}
process.stdout.write(`\nThe slowest question at ${PAYMENTS} payments (median of ${REPEAT}):\n`)
for (const { name, slowest } of results) process.stdout.write(`  ${name.padEnd(12)}${slowest[1].toFixed(2).padStart(9)} ms  ${slowest[0]}\n`)
