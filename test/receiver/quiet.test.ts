import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import { describe, expect, it } from 'vitest'
import { redisStore } from '../../src/stores/redis/store.js'
import { DATABASE_URL, REDIS_URL, serviceAvailable } from '../stores/services.js'

/*
 * Issue 36, point 6: `logger: false` silences everything the package prints. Whatever a process prints is read
 * whole: quiet-scenario.ts provokes every kind of line (warnings at creation, refusals, handler failures, the API
 * down, the book failing) with each store. The one exception, documented in docs/operations.md: the Redis store's
 * own durability warning, which goes to the store's `logger` option (the store is made before, and apart from, the
 * receivers that use it).
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const redis = await serviceAvailable('Redis', REDIS_URL)
const postgres = await serviceAvailable('PostgreSQL', DATABASE_URL)

function scenario(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/receiver/quiet-scenario.ts'], { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', ...env } })
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (code) => resolve({ code, output }))
  })
}

describe('logger: false', { timeout: 120_000 }, () => {
  it('prints nothing at all with the memory, PostgreSQL and PGlite stores; by default the same process warns', async () => {
    const stores = ['memory', 'pglite', ...(postgres ? ['postgres'] : [])]
    const runs = await Promise.all(stores.map((store) => scenario({ FPX_QUIET: '1', FPX_QUIET_STORE: store })))
    for (const [i, run] of runs.entries()) expect(run, stores[i]).toEqual({ code: 0, output: '' })
    // The same scenario without `logger: false`: each kind of line it provokes reaches the console.
    const loud = await scenario({ FPX_QUIET_STORE: 'memory' })
    expect(loud.code).toBe(0)
    for (const line of ['signature-only receiver', 'refused a delivery', 'handler threw', 'no handler is registered', 'could not confirm', 'transactions list could not be read', 'the status API could not be asked', 'could not record a payment'])
      expect(loud.output).toContain(line)
  })

  it.skipIf(!redis)("Redis: only the store's own durability warning, which its logger option silences", async () => {
    const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
    const { warnings } = await redisStore({ client, inspect: false })
      .inspect()
      .finally(() => client.quit())
    const [quiet, silenced] = await Promise.all([
      scenario({ FPX_QUIET: '1', FPX_QUIET_STORE: 'redis' }),
      scenario({ FPX_QUIET: '1', FPX_QUIET_STORE: 'redis', FPX_QUIET_REDIS_LOGGER: 'silent' }),
    ])
    // What prints is exactly the warnings this server earns (none for one that persists every write).
    expect(quiet).toEqual({ code: 0, output: warnings.map((warning) => `fpx-collect: ${warning}\n`).join('') })
    expect(silenced).toEqual({ code: 0, output: '' })
  })
})
