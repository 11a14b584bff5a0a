/**
 * The inbox's workers when the store never answers one call (a paused Redis): a take, a finish or a fail left
 * unanswered kept the worker's loop, or an attempt's slot, for ever, so results it had acknowledged were never
 * handled in this process; and stop() (receiver.close()) waited for ever, as it did for a handler that never
 * returns. Each store call is bounded now, and stop() waits a lease at most (src/inbox/inbox.ts).
 */
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { createReceiver, type Receiver, type ReceiverStore } from '../../src/index.js'
import { redisStore } from '../../src/stores/redis/store.js'
import { REDIS_URL, serviceAvailable } from '../stores/services.js'
import { stalling } from '../receiver/never-answers.js'
import { deliver, eventually, sleep, TOKEN } from './suite.js'

const available = await serviceAvailable('Redis', REDIS_URL)
const prefix = `fpx-inbox-stall:${randomUUID()}:`
const LEASE_MS = 400

/** Resolves `'ended'` when `promise` settles within `ms`, else `'still waiting'`. */
const within = (promise: Promise<unknown>, ms: number) =>
  Promise.race([promise.then(() => 'ended', () => 'ended'), sleep(ms).then(() => 'still waiting')])

describe.skipIf(!available)('inbox workers when the Redis store never answers one call', () => {
  const clients: Redis[] = []
  const made: Receiver<unknown>[] = []
  afterEach(async () => {
    await Promise.all(made.splice(0).map((receiver) => within(receiver.close(), 5000)))
  })
  afterAll(async () => {
    for (const client of clients.splice(0)) client.disconnect()
    const admin = new Redis(REDIS_URL)
    const keys = await admin.keys(`${prefix}*`)
    if (keys.length > 0) await admin.del(...keys)
    await admin.quit()
  })

  /** A receiver in inbox mode whose queue never answers the `nth` call of `method`; `handler` runs for each result. */
  function receiverStalling(method: string, handler: (id: string) => Promise<void> = async () => {}) {
    const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
    clients.push(client)
    const real = redisStore({ client, prefix: `${prefix}${randomUUID()}:`, inspect: false })
    const queue = stalling(real.openInbox(), method)
    const store = new Proxy(real, {
      get: (target, key) => (key === 'openInbox' ? () => queue.object : (Reflect.get(target, key, target) as unknown)),
    }) as ReceiverStore<unknown>
    const logged: string[] = []
    const log = (details: object, message: string) => logged.push(`${message} ${JSON.stringify(details, (_key, value: unknown) => (value instanceof Error ? value.message : value))}`)
    const receiver = createReceiver<unknown>({
      checksumToken: TOKEN,
      signatureOnly: true,
      store,
      leaseMs: LEASE_MS,
      inbox: { concurrency: 1, pollMs: 50, backoff: { baseMs: 10, maxMs: 20 } },
      logger: { debug: () => {}, info: () => {}, warn: log, error: log },
    })
    made.push(receiver)
    const runs: string[] = []
    receiver.on('payment.succeeded', async (event) => {
      await handler(event.id)
      runs.push(event.id)
    })
    return { receiver, runs, logged, calls: queue.calls }
  }

  it.each(['ready', 'take'])('%s: the worker reads the inbox again, and the result is handled', async (method) => {
    const { receiver, runs, logged, calls } = receiverStalling(method)
    const ex = `EX-${randomUUID()}`
    expect(await deliver(receiver, ex, 'succeeded')).toMatchObject({ outcome: 'queued' })
    expect(await eventually(() => calls() >= 1, 3000)).toBe(true)
    // With the call unbounded, the worker's loop waited for it for ever: the result was never handled here.
    expect(await eventually(() => runs.includes(`${ex}:succeeded`), 3000)).toBe(true)
    expect(logged.some((line) => line.includes('did not answer within'))).toBe(true)
    expect(await within(receiver.close(), 3000)).toBe('ended')
  })

  it.each(['finish', 'fail'])("%s: the attempt ends, its slot frees, and the next result is handled", async (method) => {
    let failures = method === 'fail' ? 1 : 0
    const { receiver, runs, calls } = receiverStalling(method, async () => {
      if (failures-- > 0) throw new Error('ERP unreachable')
    })
    const [first, second] = [`EX-${randomUUID()}`, `EX-${randomUUID()}`]
    await deliver(receiver, first, 'succeeded')
    expect(await eventually(() => calls() >= 1, 3000)).toBe(true)
    await deliver(receiver, second, 'succeeded')
    // One attempt at a time: with the call unbounded, its slot stayed taken for ever and nothing more ran.
    expect(await eventually(() => runs.includes(`${second}:succeeded`), 3000)).toBe(true)
    // The entry whose fail was never recorded comes back once its lease runs out: not lost.
    expect(await eventually(() => runs.includes(`${first}:succeeded`), 3000)).toBe(true)
    expect(await within(receiver.close(), 3000)).toBe('ended')
  })

  it("close() ends when a handler never returns, and names the entry it left", async () => {
    let entered = false
    const { receiver, logged } = receiverStalling('none', async () => {
      entered = true
      await new Promise(() => {})
    })
    const ex = `EX-${randomUUID()}`
    await deliver(receiver, ex, 'succeeded')
    expect(await eventually(() => entered, 3000)).toBe(true)
    // It waited for the attempt for ever; now a lease at most, since the entry is taken again once its lease is over.
    expect(await within(receiver.close(), 3000)).toBe('ended')
    expect(logged.some((line) => line.includes(ex))).toBe(true)
  })
})
