/**
 * A result delivered again while a worker runs its last allowed attempt: the sender was answered 200 for that
 * delivery, so when the attempt fails the entry is given back (pending, due now) instead of dead-lettered, and runs
 * again. Without a redelivery, a last attempt that fails dead-letters the entry as before. On Redis and PostgreSQL.
 */
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { createReceiver, type Receiver } from '../../src/index.js'
import type { Logger } from '../../src/core/logger.js'
import { postgresStore } from '../../src/stores/postgres/store.js'
import { redisStore } from '../../src/stores/redis/store.js'
import { dropStoreTables, uniqueTable } from '../stores/postgres-suites.js'
import { DATABASE_URL, REDIS_URL, serviceAvailable } from '../stores/services.js'
import { deliver, eventually, sleep, TOKEN, type InboxStore } from './suite.js'

const redisAvailable = await serviceAvailable('Redis', REDIS_URL)
const postgresAvailable = await serviceAvailable('PostgreSQL', DATABASE_URL)

const INBOX = { pollMs: 50, backoff: { baseMs: 50, maxMs: 200 }, maxAttempts: 1 }

interface Subject {
  name: string
  available: boolean
  /** A store of its own for one test, and how to close it. */
  open(): Promise<{ store: InboxStore; close(): Promise<void> }>
  cleanUp(): Promise<void>
}

/** A promise and the function that resolves it, for a handler the test lets go of when it chooses. */
function gate() {
  let open!: () => void
  const opened = new Promise<void>((resolve) => (open = resolve))
  return { open, opened }
}

/** Logs the messages at error level, which is where a dead-lettered entry is reported. */
function errorsLogged(): { logger: Logger; errors: string[] } {
  const errors: string[] = []
  const ignore = () => {}
  return { errors, logger: { debug: ignore, info: ignore, warn: ignore, error: (_details, message) => void errors.push(message) } }
}

// A prefix or table of its own for each test, so that counts() is the test's own.
const redisPrefix = `fpx-inbox-redelivered:${randomUUID()}:`
const tables: string[] = []

const subjects: Subject[] = [
  {
    name: 'Redis',
    available: redisAvailable,
    async open() {
      const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
      return { store: redisStore({ client, prefix: `${redisPrefix}${randomUUID()}:`, inspect: false }), close: async () => void (await client.quit()) }
    },
    async cleanUp() {
      const admin = new Redis(REDIS_URL)
      const keys = await admin.keys(`${redisPrefix}*`)
      if (keys.length > 0) await admin.del(...keys)
      await admin.quit()
    },
  },
  {
    name: 'PostgreSQL',
    available: postgresAvailable,
    async open() {
      const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 4 })
      pool.on('error', () => {})
      const table = uniqueTable('inbox_revive')
      tables.push(table)
      return { store: postgresStore({ client: pool, table }), close: () => pool.end() }
    },
    async cleanUp() {
      const admin = new pg.Pool({ connectionString: DATABASE_URL, max: 1 })
      for (const table of tables) await dropStoreTables(admin, table)
      await admin.end()
    },
  },
]

