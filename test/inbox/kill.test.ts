import { type ChildProcess, fork } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { createReceiver, type ReceiverStore } from '../../src/index.js'
import { postgresStore } from '../../src/stores/postgres/store.js'
import { redisStore } from '../../src/stores/redis/store.js'
import { dropStoreTables, uniqueTable } from '../stores/postgres-suites.js'
import { DATABASE_URL, REDIS_URL, serviceAvailable } from '../stores/services.js'
import { deliver, eventually, TOKEN } from './suite.js'

const available = (await serviceAvailable('PostgreSQL', DATABASE_URL)) && (await serviceAvailable('Redis', REDIS_URL))
const LEASE_MS = 1500

/** Forks kill-worker.ts and resolves once it is inside a handler. */
function workerInHandler(settings: Record<string, unknown>): { child: ChildProcess; inHandler: Promise<number> } {
  const child = fork(new URL('./kill-worker.ts', import.meta.url), [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, KILL_WORKER: JSON.stringify({ ...settings, leaseMs: LEASE_MS, token: TOKEN }) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const inHandler = new Promise<number>((resolve, reject) => {
    child.on('message', (message: { type: string; pid?: number }) => {
      if (message.type === 'in-handler') resolve(message.pid as number)
    })
    child.once('exit', (code) => reject(new Error(`the worker exited (${String(code)}) before reaching the handler`)))
  })
  return { child, inHandler }
}

const exited = (child: ChildProcess) => new Promise<unknown>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(null) : child.once('exit', resolve)))

describe.skipIf(!available)('inbox: a worker SIGKILLed in the middle of a handler', () => {
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 4 })
  pool.on('error', () => {})
  const redis = new Redis(REDIS_URL)
  const ledger = uniqueTable('kill_ledger')
  const tables = [uniqueTable('kill')]
  const prefix = `fpx-inbox-kill:${randomUUID()}:`
  const children: ChildProcess[] = []
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL')
    for (const table of tables) await dropStoreTables(pool, table)
    await pool.query(`DROP TABLE IF EXISTS "${ledger}"`)
    const keys = await redis.keys(`${prefix}*`)
    if (keys.length > 0) await redis.del(...keys)
    await Promise.all([pool.end(), redis.quit()])
  })

  async function scenario(kind: 'postgres' | 'redis', store: () => ReceiverStore<pg.PoolClient | undefined>) {
    await pool.query(`CREATE TABLE IF NOT EXISTS "${ledger}" (id text NOT NULL, pid int NOT NULL)`)
    // This process only accepts until the worker is dead; then it takes the work over.
    const survivor = createReceiver<pg.PoolClient | undefined>({ signatureOnly: true, checksumToken: TOKEN, store: store(), leaseMs: LEASE_MS, inbox: { work: false } })
    const runs: string[] = []
    survivor.on('payment.succeeded', async (event) => {
      await (event.transaction ?? pool).query(`INSERT INTO "${ledger}" (id, pid) VALUES ($1, $2)`, [event.id, process.pid])
      runs.push(event.id)
    })
    const ex = `EX-${randomUUID()}`
    expect((await deliver(survivor as never, ex, 'succeeded')).outcome).toBe('queued')
    const { child, inHandler } = workerInHandler({ kind, url: REDIS_URL, table: tables[0], ledger, prefix })
    children.push(child)
    const pid = await inHandler
    child.kill('SIGKILL')
    await exited(child)
    // The dead worker's attempt counted, and its lease still holds the entry: only its expiry frees it.
    const [held] = await survivor.inbox.show(ex)
    expect(held).toMatchObject({ status: 'pending', attempts: 1, leasedUntil: expect.any(Date) })
    const worker = survivor.inbox.work({ pollMs: 50 })
    expect(await eventually(async () => (await survivor.inbox.show(ex)).length === 0, 15_000)).toBe(true)
    await worker.stop()
    expect(runs).toEqual([`${ex}:succeeded`])
    const rows = (await pool.query<{ pid: number }>(`SELECT pid FROM "${ledger}" WHERE id = $1 ORDER BY pid`, [`${ex}:succeeded`])).rows
    return { rows, pid }
  }

  it('PostgreSQL, transactional: the killed attempt rolls back and the next worker runs it once', async () => {
    const { rows, pid } = await scenario('postgres', () => postgresStore({ client: pool, table: tables[0], transactional: true }))
    // The killed worker's insert died with its connection: exactly one effect, by the survivor.
    expect(rows.map((row) => row.pid)).toEqual([process.pid])
    expect(rows.some((row) => row.pid === pid)).toBe(false)
  })

  it('Redis: the entry is taken again once the lease ends, and handled', async () => {
    const { rows, pid } = await scenario('redis', () => redisStore({ client: redis, prefix }) as ReceiverStore<undefined>)
    // Without transactions, the killed attempt's effect stays (as the Redis store documents): two effects, one each.
    expect(rows.map((row) => row.pid).sort()).toEqual([pid, process.pid].sort())
  })
})
