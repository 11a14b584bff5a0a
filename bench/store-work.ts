/**
 * npx tsx bench/store-work.ts (after npm run build): what the PostgreSQL store asks of the server per delivery,
 * counted rather than timed:
 *   round trips     every query() the store sends on its pool (and on the connections it checks out), each named by
 *                   what it does (its first keyword and table);
 *   transactions    pg_stat_database xact_commit and xact_rollback;
 *   rows read       pg_stat_database tup_fetched (rows fetched through an index) and tup_returned (rows read by
 *                   scans and index entries returned); rows written: tup_inserted + tup_updated + tup_deleted;
 *   server CPU      the serving backend's user + system time from /proc/<pid>/stat (when the server runs on this
 *                   machine and /proc shows it; 10 ms ticks, so take a few hundred deliveries).
 * for a new delivery, a duplicate of it, and one timeline batch, in default and in transactional mode.
 *
 * Deliveries go one at a time through a signature-only receiver on the built package (confirmation asks the
 * service's API, never the store, so it changes none of these figures), on a pg Pool of one connection, each payment
 * recorded in the store's payment book first, as a merchant's client would have done, so that the book is read and
 * settled. The timeline entries the receiver hands the store are held back while deliveries run and written
 * afterwards, batch by batch as the receiver made them, so that each figure counts one thing.
 *
 * It works in a scratch database of its own, created and dropped, so that nothing else on the server is counted.
 * Environment: DATABASE_URL (a role that may create databases), BENCH_DELIVERIES (default 100).
 */
import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import pg from 'pg'
import type { TimelineEntry } from '../src/contract/timeline.js'
import type { ReceiverStore } from '../src/contract/store.js'
import { DATABASE_URL } from '../test/stores/services.js'
import { type Core, fromDist, type Testing } from './dist.js'
import { envInteger } from './env.js'

const { createReceiver } = await fromDist<Core>('index')
const { samplePaymentFields, signCallback } = await fromDist<Testing>('testing')
const { postgresStore } = await fromDist<typeof import('../src/stores/postgres/store.js')>('postgres')

const DELIVERIES = envInteger('BENCH_DELIVERIES', 100, 1)
const TOKEN = 'ab'.repeat(32)
// Linux's USER_HZ, which /proc/<pid>/stat counts CPU time in.
const TICKS_PER_SECOND = 100
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface Counters {
  /** The backend's CPU time (ms), or NaN when /proc does not show it. */
  cpuMs: number
  commits: number
  rollbacks: number
  fetched: number
  returned: number
  written: number
}

interface Phase {
  readonly name: string
  readonly sent: string[]
  readonly counters: Counters
}

/**
 * What a statement is, by its text: BEGIN (with what it sets), COMMIT, ROLLBACK, or its first keyword with the first
 * table it names, and for a WITH statement the first write in it (`WITH…INSERT <table>`).
 */
