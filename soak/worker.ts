/**
 * One receiver process of the soak: an Express app with the callback and redirect routes, on its own
 * 127.0.0.1 port, sharing the store named in SOAK_WORKER with its siblings. Its handlers fail at random before
 * any effect, and otherwise write one ledger row per run: through the claim's transaction with PostgreSQL, on a
 * connection of their own with Redis. It tells the driver its port over IPC and dies with it.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import express, { type RequestHandler } from 'express'
import { Redis } from 'ioredis'
import pg from 'pg'
import { type ExpressMiddleware, fpxCallback, fpxRedirect } from '../adapters/express.js'
import { createReceiver, type PaymentEvent, type Receiver } from '../src/index.js'
import { postgresStore } from '../src/stores/postgres/store.js'
import { redisStore } from '../src/stores/redis/store.js'
import { ATTEMPT_HEADER, CALLBACK_PATH, DELIVERY_HEADER, REDIRECT_PATH, TOKEN, type WorkerSettings } from './protocol.js'
import { serveWorker, soakLogger } from './serve.js'

const INJECTED = 'soak: injected handler failure, before any effect'
const OUTAGE = 'soak: handler outage (every handler fails until it ends)'

const settings = JSON.parse(process.env.SOAK_WORKER ?? 'null') as WorkerSettings
if (settings === null) throw new Error('soak/worker.ts is started by soak/driver.ts (SOAK_WORKER is missing)')

const requestContext = new AsyncLocalStorage<{ delivery: number; attempt: number }>()
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const pool = new pg.Pool({ connectionString: settings.databaseUrl, max: settings.poolSize })
// An idle connection the server dropped is not this worker's problem; the next query reconnects.
pool.on('error', () => {})

// Only what the soak does not cause on purpose: the injected failures would drown everything else.
const logger = soakLogger('worker', (err) => err.message === INJECTED || err.message === OUTAGE)

type Queryable = Pick<pg.PoolClient, 'query'>
const ledger = `INSERT INTO "${settings.ledgerTable}" (exchange_number, state, kind, pid, delivery, attempt) VALUES ($1, $2, $3, $4, $5, $6)`

async function recordRun(event: PaymentEvent<Queryable | undefined>): Promise<void> {
  const outage = settings.inbox
  if (outage !== undefined && Date.now() >= outage.outageStartAt && Date.now() < outage.outageEndAt) throw new Error(OUTAGE)
  if (Math.random() < settings.failRate) throw new Error(INJECTED)
  const db = settings.store === 'postgres' ? event.transaction : pool
  if (db === undefined) throw new Error('soak: the transactional store handed the handler no transaction')
  const context = requestContext.getStore()
  await db.query(ledger, [event.payment.exchangeNumber, event.state, event.delivery, process.pid, context?.delivery ?? -1, context?.attempt ?? -1])
  // The effect is done and the claim not yet completed: the window a SIGKILL can hit.
  if (settings.effectDelayMs > 0) await sleep(Math.random() * settings.effectDelayMs)
}

let redis: Redis | undefined
let receiver: Receiver<Queryable | undefined>
// Inbox mode: answered once in the inbox; this process's workers retry every 250 ms at first, then up to
// backoffMaxMs apart, and never give up within a soak. A transactional attempt holds a pool connection while its
// handler runs; two are left for taking and finishing entries.
const inbox =
  settings.inbox === undefined
    ? undefined
    : { pollMs: 250, concurrency: Math.max(1, settings.poolSize - 2), maxAttempts: 100_000, backoff: { baseMs: 250, maxMs: settings.inbox.backoffMaxMs } }
// The soak tries the stores under kills and outages with payments it signs itself, so there is no service API
// to confirm them with; the confirmed path under load is bench:fleet's.
const common = { signatureOnly: true as const, checksumToken: TOKEN, leaseMs: settings.leaseMs, logger, ...(inbox === undefined ? {} : { inbox }) }
if (settings.store === 'redis') {
  // Across a restart, ioredis resends the commands it had in flight once it reconnects, if they may wait for it.
  redis = new Redis(settings.redisUrl, { maxRetriesPerRequest: settings.storeRestarts ? null : 2 })
  // A restart's refused reconnections are expected; the commands' own failures are what the receiver reports.
  redis.on('error', () => {})
  receiver = createReceiver({ ...common, store: redisStore({ client: redis, prefix: settings.redisPrefix, logger: { warn: () => {}, debug: () => {} } }) })
} else {
  // A short lock timeout frees the connection of a duplicate that finds the row held: it answers 409 instead.
  const store = postgresStore({ client: pool, table: settings.storeTable, transactional: true, lockTimeoutMs: 500, pruneEvery: 0 })
  receiver = createReceiver<Queryable | undefined>({ ...common, store })
}
for (const name of ['payment.succeeded', 'payment.failed', 'payment.pending'] as const) receiver.on(name, recordRun)

/** Runs the adapter's route with the driver's delivery id and attempt in reach of the handlers. */
function withContext(route: ExpressMiddleware): RequestHandler {
  return (request, response, next) => {
    const context = { delivery: Number(request.get(DELIVERY_HEADER) ?? -1), attempt: Number(request.get(ATTEMPT_HEADER) ?? -1) }
    requestContext.run(context, () => route(request, response, next))
  }
}

const app = express()
app.disable('x-powered-by')
app.post(CALLBACK_PATH, withContext(fpxCallback(receiver)))
app.post(REDIRECT_PATH, withContext(fpxRedirect(receiver)))

serveWorker(app, async () => {
  // The timeline is written behind the answers: let it reach the store before the connections close.
  await receiver.flush().catch(() => {})
  logger.summary()
  await Promise.allSettled([pool.end(), redis?.quit()])
})
// The driver ends the outage once the traffic is done and the outage lasted its time.
process.on('message', (message: { type?: string; at?: number }) => {
  if (message.type === 'recover' && settings.inbox !== undefined && typeof message.at === 'number') settings.inbox.outageEndAt = message.at
})
