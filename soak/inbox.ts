/**
 * The soak's inbox mode: every result was acknowledged while the handlers were down; after the outage the
 * driver waits for the inbox to drain and measures how long each result took to be processed after recovery.
 * With PostgreSQL (transactional) it also SIGKILLs a worker while the drain runs handlers, to show that the
 * cut attempt rolls back and runs again once, elsewhere.
 */
import { postgresStore } from '../src/stores/postgres/store.js'
import { redisStore } from '../src/stores/redis.js'
import type { InboxQueue } from '../src/inbox/queue.js'
import type { SoakConfig, StoreKind } from './config.js'
import type { RunResources } from './resources.js'
import type { Fleet, Kill } from './workers.js'

export interface InboxFigures {
  outageMs: number
  /** Results processed after the outage ended (ledger rows), and when: ms after recovery. */
  processed: number
  p50Ms: number
  p99Ms: number
  maxMs: number
  /** Ledger rows written during the outage: must be 0, every handler failed. */
  duringOutage: number
  left: { pending: number; dead: number }
  drainKill: Kill | undefined
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function queueOf(store: StoreKind, resources: RunResources): InboxQueue {
  if (store === 'postgres') return postgresStore({ client: resources.pool, table: resources.storeTable }).openInbox()
  return redisStore({ client: resources.redis as NonNullable<RunResources['redis']>, prefix: resources.redisPrefix }).openInbox()
}

async function ledgerCount(resources: RunResources): Promise<number> {
  const { rows } = await resources.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${resources.ledgerTable}"`)
  return rows[0]?.n ?? 0
}

export async function drainInbox(store: StoreKind, config: SoakConfig, resources: RunResources, fleet: Fleet, outageEndAt: number): Promise<InboxFigures> {
  const queue = queueOf(store, resources)
  const wait = outageEndAt - Date.now()
  if (wait > 0) console.log(`outage      traffic done; handlers down for ${Math.round(wait / 1000)} s more`)
  await sleep(Math.max(0, wait))
  let drainKill: Kill | undefined
  const start = await ledgerCount(resources)
  const deadline = Date.now() + 20 * config.backoffMaxMs + 120_000
  for (;;) {
    const counts = await queue.counts()
    if ((counts.pending === 0 && counts.dead === 0) || Date.now() > deadline) break
    // Once handlers run again, cut one of them short (transactional PostgreSQL: it must roll back and run again once).
    if (drainKill === undefined && store === 'postgres' && config.kills > 0 && (await ledgerCount(resources)) > start)
      drainKill = await fleet.killBusy(1, 1)
    await sleep(100)
  }
  const left = await queue.counts()
  const { rows } = await resources.pool.query<{ at_ms: number }>(
    `SELECT extract(epoch FROM at)::float8 * 1000 AS at_ms FROM "${resources.ledgerTable}" ORDER BY at`,
  )
  const after = rows.map((row) => row.at_ms - outageEndAt).filter((ms) => ms >= 0)
  const quantile = (q: number) => (after.length === 0 ? 0 : Math.round(after[Math.min(after.length - 1, Math.floor(q * after.length))] as number))
  return {
    outageMs: config.outageMs,
    processed: after.length,
    p50Ms: quantile(0.5),
    p99Ms: quantile(0.99),
    maxMs: Math.round(after.at(-1) ?? 0),
    duringOutage: rows.length - after.length,
    left,
    drainKill,
  }
}

/** The figures as report lines, and what in them breaks the promise. */
export function inboxReport(figures: InboxFigures, config: SoakConfig): { lines: [string, string][]; violations: [string, string][] } {
  const lines: [string, string][] = [
    ['outage', `every handler failed for ${(figures.outageMs / 1000).toFixed(0)} s from the start (longer than the emulator's whole retry window)`],
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
  // One backoff period, plus the workers' poll interval and the time the drain itself takes to run them all; the
  // entries a drain kill cut wait for their lease to end first.
  const allowance = config.backoffMaxMs + 1000 + (figures.drainKill === undefined ? 0 : config.leaseMs)
  if (figures.maxMs > allowance) violations.push(['a result processed later than one backoff period after recovery', `${figures.maxMs} ms > ${allowance} ms`])
  return { lines, violations }
}
