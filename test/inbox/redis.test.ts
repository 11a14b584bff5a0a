import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { createClient } from 'redis'
import { afterAll, describe, expect, it } from 'vitest'
import { createReceiver } from '../../src/index.js'
import type { PaymentState } from '../../src/core/payment.js'
import { redisStore } from '../../src/stores/redis/store.js'
import { REDIS_URL, serviceAvailable } from '../stores/services.js'
import { deliver, eventually, inboxSuite, TOKEN } from './suite.js'

const available = await serviceAvailable('Redis', REDIS_URL)
const prefixes = [`fpx-inbox-test:${randomUUID()}:`, `fpx-inbox-test:${randomUUID()}:`, `fpx-inbox-test:${randomUUID()}:`]

describe.skipIf(!available)('Redis inbox', () => {
  afterAll(async () => {
    const admin = new Redis(REDIS_URL)
    for (const prefix of prefixes) {
      const keys = await admin.keys(`${prefix}*`)
      if (keys.length > 0) await admin.del(...keys)
    }
    await admin.quit()
  })

  it('retries one (exchange_number, state): a dead entry revived, a pending one made due, a leased one left alone', async () => {
    const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
    try {
      const queue = redisStore({ client, prefix: prefixes[2], inspect: false }).openInbox()
      const entry = (exchangeNumber: string, state: PaymentState = 'succeeded') =>
        ({ exchangeNumber, state, source: 'callback', orderNumber: null, fields: '{}', rendering: 'plain' }) as const
      const [dead, waiting, leased] = [`EX-${randomUUID()}`, `EX-${randomUUID()}`, `EX-${randomUUID()}`]
      for (const ex of [dead, waiting, leased]) expect(await queue.enqueue(entry(ex))).toBe('queued')
      for (const taken of await queue.take('worker', 10, 60_000)) {
        if (taken.exchangeNumber === dead) await queue.fail(taken, { error: 'gave up', delayMs: 0, dead: true })
        if (taken.exchangeNumber === waiting) await queue.fail(taken, { error: 'down', delayMs: 60_000, dead: false })
      }
      expect(await queue.enqueue(entry(dead))).toBe('present')
      expect(await queue.retry({ exchangeNumber: dead, state: 'succeeded' })).toBe(1)
      expect((await queue.show(dead))[0]).toMatchObject({ status: 'pending', attempts: 0, leasedUntil: null })
      expect((await queue.show(dead))[0]?.nextAttemptAt?.getTime()).toBeLessThanOrEqual(Date.now() + 1000)
      expect(await queue.retry({ exchangeNumber: waiting, state: 'succeeded' })).toBe(1)
      expect((await queue.show(waiting))[0]).toMatchObject({ status: 'pending', attempts: 1 })
      expect((await queue.show(waiting))[0]?.nextAttemptAt?.getTime()).toBeLessThanOrEqual(Date.now() + 1000)
      expect(await queue.retry({ exchangeNumber: leased, state: 'succeeded' })).toBe(0)
      expect((await queue.show(leased))[0]?.leasedUntil).not.toBeNull()
      // Another state of the payment is another entry: nothing to retry.
      expect(await queue.retry({ exchangeNumber: dead, state: 'pending' })).toBe(0)
    } finally {
      await client.quit()
    }
  })

  it('takes a 99 before its 00 when both were written in the same millisecond, in that order', async () => {
    // The service retrying both after an outage: the server's clock cannot tell them apart, the arrival order can.
    const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
    try {
      const queue = redisStore({ client, prefix: prefixes[2], inspect: false }).openInbox()
      const entry = (exchangeNumber: string, state: PaymentState) => ({ exchangeNumber, state, source: 'callback', orderNumber: null, fields: '{}', rendering: 'plain' }) as const
      const firstTaken: string[] = []
      let sameMillisecond = 0
      for (let i = 0; i < 20; i++) {
        const ex = `EX-${randomUUID()}`
        // One connection: Redis runs the 99's script first.
        await Promise.all([queue.enqueue(entry(ex, 'pending')), queue.enqueue(entry(ex, 'succeeded'))])
        const [a, b] = await queue.show(ex)
        if (a?.receivedAt.getTime() === b?.receivedAt.getTime()) sameMillisecond++
        const taken = await queue.take(`worker-${i}`, 10, 60_000)
        firstTaken.push(taken.find((one) => one.exchangeNumber === ex)?.state ?? 'nothing')
        for (const one of taken) await queue.finish(one)
        for (const one of await queue.take(`worker-${i}-next`, 10, 60_000)) await queue.finish(one)
      }
      expect(sameMillisecond, 'the case under test happened').toBeGreaterThan(0)
      expect(firstTaken).toEqual(Array(20).fill('pending'))
    } finally {
      await client.quit()
    }
  })

  it('revives a dead-lettered result when it is delivered again', async () => {
    const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
    const receiver = createReceiver<unknown>({
      checksumToken: TOKEN,
      signatureOnly: true,
      logger: false,
      store: redisStore({ client, prefix: prefixes[2], inspect: false }),
      inbox: { pollMs: 50, backoff: { baseMs: 50, maxMs: 200 }, maxAttempts: 1 },
    })
    try {
      let broken = true
      const runs: string[] = []
      receiver.on('payment.succeeded', (event) => {
        if (broken) throw new Error('down')
        runs.push(event.id)
      })
      const ex = `EX-${randomUUID()}`
      expect((await deliver(receiver, ex, 'succeeded')).outcome).toBe('queued')
      expect(await eventually(async () => (await receiver.inbox.list({ status: 'dead' })).some((item) => item.exchangeNumber === ex))).toBe(true)
      broken = false
      expect((await deliver(receiver, ex, 'succeeded')).outcome).toBe('queued')
      expect(await eventually(() => runs.length === 1)).toBe(true)
      expect(runs).toEqual([`${ex}:succeeded`])
    } finally {
      await receiver.inbox.stop()
      await receiver.flush()
      await client.quit()
    }
  })

  inboxSuite({
    name: 'ioredis',
    open: async () => {
      const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
      return { store: redisStore({ client, prefix: prefixes[0] }), close: async () => void (await client.quit()) }
    },
  })
  inboxSuite({
    name: 'node-redis',
    open: async () => {
      const client = createClient({ url: REDIS_URL })
      client.on('error', () => {})
      await client.connect()
      return { store: redisStore({ client, prefix: prefixes[1] }), close: () => client.close() }
    },
  })
})
