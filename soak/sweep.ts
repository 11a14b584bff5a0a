/**
 * npm run soak:sweep — the payment's whole life across several receiver processes sharing one store (Redis, or
 * PostgreSQL in transactional mode): the driver creates payments through the client (recorded in the store's
 * payment book), plays the buyers at the emulator's hosted pages (redirects posted to the workers, callbacks sent
 * by the emulator), while the emulator loses every result of a share of payments and the 00 after approval of a
 * share of B2B1 payments. The workers' in-process sweepers must find what was lost; the one holding the sweep lock
 * is SIGKILLed mid-run. At the end: every payment at its final state exactly once, within the stated bound, no
 * lookup of a payment already final, one sweeper at a time, the lookups within their rate bound. Exits non-zero
 * on any violation.
 *
 *   npx tsx soak/sweep.ts [--store=redis|postgres|both] [--payments=600] [--workers=3] [--kills=1] ...
 *
 * Every flag is also an environment variable (SOAK_PAYMENTS, ...); see soak/sweep-config.ts.
 */
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import pg from 'pg'
import { createClient, type FpxClient } from '../src/client/index.js'
import type { BookedPayment, PaymentBook } from '../src/contract/payment-book.js'
import { startEmulator } from '../src/emulator/index.js'
import { amongShare } from '../src/emulator/faults.js'
import type { ReceiverStore } from '../src/index.js'
import { postgresStore } from '../src/stores/postgres/store.js'
import { redisStore } from '../src/stores/redis/store.js'
import { DEMO, hiddenFields } from '../test/emulator/harness.js'
import { onEachStore, type StoreKind } from './config.js'
import { deleteRedisKeys } from './resources.js'
import { checkSweep, type FinalRow, type LedgerRow, type LookupRow, type Plan, type PlannedPayment } from './sweep-checks.js'
import { loadSweepConfig, type SweepSoakConfig } from './sweep-config.js'
import { SWEEP_CALLBACK_PATH, SWEEP_REDIRECT_PATH, SWEEP_TABLES, type SweepWorkerSettings } from './sweep-protocol.js'
import { Fleet } from './workers.js'

const WORKER = fileURLToPath(new URL('./sweep-worker.ts', import.meta.url))
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A small seeded generator (mulberry32): the same seed plays the same buyers. */
function random(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = Math.imul(state ^ (state >>> 15), 1 | state)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32
  }
}

function pick(mix: SweepSoakConfig['mix'], draw: number): Plan {
  let sum = 0
  for (const [plan, share] of Object.entries(mix) as [Plan, number][]) if (draw < (sum += share)) return plan
  return 'approve'
}

