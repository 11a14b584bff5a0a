/**
 * The soak's inbox mode: every result was acknowledged while the handlers were down; after the outage the
 * driver waits for the inbox to drain and measures how long each result took to be processed after recovery.
 * With PostgreSQL (transactional) it also SIGKILLs a worker while the drain runs handlers, to show that the
 * cut attempt rolls back and runs again once, elsewhere.
 */
import { postgresStore } from '../src/stores/postgres/store.js'
import { redisStore } from '../src/stores/redis/store.js'
import type { InboxQueue } from '../src/contract/inbox-queue.js'
import { EMULATOR_RETRY_WINDOW_MS, type SoakConfig, type StoreKind } from './config.js'
import type { RunResources } from './resources.js'
import type { Fleet, Kill } from './workers.js'

export interface InboxFigures {
  outageMs: number
  /** Results processed after the outage ended (ledger rows), and when: ms after recovery. */
  processed: number
  p50Ms: number
  p99Ms: number
  maxMs: number
  /** Entries waiting when the outage ended, and the latest next attempt among them, in ms after recovery. */
  waitingAtRecovery: number
  latestDueMs: number
  /** When they were listed, in ms after recovery: attempts that failed until then scheduled their next from then. */
  listedMs: number
  /** Entries still leased then (by a killed worker), and when the last of those leases ends, in ms after recovery. */
  leasedAtRecovery: number
  latestLeaseMs: number
  /** Ledger rows written during the outage: must be 0, every handler failed. */
  duringOutage: number
  left: { pending: number; dead: number }
  drainKill: Kill | undefined
}

const SETTLE_MS = 1000
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function queueOf(store: StoreKind, resources: RunResources): InboxQueue {
  if (store === 'postgres') return postgresStore({ client: resources.pool, table: resources.storeTable }).openInbox()
  return redisStore({ client: resources.redis as NonNullable<RunResources['redis']>, prefix: resources.redisPrefix }).openInbox()
}

async function ledgerCount(resources: RunResources): Promise<number> {
  const { rows } = await resources.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${resources.ledgerTable}"`)
  return rows[0]?.n ?? 0
}

export async function drainInbox(store: StoreKind, config: SoakConfig, resources: RunResources, fleet: Fleet, outageStartAt: number): Promise<InboxFigures> {
  const queue = queueOf(store, resources)
  // The outage lasts its time, and at least until the traffic is done (a slow machine may take longer).
  const wait = outageStartAt + config.outageMs - Date.now()
  if (wait > 0) console.log(`outage      traffic done; handlers down for ${Math.round(wait / 1000)} s more`)
  await sleep(Math.max(0, wait))
  const beforeDrain = await ledgerCount(resources)
  const outageEndAt = Date.now()
  fleet.recover(outageEndAt)
  // Once handlers run again, cut one of them short (transactional PostgreSQL: it must roll back and run again once).
  // Watched from recovery on: a quick drain can be over before the settling below is (it was, under load).
  let drainKill: Kill | undefined
  let drained = false
  const killing =
    store === 'postgres' && config.kills > 0
      ? (async () => {
          while (!drained) {
            if ((await ledgerCount(resources)) > beforeDrain) {
              drainKill = await fleet.killBusy(1, 1)
              return
            }
            await sleep(10)
          }
        })()
      : Promise.resolve()
  // Attempts under way when it ended still fail (they started during the outage): let them settle, then see
  // when each waiting entry is due.
  await sleep(SETTLE_MS)
  const pending = await queue.list({ status: 'pending', limit: 1_000_000 })
  const listedMs = Date.now() - outageEndAt
  const waiting = pending.filter((item) => item.leasedUntil === null)
  const latestDueMs = Math.max(0, ...waiting.map((item) => (item.nextAttemptAt?.getTime() ?? 0) - outageEndAt))
  // Still leased once the attempts under way have settled, by a lease taken before recovery: held by a worker
  // killed during the traffic, whose lease must run out before another worker may take the entry (resume on
  // recovery leaves leased entries alone). Leases taken since are live workers draining, and extend nothing.
  const leased = pending.filter((item) => item.leasedUntil !== null && item.leasedUntil.getTime() - config.leaseMs < outageEndAt)
  const latestLeaseMs = Math.max(0, ...leased.map((item) => (item.leasedUntil?.getTime() ?? 0) - outageEndAt))
  const deadline = Date.now() + 20 * config.backoffMaxMs + 120_000
  for (;;) {
    const counts = await queue.counts()
    if ((counts.pending === 0 && counts.dead === 0) || Date.now() > deadline) break
    await sleep(100)
  }
  drained = true
  await killing
  const left = await queue.counts()
  const { rows } = await resources.pool.query<{ at_ms: number }>(
    `SELECT extract(epoch FROM at)::float8 * 1000 AS at_ms FROM "${resources.ledgerTable}" ORDER BY at`,
  )
  const after = rows.map((row) => row.at_ms - outageEndAt).filter((ms) => ms >= 0)
  const quantile = (q: number) => (after.length === 0 ? 0 : Math.round(after[Math.min(after.length - 1, Math.floor(q * after.length))] as number))
  return {
    outageMs: outageEndAt - outageStartAt,
    processed: after.length,
    p50Ms: quantile(0.5),
    p99Ms: quantile(0.99),
    maxMs: Math.round(after.at(-1) ?? 0),
    waitingAtRecovery: waiting.length,
    latestDueMs: Math.round(latestDueMs),
    listedMs,
    leasedAtRecovery: leased.length,
    latestLeaseMs: Math.round(latestLeaseMs),
    duringOutage: rows.length - after.length,
    left,
    drainKill,
  }
}

