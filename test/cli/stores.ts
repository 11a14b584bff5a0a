import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll } from 'vitest'
import type { ReceiverStore } from '../../src/index.js'
import { postgresStore } from '../../src/stores/postgres/store.js'
import { redisStore } from '../../src/stores/redis/store.js'
import { dropStoreTables, uniqueTable } from '../stores/postgres-suites.js'
import { DATABASE_URL, REDIS_URL } from '../stores/services.js'

/**
 * The operator commands' stores for one describe block: a PostgreSQL table and a Redis prefix of its own (removed
 * after the block), each with the flags that name it to the CLI.
 */
export function cliStores(part: string): {
  readonly pool: pg.Pool
  readonly redis: Redis
  readonly table: string
  readonly prefix: string
  readonly cases: [string, () => ReceiverStore<unknown>, string[]][]
} {
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 3 })
  const redis = new Redis(REDIS_URL)
  const table = uniqueTable('cli')
  const prefix = `fpx-${part}-cli:${randomUUID()}:`
  afterAll(async () => {
    await dropStoreTables(pool, table)
    const keys = await redis.keys(`${prefix}*`)
    if (keys.length > 0) await redis.del(...keys)
    await Promise.all([pool.end(), redis.quit()])
  })
  return {
    pool,
    redis,
    table,
    prefix,
    cases: [
      ['PostgreSQL', () => postgresStore({ client: pool, table }), ['--url', DATABASE_URL, '--table', table]],
      ['Redis', () => redisStore({ client: redis, prefix, inspect: false }), ['--url', REDIS_URL, '--prefix', prefix]],
    ],
  }
}