for (const subject of subjects) {
  describe.skipIf(!subject.available)(`${subject.name} inbox: a result delivered again while its last attempt runs`, () => {
    afterAll(() => subject.cleanUp())

    async function receiverOn(logger: Logger, leaseMs = 5_000): Promise<{ receiver: Receiver<unknown>; close(): Promise<void> }> {
      const { store, close } = await subject.open()
      // The schema made first: PostgreSQL's first use creates the tables, which can take longer than a short lease's
      // store calls may (half the lease), and the first delivery would be answered 503 store_unavailable.
      await store.openInbox().ready()
      const receiver = createReceiver<unknown>({ checksumToken: TOKEN, signatureOnly: true, store, leaseMs, logger, inbox: INBOX })
      return {
        receiver,
        async close() {
          await receiver.inbox.stop()
          await receiver.flush()
          await close()
        },
      }
    }

    it('gives the entry back when that attempt fails, and runs it again', async () => {
      const { logger, errors } = errorsLogged()
      const { receiver, close } = await receiverOn(logger)
      try {
        const running = gate()
        const first = gate()
        const second = gate()
        let calls = 0
        receiver.on('payment.succeeded', async () => {
          if (calls++ === 0) {
            running.open()
            await first.opened
            throw new Error('the ERP is down')
          }
          await second.opened
        })
        const ex = `EX-${randomUUID()}`
        expect(await deliver(receiver, ex, 'succeeded')).toMatchObject({ status: 200, outcome: 'queued' })
        await running.opened
        // The service delivers the result again while the only allowed attempt runs: answered 200, queued.
        expect(await deliver(receiver, ex, 'succeeded')).toMatchObject({ status: 200, outcome: 'queued' })
        first.open()
        // The attempt fails: the entry is not dead-lettered but taken again, and pending while that attempt runs.
        expect(await eventually(() => calls === 2, 5_000)).toBe(true)
        expect((await receiver.inbox.show(ex))[0]).toMatchObject({ status: 'pending', attempts: 1, lastError: 'handler_failed: the ERP is down' })
        expect(await receiver.inbox.counts()).toEqual({ pending: 1, dead: 0 })
        second.open()
        expect(await eventually(async () => (await receiver.inbox.show(ex)).length === 0)).toBe(true)
        expect(calls).toBe(2)
        expect(await receiver.inbox.counts()).toEqual({ pending: 0, dead: 0 })
        expect(errors.filter((message) => message.includes('dead-lettered'))).toEqual([])
      } finally {
        await close()
      }
    })

    it('the queue: retry() resets the attempts of a leased entry only; fail() revives it; a refund stays at 0', async () => {
      const { store, close } = await subject.open()
      try {
        const queue = store.openInbox()
        await queue.ready()
        const entry = { exchangeNumber: `EX-${randomUUID()}`, state: 'succeeded', source: 'callback', orderNumber: null, fields: '{}', rendering: 'plain' } as const
        expect(await queue.enqueue(entry)).toBe('queued')
        const [held] = await queue.take('worker-a', 1, 60_000)
        expect(held?.attempts).toBe(1)
        // Leased: not made due (not counted), still leased, attempts back to 0.
        expect(await queue.retry(entry)).toBe(0)
        expect((await queue.show(entry.exchangeNumber))[0]).toMatchObject({ status: 'pending', attempts: 0 })
        expect((await queue.show(entry.exchangeNumber))[0]?.leasedUntil).not.toBeNull()
        expect(await queue.take('worker-b', 1, 60_000)).toEqual([])
        // A busy attempt refunded after the reset does not take attempts below 0.
        expect(await queue.fail(held!, { error: 'busy', delayMs: 0, dead: false, refund: true })).toBe(true)
        expect((await queue.show(entry.exchangeNumber))[0]).toMatchObject({ status: 'pending', attempts: 0, leasedUntil: null })
        // Revived: asked to dead-letter, given back pending and due now.
        const [again] = await queue.take('worker-c', 1, 60_000)
        expect(again?.attempts).toBe(1)
        expect(await queue.retry(entry)).toBe(0)
        expect(await queue.fail(again!, { error: 'gave up', delayMs: 0, dead: true })).toBe('revived')
        expect(await queue.counts()).toEqual({ pending: 1, dead: 0 })
        // Not revived (no delivery since it was taken): dead-lettered, as asked.
        const [last] = await queue.take('worker-d', 1, 60_000)
        expect(last?.attempts).toBe(1)
        expect(await queue.fail(last!, { error: 'gave up', delayMs: 0, dead: true })).toBe(true)
        expect(await queue.counts()).toEqual({ pending: 0, dead: 1 })
      } finally {
        await close()
      }
    })

    it('dead-letters the entry when its last attempt fails and nothing was delivered again', async () => {
      const { logger, errors } = errorsLogged()
      const { receiver, close } = await receiverOn(logger)
      try {
        let calls = 0
        receiver.on('payment.succeeded', () => {
          calls++
          throw new Error('the ERP is down')
        })
        const ex = `EX-${randomUUID()}`
        expect(await deliver(receiver, ex, 'succeeded')).toMatchObject({ status: 200, outcome: 'queued' })
        expect(await eventually(async () => (await receiver.inbox.show(ex))[0]?.status === 'dead')).toBe(true)
        expect(await receiver.inbox.counts()).toEqual({ pending: 0, dead: 1 })
        // Not attempted again by itself.
        await sleep(300)
        expect(calls).toBe(1)
        expect(errors.filter((message) => message.includes('dead-lettered'))).toHaveLength(1)
      } finally {
        await close()
      }
    })

    it('a last attempt that fails after its lease ran out and the entry was taken again does not report a dead-letter', async () => {
      const { logger, errors } = errorsLogged()
      const { receiver, close } = await receiverOn(logger, 300)
      try {
        const late = gate()
        let calls = 0
        receiver.on('payment.succeeded', async () => {
          if (++calls === 1) {
            await late.opened
            throw new Error('the ERP timed out')
          }
        })
        const ex = `EX-${randomUUID()}`
        expect(await deliver(receiver, ex, 'succeeded')).toMatchObject({ status: 200, outcome: 'queued' })
        // The first attempt outlives its lease; the entry is taken again and handled.
        expect(await eventually(() => calls === 2, 5_000)).toBe(true)
        expect(await eventually(async () => (await receiver.inbox.counts()).pending === 0)).toBe(true)
        late.open()
        await sleep(200)
        expect(await receiver.inbox.counts()).toEqual({ pending: 0, dead: 0 })
        expect(errors.filter((message) => message.includes('dead-lettered'))).toEqual([])
        await receiver.flush()
        const timeline = JSON.stringify(await receiver.timeline({ exchangeNumber: ex }))
        expect(timeline).not.toContain('dead_lettered')
      } finally {
        await close()
      }
    })
  })
}
