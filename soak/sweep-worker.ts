/**
 * One receiver process of the sweep soak (soak/sweep.ts): Express with the callback and redirect routes, the shared
 * store, the API client of the emulator, and the in-process sweeper the defaults give it. Handlers write one ledger
 * row per run (in the claim's transaction with PostgreSQL); every status API search is logged with its start
 * (stamped before the database write, as the sweeper's spacing sees it) and end; a delivery answered with a final
 * result logs when the payment became final. Tells the driver its port.
 */
import express from 'express'
import { Redis } from 'ioredis'
import pg from 'pg'
import { fpxCallback, fpxRedirect } from '../adapters/express.js'
import { createClient } from '../src/client/index.js'
import { createReceiver, type DeliveryHandler, type PaymentEvent, type Receiver } from '../src/index.js'
import { postgresStore } from '../src/stores/postgres/store.js'
import { redisStore } from '../src/stores/redis/store.js'
import { serveWorker, soakLogger } from './serve.js'
import { SWEEP_CALLBACK_PATH, SWEEP_REDIRECT_PATH, type SweepWorkerSettings } from './sweep-protocol.js'

const settings = JSON.parse(process.env.SOAK_WORKER ?? 'null') as SweepWorkerSettings
if (settings === null) throw new Error('soak/sweep-worker.ts is started by soak/sweep.ts (SOAK_WORKER is missing)')

// The store's connections (a transactional claim holds one while its handlers run, and while the status API
// confirms it), and the soak's own log's: one pool for both could have every connection held by a claim waiting
// on a confirmation whose log write waits for a connection.
const pool = new pg.Pool({ connectionString: settings.databaseUrl, max: 8 })
pool.on('error', () => {})
const logPool = new pg.Pool({ connectionString: settings.databaseUrl, max: 4 })
logPool.on('error', () => {})

// Errors are what the run must explain: printed (a few of each), never silenced.
const logger = soakLogger('sweep worker')

type Queryable = Pick<pg.PoolClient, 'query'>

const api = createClient({ environment: { baseUrl: settings.emulatorBaseUrl }, ...settings.merchant, logger: false })
/** The client the receiver gets: every search logged, start and end, on the database's clock. */
const client = {
  async searchTransactions(reference: 'exchange_number' | 'order_number', value: string): Promise<readonly object[]> {
    // The start as the sweeper sees it (its spacing runs from here), written before the request goes out.
    const startedAt = new Date()
    const { rows } = await logPool.query<{ id: string }>(
      `INSERT INTO "${settings.lookupsTable}" (reference, value, pid, started_at) VALUES ($1, $2, $3, $4) RETURNING id`,
      [reference, value, process.pid, startedAt],
    )
    try {
      return await api.searchTransactions(reference, value)
    } finally {
      await logPool.query(`UPDATE "${settings.lookupsTable}" SET ended_at = clock_timestamp() WHERE id = $1`, [rows[0]?.id])
    }
  },
}

let redis: Redis | undefined
const common = { checksumToken: settings.merchant.checksumToken, client, leaseMs: settings.leaseMs, logger, sweep: { ...settings.sweep, batch: 1000 } }
let receiver: Receiver<Queryable | undefined>
if (settings.store === 'redis') {
  redis = new Redis(settings.redisUrl, { maxRetriesPerRequest: 2 })
  redis.on('error', () => {})
  receiver = createReceiver({ ...common, store: redisStore({ client: redis, prefix: settings.redisPrefix, inspect: false }) })
} else {
  const store = postgresStore({ client: pool, table: settings.storeTable, transactional: true, lockTimeoutMs: 500, pruneEvery: 0 })
  receiver = createReceiver<Queryable | undefined>({ ...common, store })
}

const ledger = `INSERT INTO "${settings.ledgerTable}" (order_number, exchange_number, state, kind, pid) VALUES ($1, $2, $3, $4, $5)`
async function recordRun(event: PaymentEvent<Queryable | undefined>): Promise<void> {
  const db = settings.store === 'postgres' ? event.transaction : logPool
  if (db === undefined) throw new Error('soak: the transactional store handed the handler no transaction')
  await db.query(ledger, [event.payment.orderNumber, event.payment.exchangeNumber, event.state, event.delivery, process.pid])
}
for (const name of ['payment.succeeded', 'payment.failed', 'payment.pending'] as const) receiver.on(name, recordRun)

/** The receiver as the adapters see it, noting when a delivery made its payment final (the book settled by then). */
const noting: DeliveryHandler = {
  maxBodyBytes: receiver.maxBodyBytes,
  bodyTimeoutMs: receiver.bodyTimeoutMs,
  async handle(delivery) {
    const response = await receiver.handle(delivery)
    const payment = response.payment
    if (response.outcome === 'processed' && payment !== undefined && payment.state !== 'pending')
      await logPool.query(`INSERT INTO "${settings.finalsTable}" (order_number, state, pid) VALUES ($1, $2, $3)`, [payment.orderNumber, payment.state, process.pid])
    return response
  },
}

const app = express()
app.disable('x-powered-by')
app.post(SWEEP_CALLBACK_PATH, fpxCallback(noting))
app.post(SWEEP_REDIRECT_PATH, fpxRedirect(noting))

serveWorker(app, async () => {
  await receiver.close().catch(() => {})
  logger.summary()
  await Promise.allSettled([pool.end(), logPool.end(), redis?.quit()])
})
