/**
 * One Express receiver process of bench/fleet.ts's fleet: POST /fpx/callback and POST /fpx/redirect (303 to the
 * shop's page), sharing the column's store with the other processes. Its configuration comes in FLEET_RECEIVER
 * (JSON), not argv, so the credentials stay out of `ps`. Counts what the parent cannot see from outside: the
 * store round trips this process sent, the requests per route, and each handler run.
 */
import { createHmac } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import express from 'express'
import type { Redis } from 'ioredis'
import pg from 'pg'
import type { ReceiverStore } from '../src/contract/store.js'
import type { Receiver } from '../src/index.js'
import { ioredis } from './connect-redis.js'
import { type Core, fromDist } from './dist.js'
import { serveParent } from './fleet-child.js'

export type ColumnKind = 'redis' | 'redis-confirm' | 'postgres-confirm' | 'naive'

export interface ReceiverConfig {
  kind: ColumnKind
  /** Redis key prefix of this run and column (the store's, or the naive receiver's SET NX keys). */
  prefix: string
  /** PostgreSQL table of this run and column. */
  table: string
  /** application_name of the pool's connections, so the parent can find their backends' CPU. */
  applicationName: string
  redisUrl: string
  databaseUrl: string
  emulatorBaseUrl: string
  credentials: { uid: string; authToken: string; checksumToken: string }
}

/** What the parent asks for after a step: counters since the previous report. */
export interface ReceiverReport {
  requests: { callback: number; redirect: number }
  /** `exchange_number:state` of every handler run. */
  handled: string[]
  /** Commands (Redis) or statements (PostgreSQL) this process sent to the store. */
  roundTrips: number
  warnings: number
  firstWarnings: string[]
}

const { createReceiver } = await fromDist<Core>('index')
const { redisStore } = await fromDist<typeof import('../src/stores/redis/store.js')>('redis')
const { postgresStore } = await fromDist<typeof import('../src/stores/postgres/store.js')>('postgres')
const { fpxCallback, fpxRedirect } = await fromDist<typeof import('../adapters/express.js')>('express')

const config = JSON.parse(process.env.FLEET_RECEIVER ?? '') as ReceiverConfig
const report: ReceiverReport = { requests: { callback: 0, redirect: 0 }, handled: [], roundTrips: 0, warnings: 0, firstWarnings: [] }

// Counted where the driver sends, below the store: what a delivery costs in round trips, whatever the store does.
let counting = true
let lastQueryAt = 0
let redis: Redis | undefined
if (config.kind !== 'postgres-confirm') {
  redis = await ioredis(config.redisUrl)
  const call = redis.call.bind(redis) as (...args: unknown[]) => Promise<unknown>
  redis.call = ((...args: unknown[]) => {
    report.roundTrips++
    return call(...args)
  }) as Redis['call']
}
let pool: pg.Pool | undefined
if (config.kind === 'postgres-confirm') {
  const query = pg.Client.prototype.query as (...args: unknown[]) => unknown
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    if (counting) report.roundTrips++
    lastQueryAt = performance.now()
    return query.apply(this, args)
  } as typeof pg.Client.prototype.query
  // Connections kept for the whole run: the parent reads their backends' CPU from /proc by pid.
  pool = new pg.Pool({ connectionString: config.databaseUrl, application_name: config.applicationName, idleTimeoutMillis: 0 })
}

const logger = {
  debug: () => {},
  info: () => {},
  warn: (_details: object, message: string) => note(message),
  error: (_details: object, message: string) => note(message),
}
function note(message: string): void {
  report.warnings++
  if (report.firstWarnings.length < 3) report.firstWarnings.push(message)
}

/** The receiver of a column: signature only (`redis`), or confirmed over the emulator's API (the default). */
function makeReceiver(store: ReceiverStore<unknown>): Receiver<unknown> {
  const { checksumToken } = config.credentials
  if (config.kind === 'redis') return createReceiver({ checksumToken, signatureOnly: true, store, logger })
  return createReceiver({ environment: { baseUrl: config.emulatorBaseUrl }, credentials: config.credentials, store, logger })
}

/** The naive receiver merchants write: the parser's object, checksum out, values in name order, HMAC, SET NX. */
function naiveRoute(redisClient: Redis, answer: (response: express.Response) => void): express.RequestHandler {
  const { checksumToken } = config.credentials
  return async (request, response) => {
    const { checksum, ...rest } = (request.body ?? {}) as Record<string, string>
    const text = Object.keys(rest)
      .sort()
      .map((name) => rest[name])
      .join('|')
    if (typeof checksum !== 'string' || createHmac('sha256', checksumToken).update(text).digest('hex') !== checksum) {
      response.status(401).send('Unauthorized')
      return
    }
    const state = `${rest.exchange_number}:${rest.fpx_debit_auth_code}`
    try {
      if ((await redisClient.call('SET', `${config.prefix}${state}`, '1', 'NX', 'EX', '86400')) === 'OK') report.handled.push(state)
    } catch {
      response.status(503).send('Store unavailable')
      return
    }
    answer(response)
  }
}

const app = express()
app.use((request, _response, next) => {
  if (request.path === '/fpx/callback') report.requests.callback++
  else if (request.path === '/fpx/redirect') report.requests.redirect++
  next()
})
let receiver: Receiver<unknown> | undefined
if (config.kind === 'naive') {
  const form = express.urlencoded({ extended: false })
  app.post('/fpx/callback', form, naiveRoute(redis as Redis, (response) => void response.status(200).type('text/plain').send('OK')))
  app.post('/fpx/redirect', form, naiveRoute(redis as Redis, (response) => response.redirect(303, '/thanks')))
} else {
  const store =
    config.kind === 'postgres-confirm'
      ? postgresStore({ client: pool as pg.Pool, table: config.table })
      : // Its logger too: the durability warning (a Redis without persistence) is counted, not printed by each process.
        redisStore({ client: redis as Redis, prefix: config.prefix, logger })
  receiver = makeReceiver(store as ReceiverStore<unknown>)
  for (const name of ['payment.succeeded', 'payment.failed', 'payment.pending'] as const) receiver.on(name, (event) => void report.handled.push(event.id))
  app.post('/fpx/callback', fpxCallback(receiver))
  app.post('/fpx/redirect', fpxRedirect(receiver, { successUrl: '/thanks', failureUrl: '/sorry', pendingUrl: '/pending' }))
}

const server = app.listen(0, '127.0.0.1')
await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject))

/**
 * PostgreSQL publishes a backend's statistics (pg_stat_database, pg_stat_user_tables) at most once a second, and
 * an idle one up to 10 s later: one statement on every connection, a second after the last, makes each publish
 * now. Not counted as the store's work; answers how many transactions it added (published by the next call).
 */
async function publishPgStats(): Promise<number> {
  if (pool === undefined) return 0
  const wait = 1100 - (performance.now() - lastQueryAt)
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
  counting = false
  try {
    const clients = await Promise.all(Array.from({ length: pool.totalCount }, () => (pool as pg.Pool).connect()))
    await Promise.all(clients.map((client) => client.query('SELECT 1')))
    for (const client of clients) client.release()
    return clients.length
  } finally {
    counting = true
  }
}

serveParent(
  {
    report: () => {
      const copy = { ...report, requests: { ...report.requests } }
      Object.assign(report, { requests: { callback: 0, redirect: 0 }, handled: [], roundTrips: 0, warnings: 0, firstWarnings: [] })
      return copy
    },
    publishPgStats,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
      await receiver?.close()
      redis?.disconnect()
      await pool?.end()
    },
  },
  { port: (server.address() as AddressInfo).port },
)
