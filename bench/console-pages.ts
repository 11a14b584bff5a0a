/**
 * npm run bench:console — how long the operator's console takes to answer each page with 100,000 payments in the
 * store, as mounted in an app (fpxConsole from fpx-collect/web over a receiver, the built package): the overview
 * (24 hours and 30 days), the payments list (first page, a later page, by status, "paid, handler failing"), a search
 * by order number, by exchange_number and by e-mail, a payment's page, the dead letters. Beside each, the baseline
 * in the same run: one `payments.find()` of a payment, the cheapest question the book answers.
 *
 * The store is seeded through its own book (record, settle, a sweep lock's abandon, a claim released with a
 * handler failure): payments created over the last 30 days, 60% paid, 15% failed, 5% abandoned, the rest open, one
 * open payment in a hundred with a failing handler; 5,000 buyers' e-mails.
 *
 * Environment: BENCH_PAYMENTS (default 100000), BENCH_ROUNDS (default 5: each page is asked that many times after one
 * untimed ask, the median reported), BENCH_ONLY (comma-separated: memory, redis, postgres), REDIS_URL, DATABASE_URL.
 * Needs a build (npm run build). An unreachable service is skipped with a warning.
 */
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import pg from 'pg'
import type { PaymentState } from '../src/core/payment.js'
import type { ReceiverStore } from '../src/contract/store.js'
import { DATABASE_URL, REDIS_URL, redactUrl } from '../test/stores/services.js'
import { type Core, fromDist } from './dist.js'
import { envInteger } from './env.js'
import { median } from './stats.js'

const core = await fromDist<Core>('index')
const { fpxConsole } = await fromDist<typeof import('../adapters/web.js')>('web')
const { redisStore } = await fromDist<typeof import('../src/stores/redis/store.js')>('redis')
const { postgresStore } = await fromDist<typeof import('../src/stores/postgres/store.js')>('postgres')

const PAYMENTS = envInteger('BENCH_PAYMENTS', 100_000, 100)
const ROUNDS = envInteger('BENCH_ROUNDS', 5, 1)
const ONLY = process.env.BENCH_ONLY?.split(',').map((name) => name.trim())
const UID = '0c0ffee0-d3e0-4a11-8f00-00000000d3e0'
const TOKEN = 'ab'.repeat(32)
const DAY = 86_400_000
const SEED_CONCURRENCY = 32

const order = (i: number) => `BENCH-${String(i).padStart(7, '0')}`
const exchange = (i: number) => `BNCH${String(i).padStart(10, '0')}`
const email = (i: number) => `buyer${i % 5000}@example.com`

/** What each payment becomes, spread evenly over the numbers. */
function fate(i: number): 'succeeded' | 'failed' | 'abandoned' | 'open' | 'paid_failing' {
  const slot = i % 100
  if (slot < 60) return 'succeeded'
  if (slot < 75) return 'failed'
  if (slot < 80) return 'abandoned'
  return slot === 99 ? 'paid_failing' : 'open'
}

async function inTurns(count: number, work: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0
  const worker = async () => {
    for (let i = next++; i < count; i = next++) await work(i)
  }
  await Promise.all(Array.from({ length: SEED_CONCURRENCY }, worker))
}