async function soak(store: StoreKind, config: SweepSoakConfig): Promise<boolean> {
  const tag = randomBytes(5).toString('hex')
  const tables = { ledger: `soak_sweep_ledger_${tag}`, lookups: `soak_sweep_lookups_${tag}`, finals: `soak_sweep_finals_${tag}`, store: `soak_sweep_store_${tag}` }
  const redisPrefix = `soak-sweep:${tag}:`
  console.log(
    `\n== sweep soak on ${store}: ${config.workers} workers, ${config.payments} payments (${config.createPerSecond} a second), ${config.kills} sweeper kills, seed ${config.seed}, run ${tag}`,
  )
  console.log(
    `settings    lost results ${config.lostShare * 100} %, lost approvals ${config.lostApprovalShare * 100} % of B2B1; first lookup after ${config.sweep.firstLookupAfterMs} ms, ` +
      `backoff ${config.sweep.backoff.baseMs}..${config.sweep.backoff.maxMs} ms, abandon after ${config.sweep.abandonAfterMs} ms (99: ${config.sweep.pendingAbandonAfterMs} ms), ` +
      `${config.sweep.maxLookupsPerMinute} lookups/min, lock ${config.sweep.lockMs} ms${store === 'postgres' ? ', transactional' : ''}`,
  )
  const pool = new pg.Pool({ connectionString: config.databaseUrl, max: 4 })
  pool.on('error', () => {})
  const redis = store === 'redis' ? new Redis(config.redisUrl, { maxRetriesPerRequest: 2 }) : undefined
  const emulator = await startEmulator({ log: () => {}, delivery: { attempts: 6, initialDelayMs: 200, maxDelayMs: 2000, timeoutMs: 5000 } })
  let fleet: Fleet<SweepWorkerSettings> | undefined
  try {
    for (const [name, table] of [['ledger', tables.ledger], ['lookups', tables.lookups], ['finals', tables.finals]] as const)
      await pool.query(`CREATE TABLE "${table}" ${SWEEP_TABLES[name]}`)
    const shared: ReceiverStore<unknown> =
      store === 'redis' ? redisStore({ client: redis as Redis, prefix: redisPrefix, inspect: false }) : postgresStore({ client: pool, table: tables.store, pruneEvery: 0 })
    if (store === 'postgres') await (shared as ReturnType<typeof postgresStore>).migrate()
    const book = (shared.paymentBook as () => PaymentBook)()
    await fetch(`${emulator.url}/__emulator/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ lose_results: config.lostShare, lose_approvals: config.lostApprovalShare }),
    })
    const settings: SweepWorkerSettings = {
      store,
      redisUrl: config.redisUrl,
      databaseUrl: config.databaseUrl,
      redisPrefix,
      storeTable: tables.store,
      ledgerTable: tables.ledger,
      lookupsTable: tables.lookups,
      finalsTable: tables.finals,
      emulatorBaseUrl: emulator.baseUrl,
      merchant: DEMO,
      sweep: config.sweep,
      leaseMs: config.leaseMs,
    }
    fleet = new Fleet(settings, WORKER)
    await fleet.start(config.workers)
    const client = createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO, book: shared, logger: false })
    const banks = { B2C: (await client.publicBanks('b2c')).banks.find((bank) => bank.online)?.code, B2B1: (await client.publicBanks('b2b')).banks.find((bank) => bank.online)?.code }

    const draw = random(config.seed)
    const payments: PlannedPayment[] = []
    const kills: { pid: number; at: number }[] = []
    const approvals: Promise<void>[] = []
    const killAt = Array.from({ length: config.kills }, (_, k) => Math.floor(((k + 1) * config.payments) / (config.kills + 1)))
    let next = 0
    const started = Date.now()
    const lane = async () => {
      while (next < config.payments) {
        const index = next++
        // The buyers' pace: payment i is started no sooner than i / createPerSecond into the run.
        const due = started + (index * 1000) / config.createPerSecond - Date.now()
        if (due > 0) await sleep(due)
        const plan = pick(config.mix, draw())
        const approveDelay = config.approveAfterMs[0] + draw() * (config.approveAfterMs[1] - config.approveAfterMs[0])
        const payment = await play(client, fleet as Fleet<SweepWorkerSettings>, banks, `SWP-${tag}-${index}`, plan, config, approveDelay, approvals)
        payments.push(payment)
        if (killAt.length > 0 && payments.length >= (killAt[0] as number)) {
          killAt.shift()
          const kill = await killSweeper(pool, tables.lookups, fleet as Fleet<SweepWorkerSettings>)
          if (kill !== undefined) kills.push(kill)
        }
      }
    }
    await Promise.all(Array.from({ length: Math.min(config.concurrency, config.payments) }, lane))
    await Promise.all(approvals)
    const created = (Date.now() - started) / 1000
    // Everything closes by the longest horizon plus the stated slack, or the run has failed.
    const lastCreated = Math.max(...payments.map((payment) => payment.createdAt))
    const deadline = lastCreated + config.sweep.pendingAbandonAfterMs + config.sweep.backoff.maxMs + config.sweep.everyMs + config.sweep.lockMs + config.slackMs
    while (Date.now() < deadline && (await book.summary()).open > 0) await sleep(250)
    await sleep(500)
    await fleet.stop()

    const found = new Map<string, BookedPayment | undefined>()
    for (const payment of payments) found.set(payment.orderNumber, await book.find(payment.orderNumber))
    const epoch = (column: string) => `extract(epoch FROM ${column})::float8 * 1000`
    const ledger = (await pool.query<LedgerRow>(`SELECT order_number, exchange_number, state, kind, pid, ${epoch('at')} AS at FROM "${tables.ledger}" ORDER BY id`)).rows
    const lookups = (
      await pool.query<LookupRow>(`SELECT reference, value, pid, ${epoch('started_at')} AS started_at, ${epoch('ended_at')} AS ended_at FROM "${tables.lookups}" ORDER BY id`)
    ).rows
    const finals = (await pool.query<FinalRow>(`SELECT order_number, ${epoch('at')} AS at FROM "${tables.finals}"`)).rows
    const findings = checkSweep({ config, payments, book: found, ledger, lookups, finals, kills, transactional: store === 'postgres' })
    if (kills.length !== config.kills) findings.violations.set('sweeper kills missing', [`${config.kills - kills.length}`])
    const count = (which: (payment: PlannedPayment) => boolean) => payments.filter(which).length
    console.log(
      `${'payments'.padEnd(11)} ${payments.length} created in ${created.toFixed(1)} s: paid ${count((p) => p.plan === 'approve')}, refused ${count((p) => p.plan === 'reject')}, ` +
        `never paid ${count((p) => p.plan === 'never')}, B2B1 approved ${count((p) => p.plan === 'pendingApproved')}, B2B1 never approved ${count((p) => p.plan === 'pendingNever')}; ` +
        `results lost ${count((p) => p.lost)}, approvals lost ${count((p) => p.approvalLost)}`,
    )
    console.log(`${'kills'.padEnd(11)} ${kills.length}${kills.map((kill) => `: the sweeper, pid ${kill.pid}`).join('')}`)
    for (const [label, text] of findings.lines) console.log(`${label.padEnd(11)} ${text}`)
    if (findings.violations.size === 0) {
      console.log('result      OK: every payment at its final state once, within the bound; no lookup of a final payment; one sweeper at a time; within the rate bound')
      return true
    }
    console.log('result      FAILED')
    for (const [kind, examples] of findings.violations) {
      console.log(`  ✗ ${kind}: ${examples.length}`)
      for (const example of examples.slice(0, 5)) console.log(`      ${example}`)
    }
    return false
  } finally {
    await fleet?.stop()
    await emulator.stop()
    if (!config.keep) {
      await pool.query(`DROP TABLE IF EXISTS ${[tables.ledger, tables.lookups, tables.finals, tables.store, `${tables.store}_inbox`, `${tables.store}_timeline`, `${tables.store}_book`, `${tables.store}_locks`].map((t) => `"${t}"`).join(', ')}`).catch(() => {})
      if (redis !== undefined) await deleteRedisKeys(redis, redisPrefix).catch(() => 0)
    }
    await Promise.allSettled([pool.end(), redis?.quit()])
  }
}

/** One buyer: the payment created (and recorded), then paid, refused, left, or submitted for approval at the bank. */
async function play(
  client: FpxClient,
  fleet: Fleet<SweepWorkerSettings>,
  banks: { B2C: string | undefined; B2B1: string | undefined },
  orderNumber: string,
  plan: Plan,
  config: SweepSoakConfig,
  approveDelay: number,
  approvals: Promise<void>[],
): Promise<PlannedPayment> {
  const b2b1 = plan === 'pendingApproved' || plan === 'pendingNever'
  const worker = fleet.pick(Math.floor(Math.random() * fleet.size))
  const base = `http://127.0.0.1:${worker?.port ?? 9}`
  const createdAt = Date.now()
  const created = await client.createPayment({
    order_number: orderNumber,
    buyer_name: 'Soak Buyer',
    buyer_email: 'buyer@example.test',
    buyer_phone: '+60123456789',
    transaction_amount: '12.34',
    product_description: 'Sweep soak',
    callback_url: `${base}${SWEEP_CALLBACK_PATH}`,
    redirect_url: `${base}${SWEEP_REDIRECT_PATH}`,
    ...(b2b1 ? { model: 'B2B1' } : {}),
  })
  const exchange = created.exchangeNumber as string
  const lost = amongShare(exchange, config.lostShare, 'results')
  const payment: PlannedPayment = { orderNumber, plan, lost, approvalLost: b2b1 && !lost && amongShare(exchange, config.lostApprovalShare, 'approvals') && plan === 'pendingApproved', createdAt, resultAt: createdAt }
  if (plan === 'never') return payment
  const outcome = plan === 'approve' ? 'approve' : plan === 'reject' ? 'reject' : 'pending'
  const page = await fetch(`${client.baseUrl}/pay/${exchange}/authorize`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ outcome, bank_code: (b2b1 ? banks.B2B1 : banks.B2C) ?? '' }).toString(),
  })
  const html = await page.text()
  if (page.status !== 200) throw new Error(`the bank page answered ${page.status} for ${orderNumber}`)
  payment.resultAt = Date.now()
  // The buyer's browser posts the result back to the shop, unless the fault lost the way back.
  const action = /<form id="redirect" method="post" action="([^"]*)"/.exec(html)?.[1]
  if (action !== undefined)
    await fetch(action.replace(/&#(\d+);/g, (_m, code: string) => String.fromCharCode(Number(code))), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(hiddenFields(html)).toString(),
    }).then(
      (answer) => answer.text(),
      () => undefined,
    )
  if (plan === 'pendingApproved')
    approvals.push(
      sleep(approveDelay).then(async () => {
        const answer = await fetch(`${client.baseUrl.replace(/\/api$/, '')}/__emulator/payments/${exchange}/approve`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
        if (answer.status !== 200) throw new Error(`approving ${orderNumber} answered ${answer.status}`)
        payment.resultAt = Date.now()
      }),
    )
  return payment
}

/** SIGKILLs the process that made the latest lookup: the one holding the sweep lock. */
async function killSweeper(pool: pg.Pool, lookups: string, fleet: Fleet<SweepWorkerSettings>): Promise<{ pid: number; at: number } | undefined> {
  for (let tries = 0; tries < 200; tries++) {
    const { rows } = await pool.query<{ pid: number }>(`SELECT pid FROM "${lookups}" WHERE reference = 'order_number' ORDER BY id DESC LIMIT 1`)
    const worker = rows[0] === undefined ? undefined : fleet.byPid(rows[0].pid)
    if (worker !== undefined) {
      const at = Date.now()
      await fleet.kill(worker)
      return { pid: worker.pid, at }
    }
    await sleep(100)
  }
  return undefined
}

let config: SweepSoakConfig
try {
  config = loadSweepConfig()
} catch (error) {
  console.error((error as Error).message)
  process.exit(2)
}
process.exit((await onEachStore(config, 'sweep soak', soak)) ? 0 : 1)