function statementName(text: string): string {
  const words = text.trim().replace(/\s+/g, ' ')
  const verb = /^\w+/.exec(words)?.[0]?.toUpperCase() ?? '?'
  if (['BEGIN', 'COMMIT', 'ROLLBACK'].includes(verb)) return words.replace(/ = \d+/, '')
  const write = verb === 'WITH' ? /\b(INSERT INTO|UPDATE|DELETE FROM) ("[a-z0-9_]+")/.exec(words) : null
  const table = (write?.[2] ?? /"([a-z0-9_]+)"(?:\s|$|\()/.exec(words)?.[0] ?? '').replace(/"/g, '').replace(/^fpx_work_(default|transactional)/, '<table>').trim()
  return `${verb}${write === null ? '' : `…${write[1]!.split(' ')[0]}`} ${table}`.trim()
}

/** `pool`, counting what is sent through it and through the connections it hands out. */
function counted(pool: pg.Pool, sent: string[]): pg.Pool {
  const sending = <T extends object>(target: T): T =>
    new Proxy(target, {
      get(object, key) {
        const value = Reflect.get(object, key, object) as unknown
        if (key === 'query')
          return (text: string | { text: string }, ...rest: unknown[]) => {
            sent.push(typeof text === 'string' ? text : text.text)
            return (value as (...args: unknown[]) => unknown).call(object, text, ...rest)
          }
        if (key === 'connect') return async () => sending(await pool.connect())
        return typeof value === 'function' ? value.bind(object) : value
      },
    })
  return sending(pool)
}

async function main(): Promise<void> {
  const scratch = `fpx_store_work_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ connectionString: DATABASE_URL })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${scratch}`)
  const url = new URL(DATABASE_URL)
  url.pathname = `/${scratch}`
  try {
    const about = (await admin.query<{ server_version: string }>('SHOW server_version')).rows[0]?.server_version
    console.log(`PostgreSQL ${about}, ${DELIVERIES} deliveries per figure, scratch database ${scratch}\n`)
    const results: Record<string, Phase[]> = {}
    for (const mode of ['default', 'transactional'] as const) results[mode] = await measure(mode, url.href, admin, scratch)
    report(results)
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${scratch} WITH (FORCE)`)
    await admin.end()
  }
}

/** User + system CPU time (ms) of process `pid`, or NaN when this machine's /proc does not show it. */
async function cpuMs(pid: number): Promise<number> {
  try {
    // The fields after the command's closing parenthesis: utime and stime are the 12th and 13th of them.
    const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND
  } catch {
    return Number.NaN
  }
}

/** The scratch database's counters, read from another database so that reading them counts nowhere. */
async function counters(admin: pg.Client, database: string, backend: number): Promise<Counters> {
  const { rows } = await admin.query(
    `SELECT xact_commit, xact_rollback, tup_fetched, tup_returned, tup_inserted + tup_updated + tup_deleted AS written
     FROM pg_stat_database WHERE datname = $1`,
    [database],
  )
  const row = rows[0] as Record<string, string>
  return {
    cpuMs: await cpuMs(backend),
    commits: Number(row.xact_commit),
    rollbacks: Number(row.xact_rollback),
    fetched: Number(row.tup_fetched),
    returned: Number(row.tup_returned),
    written: Number(row.written),
  }
}

async function measure(mode: 'default' | 'transactional', url: string, admin: pg.Client, database: string): Promise<Phase[]> {
  const pool = new pg.Pool({ connectionString: url, max: 1 })
  const sent: string[] = []
  const client = counted(pool, sent)
  const store = (
    mode === 'transactional'
      ? postgresStore({ client, table: `fpx_work_${mode}`, transactional: true, pruneEvery: 0 })
      : postgresStore({ client, table: `fpx_work_${mode}`, pruneEvery: 0 })
  ) as ReceiverStore<unknown> & ReturnType<typeof postgresStore>
  const batches: (readonly TimelineEntry[])[] = []
  // The store as the receiver sees it, but for the timeline, which is held back (written in its own phase).
  const held: ReceiverStore<unknown> = {
    claim: (request) => store.claim(request),
    complete: (completion) => store.complete(completion),
    release: (lease) => store.release(lease),
    appendTimeline: async (entries) => void batches.push([...entries]),
    readTimeline: (query) => store.readTimeline!(query),
    paymentBook: () => store.paymentBook(),
    sweepLock: () => store.sweepLock(),
  }
  const receiver = createReceiver({ checksumToken: TOKEN, signatureOnly: true, store: held, logger: false } as Parameters<typeof createReceiver>[0])
  receiver.on('payment.succeeded', () => {})
  const book = store.paymentBook()
  const payments = (count: number) => Array.from({ length: count }, () => samplePaymentFields())
  const record = async (fields: Record<string, unknown>) =>
    void (await book.record({
      orderNumber: String(fields.order_number),
      amountSen: 10020,
      uid: 'bench-uid',
      kind: 'form',
      createdAt: new Date(),
      exchangeNumber: null,
      attached: {},
    }))
  const deliver = async (fields: Record<string, unknown>, expected: string) => {
    const signed = signCallback(fields as Parameters<typeof signCallback>[0], TOKEN)
    const response = await receiver.handle({ kind: 'callback', body: Buffer.from(signed.body), contentType: signed.contentType })
    if (response.outcome !== expected) throw new Error(`a delivery answered ${response.status} ${response.outcome}, not ${expected}`)
    // The receiver hands its timeline over after a turn of the event loop.
    await sleep(0)
  }

  // Warm: the tables made, the pool's one connection open with its catalog caches filled.
  for (const fields of payments(5)) {
    await record(fields)
    await deliver(fields, 'processed')
    await deliver(fields, 'duplicate')
  }
  for (const batch of batches.splice(0)) await store.appendTimeline!(batch)
  const fresh = payments(DELIVERIES)
  for (const fields of fresh) await record(fields)

  // The pool's one connection: its backend serves every statement.
  const backend = (await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid
  // The counters a backend has not reported yet are reported when it is next idle.
  const settle = async () => {
    await pool.query('SELECT pg_stat_force_next_flush()')
    await sleep(300)
    return counters(admin, database, backend)
  }
  const phases: Phase[] = []
  let before = await settle()
  const phase = async (name: string, work: () => Promise<void>) => {
    sent.length = 0
    await work()
    const statements = sent.splice(0)
    const after = await settle()
    // The flush request is one transaction of its own.
    const counters: Counters = {
      cpuMs: after.cpuMs - before.cpuMs,
      commits: after.commits - before.commits - 1,
      rollbacks: after.rollbacks - before.rollbacks,
      fetched: after.fetched - before.fetched,
      returned: after.returned - before.returned,
      written: after.written - before.written,
    }
    phases.push({ name, sent: statements, counters })
    before = after
  }
  await phase('new delivery', async () => {
    for (const fields of fresh) await deliver(fields, 'processed')
  })
  const newBatches = batches.splice(0)
  await phase('duplicate', async () => {
    for (const fields of fresh) await deliver(fields, 'duplicate')
  })
  batches.length = 0
  if (newBatches.length !== DELIVERIES) console.warn(`${mode}: the receiver made ${newBatches.length} timeline batches for ${DELIVERIES} deliveries`)
  const entries = newBatches.reduce((sum, batch) => sum + batch.length, 0) / newBatches.length
  await phase(`timeline batch (${entries} entries)`, async () => {
    for (const batch of newBatches) await store.appendTimeline!(batch)
  })
  await receiver.close()
  await pool.end()
  return phases
}

function report(results: Record<string, Phase[]>): void {
  const per = (value: number) => (value / DELIVERIES).toFixed(2).replace(/\.00$/, '')
  const columns = Object.entries(results).flatMap(([mode, phases]) => phases.map((phase) => ({ title: `${mode}: ${phase.name}`, phase })))
  const rows: [string, (phase: Phase) => string][] = [
    ['round trips', (phase) => per(phase.sent.length)],
    ['transactions (commit + rollback)', (phase) => `${per(phase.counters.commits + phase.counters.rollbacks)} (${per(phase.counters.commits)} + ${per(phase.counters.rollbacks)})`],
    ['rows fetched by index (tup_fetched)', (phase) => per(phase.counters.fetched)],
    ['rows and index entries read (tup_returned)', (phase) => per(phase.counters.returned)],
    ['rows written (inserted + updated + deleted)', (phase) => per(phase.counters.written)],
    ['server CPU, ms (backend user + system)', (phase) => (Number.isNaN(phase.counters.cpuMs) ? 'n/a' : (phase.counters.cpuMs / DELIVERIES).toFixed(3))],
  ]
  console.log(`| per delivery | ${columns.map((column) => column.title).join(' | ')} |`)
  console.log(`|---|${columns.map(() => '---').join('|')}|`)
  for (const [label, value] of rows) console.log(`| ${label} | ${columns.map((column) => value(column.phase)).join(' | ')} |`)
  console.log('\nRound trips per delivery, by statement:')
  for (const { title, phase } of columns) {
    const counts = new Map<string, number>()
    for (const text of phase.sent) counts.set(statementName(text), (counts.get(statementName(text)) ?? 0) + 1)
    console.log(`  ${title}: ${[...counts].map(([name, count]) => `${per(count)}× ${name}`).join(', ') || 'none'}`)
  }
}

await main()