async function seed(store: ReceiverStore<unknown>): Promise<void> {
  const book = store.paymentBook?.()
  const lock = store.sweepLock?.()
  if (book === undefined || lock === undefined) throw new Error('the store has no payment book or sweep lock')
  const held = await lock.acquire('bench', 10 * 60_000)
  if (held === undefined) throw new Error('could not take the sweep lock')
  const now = Date.now()
  await inTurns(PAYMENTS, async (i) => {
    const orderNumber = order(i)
    const ref = { uid: UID, orderNumber }
    await book.record({
      orderNumber,
      amountSen: 1000 + (i % 50_000),
      uid: UID,
      kind: 'payment',
      // Spread over 30 days, newest last.
      createdAt: new Date(now - 30 * DAY + Math.floor((i / PAYMENTS) * 30 * DAY)),
      exchangeNumber: exchange(i),
      attached: {},
      buyerEmail: email(i),
      buyerName: `Buyer ${i % 5000}`,
    })
    const kind = fate(i)
    if (kind === 'succeeded' || kind === 'failed') await book.settle(ref, kind as PaymentState, exchange(i))
    else if (kind === 'abandoned') await book.noteLookup(ref, { at: new Date(), nextLookupAt: null, abandoned: true }, held.token)
    else if (kind === 'paid_failing') {
      const lease = { exchangeNumber: exchange(i), state: 'succeeded' as const, owner: `bench-${i}`, orderNumber, uid: UID }
      const claim = await store.claim({ ...lease, leaseMs: 30_000 })
      if (claim.outcome !== 'claimed') throw new Error(`claim of ${orderNumber}: ${claim.outcome}`)
      await store.release({ ...lease, failure: { message: 'the ERP refused the order: its ledger is locked' } } as Parameters<typeof store.release>[0])
    }
  })
  await lock.release('bench', held.token)
}

interface Measured {
  readonly page: string
  readonly ms: number
  readonly status: number
}

async function measurePages(store: ReceiverStore<unknown>): Promise<{ baseline: number; pages: Measured[] }> {
  // In inbox mode where the store keeps one (its workers off: nothing is handled here), so the dead letters page asks it.
  const inbox = typeof store.openInbox === 'function' ? { inbox: { work: false } } : {}
  const receiver = core.createReceiver({ signatureOnly: true, checksumToken: TOKEN, store, sweep: false, logger: false as never, ...inbox })
  const handler = fpxConsole(receiver, { authorize: () => 'bench', basePath: '/console' })
  const middle = Math.floor(PAYMENTS / 2)
  const failing = Array.from({ length: PAYMENTS }, (_, i) => i).find((i) => fate(i) === 'paid_failing') ?? 99
  const firstPage = await handler(new Request('http://bench/console/payments'))
  const next = /href="\/console\/payments\?cursor=([^"]+)"/.exec(await firstPage.text())?.[1]
  const paths: [string, string][] = [
    ['overview, 24 hours', '/console/'],
    ['overview, 30 days', '/console/?window=30d'],
    ['payments, first page', '/console/payments'],
    ['payments, second page', `/console/payments?cursor=${next ?? ''}`],
    ['payments, open', '/console/payments?status=open'],
    ['payments, paid but handler failing', '/console/payments?status=paid_failing'],
    ['payments, created on one day', `/console/payments?from=${new Date(Date.now() - 10 * DAY).toISOString().slice(0, 10)}&to=${new Date(Date.now() - 10 * DAY).toISOString().slice(0, 10)}`],
    ['search by order number (redirect)', `/console/payments?q=${order(middle)}`],
    ['search by exchange_number (redirect)', `/console/payments?q=${exchange(middle)}`],
    ['search by e-mail (20 payments at 100,000)', `/console/payments?q=${encodeURIComponent(email(middle))}`],
    ['a payment’s page', `/console/payment?order=${order(failing)}`],
    ['dead letters', '/console/inbox'],
  ]
  const time = async (run: () => Promise<unknown>): Promise<number> => {
    await run()
    const runs: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const started = performance.now()
      await run()
      runs.push(performance.now() - started)
    }
    return median(runs)
  }
  const baseline = await time(() => receiver.payments.find(order(middle)))
  // The overview's questions to the book, each on its own: where its time goes.
  const now = Date.now()
  const questions: [string, () => Promise<unknown>][] = [
    ['  book: overview(), 24 hours', () => receiver.payments.overview({ from: new Date(now - DAY), to: new Date(now) })],
    ['  book: overview(), 30 days', () => receiver.payments.overview({ from: new Date(now - 30 * DAY), to: new Date(now) })],
    ['  book: list({ status: paid_failing, limit: 10 })', () => receiver.payments.list({ status: 'paid_failing', limit: 10 })],
    ['  book: listOpen({ limit: 10 })', () => receiver.payments.listOpen({ limit: 10 })],
    ['  book: sweepStatus()', () => receiver.payments.sweepStatus()],
  ]
  const pages: Measured[] = []
  for (const [page, ask] of questions) pages.push({ page, ms: await time(ask), status: 0 })
  for (const [page, path] of paths) {
    let status = 0
    const ms = await time(async () => {
      const answer = await handler(new Request(`http://bench${path}`))
      status = answer.status
      const text = await answer.text()
      if (answer.status >= 500 || text.includes('Could not read') || text.includes('could not be read')) throw new Error(`${page}: ${answer.status} ${text.slice(0, 300)}`)
    })
    pages.push({ page, ms, status })
  }
  await receiver.close()
  return { baseline, pages }
}

