import { Redis } from 'ioredis'
import pg from 'pg'
import { PAYMENT_STATES, STATE_BIT } from '../src/core/payment.js'
import { postgresStore } from '../src/stores/postgres/store.js'
import type { SoakConfig, StoreKind } from './config.js'
import type { LedgerRow } from './checks.js'
import { LEDGER_COLUMNS } from './protocol.js'

/*
 * The run's own table names and key prefix (a random tag in each, so parallel runs never meet), their creation,
 * what the store holds at the end, and their removal.
 */

export interface RunResources {
  readonly tag: string
  readonly ledgerTable: string
  readonly storeTable: string
  readonly redisPrefix: string
  /** A small pool for the driver's own queries. */
  readonly pool: pg.Pool
  readonly redis: Redis | undefined
}

export async function createResources(store: StoreKind, config: SoakConfig, tag: string): Promise<RunResources> {
  const pool = new pg.Pool({ connectionString: config.databaseUrl, max: 2 })
  pool.on('error', () => {})
  const resources: RunResources = {
    tag,
    ledgerTable: `soak_ledger_${tag}`,
    storeTable: `soak_store_${tag}`,
    redisPrefix: `soak:${tag}:`,
    pool,
    redis: store === 'redis' ? new Redis(config.redisUrl, { maxRetriesPerRequest: 2 }) : undefined,
  }
  // Refused reconnections while a --restart-store run has the server down; the queries at the end report theirs.
  resources.redis?.on('error', () => {})
  try {
    await pool.query(`CREATE TABLE "${resources.ledgerTable}" ${LEDGER_COLUMNS}`)
    // Made once here rather than by four workers racing to create it on their first claim.
    if (store === 'postgres') await postgresStore({ client: pool, table: resources.storeTable }).migrate()
  } catch (error) {
    await dropResources(resources, false)
    throw error
  }
  return resources
}

export async function ledgerRows(resources: RunResources): Promise<LedgerRow[]> {
  const { rows } = await resources.pool.query<LedgerRow>(
    `SELECT id::float8 AS id, exchange_number, state, pid, extract(epoch FROM at)::float8 * 1000 AS at FROM "${resources.ledgerTable}" ORDER BY id`,
  )
  return rows
}

/** The handled states per exchange_number and the number of leases still held, as the store itself sees them. */
export async function storeState(resources: RunResources, exchangeNumbers: readonly string[]): Promise<{ handled: Map<string, string[]>; leasesLeft: number }> {
  const handled = new Map<string, string[]>()
  if (resources.redis === undefined) {
    const { rows } = await resources.pool.query<{ exchange_number: string; handled: string[]; leased: boolean }>(
      `SELECT exchange_number, handled, lease_owner IS NOT NULL AS leased FROM "${resources.storeTable}"`,
    )
    for (const row of rows) handled.set(row.exchange_number, row.handled)
    return { handled, leasesLeft: rows.filter((row) => row.leased).length }
  }
  const redis = resources.redis
  const key = (exchangeNumber: string) => `${resources.redisPrefix}{${exchangeNumber}}:handled`
  let leasesLeft = 0
  for (let start = 0; start < exchangeNumbers.length; start += 1000) {
    const batch = exchangeNumbers.slice(start, start + 1000)
    const values = await redis.mget(...batch.map(key))
    batch.forEach((exchangeNumber, i) => {
      // <handled>:<kind>:<until>:<state>:<owner> (src/stores/redis/payment-key.ts); no key, nothing handled.
      const [bits = '', kind, until = ''] = (values[i] ?? '0:N:').split(':')
      if (!/^[0-7]$/.test(bits)) throw new Error(`the Redis store kept ${JSON.stringify(values[i])} for ${exchangeNumber}`)
      handled.set(exchangeNumber, PAYMENT_STATES.filter((state) => Number(bits) & STATE_BIT[state]))
      // A lease without an end lives as long as its key; one with an end, until then.
      if (kind === 'L' && (until === '' || Number(until) > Date.now())) leasesLeft++
    })
  }
  return { handled, leasesLeft }
}

/** Deletes every key under `prefix` (SCAN, not KEYS: the server keeps answering others); says how many. */
export async function deleteRedisKeys(redis: Redis, prefix: string): Promise<number> {
  let cursor = '0'
  let deleted = 0
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
    cursor = next
    if (keys.length > 0) deleted += await redis.unlink(...keys)
  } while (cursor !== '0')
  return deleted
}

/** Drops the tables and keys (unless `keep`) and closes the connections; never throws. */
export async function dropResources(resources: RunResources, keep: boolean): Promise<void> {
  if (!keep) {
    await resources.pool.query(`DROP TABLE IF EXISTS "${resources.ledgerTable}", "${resources.storeTable}", "${resources.storeTable}_inbox", "${resources.storeTable}_timeline"`).catch((error: Error) => {
      console.error(`could not drop the soak tables: ${error.message}`)
    })
    if (resources.redis !== undefined)
      await deleteRedisKeys(resources.redis, resources.redisPrefix).catch((error: Error) => {
        console.error(`could not delete the soak's Redis keys: ${error.message}`)
      })
  }
  await Promise.allSettled([resources.pool.end(), resources.redis?.quit()])
}
