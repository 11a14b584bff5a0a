/**
 * The Redis inbox when a lease runs out under a worker that then still reports its attempt: an entry the late
 * worker dead-letters is dead only, not also due (taken again while dead, and counted dead for ever once handled).
 */
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { redisStore } from '../../src/stores/redis/store.js'
import { REDIS_URL, serviceAvailable } from '../stores/services.js'
import { sleep } from './suite.js'

const available = await serviceAvailable('Redis', REDIS_URL)
const prefix = `fpx-inbox-lease-ran-out:${randomUUID()}:`

describe.skipIf(!available)('Redis inbox, a lease run out', () => {
  const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
  afterAll(async () => {
    const keys = await client.keys(`${prefix}*`)
    if (keys.length > 0) await client.del(...keys)
    await client.quit()
  })

  it('an entry dead-lettered by the worker whose lease ran out is not taken again, and leaves no dead count behind', async () => {
    const queue = redisStore({ client, prefix, inspect: false }).openInbox()
    const entry = (exchangeNumber: string) => ({ exchangeNumber, state: 'succeeded', source: 'callback', orderNumber: null, fields: '{}', rendering: 'plain' }) as const
    const [late, other] = [`EX-${randomUUID()}`, `EX-${randomUUID()}`]
    expect(await queue.enqueue(entry(late))).toBe('queued')
    const [held] = await queue.take('worker-a', 1, 50)
    expect(held?.exchangeNumber).toBe(late)
    expect(await queue.enqueue(entry(other))).toBe('queued')
    await sleep(120)
    // Another worker's take finds the lease run out (the entry goes back to due) and takes the earlier due entry.
    const [taken] = await queue.take('worker-b', 1, 60_000)
    expect(taken?.exchangeNumber).toBe(other)
    await queue.finish(taken!)
    // The first worker's attempt ends now: its last allowed attempt failed.
    expect(await queue.fail(held!, { error: 'gave up', delayMs: 0, dead: true })).toBe(true)
    expect(await queue.counts()).toEqual({ pending: 0, dead: 1 })
    expect(await queue.take('worker-c', 10, 60_000)).toEqual([])
    expect((await queue.show(late))[0]).toMatchObject({ status: 'dead' })
  })

  it('an entry finished by the worker whose lease ran out is gone from the pending count too', async () => {
    const queue = redisStore({ client, prefix: `${prefix}finish:`, inspect: false }).openInbox()
    const entry = (exchangeNumber: string) => ({ exchangeNumber, state: 'succeeded', source: 'callback', orderNumber: null, fields: '{}', rendering: 'plain' }) as const
    const [late, other] = [`EX-${randomUUID()}`, `EX-${randomUUID()}`]
    expect(await queue.enqueue(entry(late))).toBe('queued')
    const [held] = await queue.take('worker-a', 1, 50)
    expect(held?.exchangeNumber).toBe(late)
    expect(await queue.enqueue(entry(other))).toBe('queued')
    await sleep(120)
    // Another worker's take finds the lease run out (the entry goes back to due) and takes the earlier due entry.
    const [taken] = await queue.take('worker-b', 1, 60_000)
    expect(taken?.exchangeNumber).toBe(other)
    await queue.finish(taken!)
    // The first worker's attempt ends now, handled.
    expect(await queue.finish(held!)).toBe(true)
    expect(await queue.counts()).toEqual({ pending: 0, dead: 0 })
  })
})