function report(name: string, about: string, seeded: number, result: { baseline: number; pages: Measured[] }): void {
  console.log(`\n${name}: ${about}; ${PAYMENTS.toLocaleString('en')} payments seeded in ${(seeded / 1000).toFixed(1)} s`)
  console.log(`  ${'baseline: payments.find()'.padEnd(52)} ${result.baseline.toFixed(2).padStart(9)} ms`)
  for (const { page, ms, status } of result.pages)
    console.log(`  ${(status === 0 ? page : `${page} (${status})`).padEnd(52)} ${ms.toFixed(2).padStart(9)} ms  ×${(ms / result.baseline).toFixed(1)}`)
  const slowest = result.pages.filter((page) => page.status !== 0).reduce((a, b) => (b.ms > a.ms ? b : a))
  console.log(`  slowest: ${slowest.page}, ${slowest.ms.toFixed(1)} ms`)
}

interface Opened {
  readonly store: ReceiverStore<unknown>
  readonly about: string
  /** After seeding: what the backend would have done by itself by then (PostgreSQL's autovacuum gathers statistics). */
  readonly settle?: () => Promise<void>
  close(): Promise<void>
}

async function run(name: string, open: () => Promise<Opened>): Promise<void> {
  if (ONLY !== undefined && !ONLY.includes(name)) return
  let opened
  try {
    opened = await open()
  } catch (error) {
    console.warn(`${name}: skipped (${(error as Error).message})`)
    return
  }
  try {
    const started = performance.now()
    await seed(opened.store)
    const seeded = performance.now() - started
    await opened.settle?.()
    report(name, opened.about, seeded, await measurePages(opened.store))
  } finally {
    await opened.close()
  }
}

console.log(`The console's pages with ${PAYMENTS.toLocaleString('en')} payments, median of ${ROUNDS} after one untimed ask, on the built package`)
await run('memory', async () => ({ store: core.memoryStore() as ReceiverStore<unknown>, about: 'the memory store', close: async () => {} }))
await run('redis', async () => {
  const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 1, lazyConnect: true })
  await client.connect()
  const prefix = `fpx-bench-console:${randomUUID()}:`
  return {
    store: redisStore({ client, prefix, inspect: false }) as ReceiverStore<unknown>,
    about: `Redis at ${redactUrl(REDIS_URL)}`,
    async close() {
      let cursor = '0'
      do {
        const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
        cursor = next
        if (keys.length > 0) await client.unlink(...keys)
      } while (cursor !== '0')
      await client.quit()
    },
  }
})
await run('postgres', async () => {
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: SEED_CONCURRENCY + 2 })
  await pool.query('SELECT 1')
  const table = `fpx_bench_console_${randomUUID().replace(/-/g, '').slice(0, 10)}`
  const store = postgresStore({ client: pool, table })
  const tables = async () => (await pool.query<{ name: string }>('SELECT tablename AS name FROM pg_tables WHERE tablename LIKE $1', [`${table}%`])).rows.map((row) => row.name)
  return {
    store: store as ReceiverStore<unknown>,
    about: `PostgreSQL at ${redactUrl(DATABASE_URL)}, tables analyzed after seeding`,
    async settle() {
      for (const name of await tables()) await pool.query(`ANALYZE "${name}"`)
    },
    async close() {
      const names = await tables()
      if (names.length > 0) await pool.query(`DROP TABLE IF EXISTS ${names.map((name) => `"${name}"`).join(', ')}`)
      await pool.end()
    },
  }
})