/** The figures as report lines, and what in them breaks the promise. */
export function inboxReport(figures: InboxFigures, config: SoakConfig): { lines: [string, string][]; violations: [string, string][] } {
  const lines: [string, string][] = [
    [
      'outage',
      `every handler failed for ${(figures.outageMs / 1000).toFixed(0)} s from the start (the emulator's whole retry window is ` +
        `${EMULATOR_RETRY_WINDOW_MS / 1000} s: ${figures.outageMs > EMULATOR_RETRY_WINDOW_MS ? 'longer' : 'shorter'})`,
    ],
    [
      'scheduled',
      `${figures.waitingAtRecovery} entries waiting at recovery, the last due ${figures.latestDueMs} ms after it (backoff period ${config.backoffMaxMs} ms); ` +
        `${figures.leasedAtRecovery} still leased by a killed worker, the last lease ending ${figures.latestLeaseMs} ms after it`,
    ],
    [
      'recovery',
      `${figures.processed} results processed after it: p50 ${figures.p50Ms} ms, p99 ${figures.p99Ms} ms, last ${figures.maxMs} ms after recovery ` +
        `(backoff period ${config.backoffMaxMs} ms)`,
    ],
    ['inbox', `left pending ${figures.left.pending}, dead ${figures.left.dead}; ledger rows during the outage ${figures.duringOutage}`],
  ]
  if (figures.drainKill !== undefined) lines.push(['drain kill', `pid ${figures.drainKill.pid} SIGKILLed while the drain ran handlers (replaced in ${figures.drainKill.restartMs} ms)`])
  const violations: [string, string][] = []
  if (figures.left.pending + figures.left.dead > 0) violations.push(['left in the inbox after the drain', `${figures.left.pending} pending, ${figures.left.dead} dead`])
  if (figures.duringOutage > 0) violations.push(['a handler ran during the outage', `${figures.duringOutage} ledger rows`])
  // The inbox's promise: every entry is due again within one backoff period of recovery (plus the attempts that
  // were under way when it ended), and with resumeOnRecovery the first success after the outage makes them all due
  // at once, so every result must have run within one backoff period, or, for an entry a killed worker still held,
  // within one backoff period of its lease running out (and a drain kill's lease). An attempt under way at recovery
  // may fail as late as the listing, however long the settling took, and schedules its next from then.
  const dueAllowance = config.backoffMaxMs + figures.listedMs
  if (figures.latestDueMs > dueAllowance) violations.push(['an entry scheduled later than one backoff period after recovery', `${figures.latestDueMs} ms > ${dueAllowance} ms`])
  const periods = config.processedWithinPeriods
  const processedAllowance = periods * config.backoffMaxMs + Math.max(figures.latestLeaseMs, figures.drainKill === undefined ? 0 : config.leaseMs)
  if (figures.maxMs > processedAllowance)
    violations.push([`a result processed later than ${periods === 1 ? 'one backoff period' : `${periods} backoff periods`} after recovery`, `${figures.maxMs} ms > ${processedAllowance} ms`])
  return { lines, violations }
}
