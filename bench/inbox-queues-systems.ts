/*
 * The four queues bench/inbox-queues.ts drives on their own (and the library half of the two "+ claim" systems in
 * bench/inbox-queues-claim.ts), each opened once per run on the real services and closed (its tables, schema or
 * keys removed) at the end. A system takes signed callback bodies and calls `handled` from its handler with the
 * exchange_number; everything else (timing, checking that each ran once) is the harness's.
 */
import { createHash } from 'node:crypto'
import { Queue, Worker } from 'bullmq'
import { Redis } from 'ioredis'
import pg from 'pg'
import PgBoss from 'pg-boss'
import { rawCommand } from '../src/stores/redis/client.js'
import { CONNECT_TIMEOUT_MS, ioredis } from './connect-redis.js'
import type { Core } from './dist.js'

/** Runs `start`; when it fails, closes whatever it had opened before passing the error on. */
async function startOrClose(start: () => Promise<void>, close: () => Promise<void>): Promise<void> {
  try {
    await start()
  } catch (error) {
    await close()
    throw error
  }
}

export const CONTENT_TYPE = 'application/x-www-form-urlencoded'

export interface Setup {
  core: Core
  postgresStore: typeof import('../src/stores/postgres/store.js').postgresStore
  redisStore: typeof import('../src/stores/redis/store.js').redisStore
  checksumToken: string
  /** Handlers running at once, in total, for every system. */
  concurrency: number
  /** Connections per pg pool (ours and pg-boss's alike). */
  poolMax: number
  /** pg-boss: jobs per fetch; ceil(concurrency / batch) work() loops. */
  pgBossBatch: number
  runId: string
  databaseUrl: string
  redisUrl: string
  /** The handler ran for this exchange_number. */
  handled(exchangeNumber: string): void
}

export interface System {
  name: string
  /** Shown under the table: how it was set up. */
  about: string
  /** Accepts one signed callback; resolves once it is durable in the queue. */
  enqueue(body: Buffer): Promise<void>
  close(): Promise<void>
}

/** The trivial handler every system runs: one await, then report. */
export async function trivial(setup: Setup, exchangeNumber: string): Promise<void> {
  await Promise.resolve()
  setup.handled(exchangeNumber)
}

/**
 * What the libraries' producers do before sending: the same verification ours does inside handle(), by a
 * receiver without a store of consequence, so both sides pay for parsing and the HMAC.
 */
function verifier(setup: Setup) {
  const receiver = setup.core.createReceiver({ checksumToken: setup.checksumToken, signatureOnly: true, logger: false, store: setup.core.memoryStore(), timeline: false, telemetry: false })
  return async (body: Buffer) => {
    const verified = await receiver.verify({ body, contentType: CONTENT_TYPE })
    const data: JobData = { exchangeNumber: verified.exchangeNumber, state: verified.state, fields: verified.fields, rendering: verified.rendering }
    return { key: `${verified.exchangeNumber}:${verified.state}`, data }
  }
}

/** ours: a receiver in inbox mode; handle() verifies and writes the inbox, its in-process worker runs the handlers. */
function ours(setup: Setup, store: Parameters<Core['createReceiver']>[0]['store']) {
  const receiver = setup.core.createReceiver({
    checksumToken: setup.checksumToken,
    signatureOnly: true,
    logger: false,
    store,
    inbox: { concurrency: setup.concurrency },
    timeline: false,
    telemetry: false,
  })
  receiver.on('payment.succeeded', (event) => trivial(setup, event.payment.exchangeNumber))
  return {
    enqueue: async (body: Buffer) => {
      const response = await receiver.handle({ kind: 'callback', body, contentType: CONTENT_TYPE })
      if (response.outcome !== 'queued') throw new Error(`inbox mode answered ${response.outcome}: ${response.body}`)
    },
    stop: () => receiver.inbox.stop(),
  }
}

export async function oursPostgres(setup: Setup): Promise<System> {
  const pool = new pg.Pool({ connectionString: setup.databaseUrl, max: setup.poolMax, connectionTimeoutMillis: CONNECT_TIMEOUT_MS })
  const table = `fpx_bench_${setup.runId}_inbox`
  const system = ours(setup, setup.postgresStore({ client: pool, table }))
  return {
    name: 'ours, PostgreSQL',
    about: `postgresStore (not transactional) on a pg Pool of ${setup.poolMax}; inbox { concurrency: ${setup.concurrency} }, one worker`,
    enqueue: system.enqueue,
    async close() {
      try {
        await system.stop()
        for (const suffix of ['', '_inbox', '_timeline']) await pool.query(`DROP TABLE IF EXISTS "${table}${suffix}"`)
      } finally {
        await pool.end()
      }
    },
  }
}

/** A name-based UUID (the v5 layout over SHA-1): pg-boss job ids must be UUIDs, so exchange:state becomes one. */
function uuidOf(key: string): string {
  const hash = createHash('sha1').update(`fpx-collect:${key}`).digest()
  hash[6] = (hash[6]! & 0x0f) | 0x50
  hash[8] = (hash[8]! & 0x3f) | 0x80
  const hex = hash.subarray(0, 16).toString('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

/** The job data the libraries' producers send: the verified result, as the inbox would store it. */
export interface JobData {
  exchangeNumber: string
  state: string
  fields: Record<string, unknown>
  rendering: string
}

/** How a library system differs between bench/inbox-queues.ts (alone) and bench/inbox-queues-claim.ts. */
export interface LibraryVariant {
  name: string
  /** Added to `about`. */
  about: string
  /** Schema or key-prefix suffix, so two systems of one library never share a queue. */
  suffix: string
  /** The job handler. */
  job(data: JobData): Promise<void>
  /** pg-boss only: run its SQL on this pool (the `db` option) instead of opening one of its own. */
  pool?: pg.Pool
}

const alone = (setup: Setup, name: string): LibraryVariant => ({
  name,
  about: '',
  suffix: '',
  job: (data) => trivial(setup, data.exchangeNumber),
})

export function pgBoss(setup: Setup): Promise<System> {
  return pgBossWith(setup, alone(setup, 'pg-boss 10'))
}

export async function pgBossWith(setup: Setup, variant: LibraryVariant): Promise<System> {
  const schema = `fpxbench_${setup.runId}${variant.suffix}`
  const queue = 'payments'
  // Cron and its clock checks are off (no schedules here); maintenance stays as shipped.
  const connection =
    variant.pool === undefined
      ? { connectionString: setup.databaseUrl, max: setup.poolMax }
      : { db: { executeSql: (text: string, values: unknown[]) => variant.pool!.query(text, values) } }
  const boss = new PgBoss({ ...connection, schema, schedule: false })
  boss.on('error', (error: unknown) => console.error('pg-boss:', error))
  const verify = verifier(setup)
  const batchSize = setup.pgBossBatch
  const workers = Math.ceil(setup.concurrency / batchSize)
  const ids: string[] = []
  let closed = false
  const close = async () => {
    if (closed) return
    closed = true
    try {
      await boss.stop({ graceful: true, wait: true, timeout: 10_000 })
    } finally {
      const pool = new pg.Pool({ connectionString: setup.databaseUrl, max: 1 })
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => pool.end())
    }
  }
  await startOrClose(async () => {
    await boss.start()
    await boss.createQueue(queue, { name: queue, policy: 'standard' })
    for (let i = 0; i < workers; i++) {
      // 0.5 s is the least polling interval pg-boss 10 accepts; a worker is notified rather than left to poll:
      // by every send (as ours wakes its worker on accept) and by itself when a batch came back full (as ours
      // takes again after a full take). Without that it fetches at most once per 0.5 s.
      const id = await boss.work<JobData>(queue, { batchSize, pollingIntervalSeconds: 0.5 }, async (jobs) => {
        await Promise.all(jobs.map((job) => variant.job(job.data)))
        if (jobs.length === batchSize) boss.notifyWorker(id)
      })
      ids.push(id)
    }
  }, close)
  return {
    name: variant.name,
    about:
      `${variant.pool === undefined ? `own pg pool of ${setup.poolMax}` : 'db: the store\'s pool'}, schema ${schema}, standard queue; ` +
      `send(…, { id: UUID of exchange:state, singletonKey: exchange:state }); ` +
      `${workers} work() loop(s) × batchSize ${batchSize}, pollingIntervalSeconds 0.5, notifyWorker on send and on a full batch${variant.about}`,
    async enqueue(body) {
      const { key, data } = await verify(body)
      const id = await boss.send(queue, data, { id: uuidOf(key), singletonKey: key })
      if (id === null) throw new Error(`pg-boss refused ${key} as a duplicate`)
      for (const worker of ids) boss.notifyWorker(worker)
    },
    close,
  }
}


export async function unlinkPrefix(client: Redis, prefix: string): Promise<void> {
  const send = rawCommand(client)
  let cursor = '0'
  do {
    const [next, keys] = (await send(['SCAN', cursor, 'MATCH', `${prefix}*`, 'COUNT', '1000'])) as [unknown, unknown[]]
    cursor = String(next)
    if (keys.length > 0) await send(['UNLINK', ...keys.map(String)])
  } while (cursor !== '0')
}

export async function oursRedis(setup: Setup): Promise<System> {
  const client = await ioredis(setup.redisUrl)
  const prefix = `fpx-bench:${setup.runId}:inbox:`
  const system = ours(setup, setup.redisStore({ client, prefix }))
  return {
    name: 'ours, Redis',
    about: `redisStore on one ioredis connection, prefix ${prefix}; inbox { concurrency: ${setup.concurrency} }, one worker`,
    enqueue: system.enqueue,
    async close() {
      try {
        await system.stop()
        await unlinkPrefix(client, prefix)
      } finally {
        await client.quit()
      }
    },
  }
}

export function bullmq(setup: Setup): Promise<System> {
  return bullmqWith(setup, alone(setup, 'BullMQ'))
}

export async function bullmqWith(setup: Setup, variant: LibraryVariant): Promise<System> {
  const prefix = `fpxbench-${setup.runId}${variant.suffix}`
  const name = 'payments'
  // BullMQ wants maxRetriesPerRequest null on the connections its workers block on.
  const connection = { url: setup.redisUrl, maxRetriesPerRequest: null, connectTimeout: CONNECT_TIMEOUT_MS }
  const verify = verifier(setup)
  const queue = new Queue(name, { connection, prefix })
  const worker = new Worker<JobData>(name, (job) => variant.job(job.data), {
    connection,
    prefix,
    concurrency: setup.concurrency,
  })
  queue.on('error', (error) => console.error('bullmq queue:', error))
  worker.on('error', (error) => console.error('bullmq worker:', error))
  const close = async () => {
    try {
      await worker.close()
      await queue.obliterate({ force: true })
      await queue.close()
    } finally {
      const client = await ioredis(setup.redisUrl)
      await unlinkPrefix(client, `${prefix}:`).finally(() => client.quit())
    }
  }
  await startOrClose(async () => {
    await queue.waitUntilReady()
    await worker.waitUntilReady()
  }, close)
  return {
    name: variant.name,
    about:
      `prefix ${prefix}; Queue.add(…, { jobId: exchange-state }) (BullMQ refuses ':' in a custom id); one Worker, ` +
      `concurrency ${setup.concurrency}; jobs kept after completion (the default)${variant.about}`,
    async enqueue(body) {
      const { key, data } = await verify(body)
      await queue.add('payment', data, { jobId: key.replace(':', '-') })
    },
    close,
  }
}
