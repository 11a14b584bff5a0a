import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { redisStore } from '../../src/stores/redis/store.js'
import { REDIS_URL, serviceAvailable } from './services.js'

/*
 * The store's own logger (its durability warnings on the first claim) is the merchant's code: one that throws, or
 * an async one whose promise rejects, must not become an unhandled rejection, which ends a Node process.
 */

const available = await serviceAvailable('Redis', REDIS_URL)

describe.skipIf(!available)('the Redis store with a failing logger', () => {
  let client: Redis
  const unhandled: unknown[] = []
  const record = (reason: unknown) => void unhandled.push(reason)
  beforeAll(async () => {
    client = new Redis(REDIS_URL, { lazyConnect: true })
    await client.connect()
    process.on('unhandledRejection', record)
  })
  afterAll(async () => {
    process.off('unhandledRejection', record)
    const keys = await client.keys('fpx-test-logger:*')
    if (keys.length > 0) await client.del(...keys)
    await client.quit()
  })

  const throwing = { warn: () => { throw new Error('log sink down') }, debug: () => { throw new Error('log sink down') } }
  const rejecting = { warn: async () => { throw new Error('log sink down') }, debug: async () => { throw new Error('log sink down') } }

  it.each([
    ['throws', throwing],
    ['rejects', rejecting],
  ])('claims and logs nothing unhandled when its logger %s', async (_how, logger) => {
    const warned: string[] = []
    const counting = { warn: (...args: [object, string]) => { warned.push(args[1]); return logger.warn() }, debug: (...args: [object, string]) => { warned.push(args[1]); return logger.debug() } }
    const store = redisStore({ client, logger: counting as never, prefix: `fpx-test-logger:${Math.random()}:` })
    const claim = await store.claim({ exchangeNumber: 'EX-LOGGER', state: 'succeeded', owner: 'o', leaseMs: 1000 })
    expect(claim.outcome).toBe('claimed')
    // The check runs beside the claim: give it time to log, and the rejection time to surface.
    for (let waited = 0; warned.length === 0 && waited < 2000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20))
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(warned.length).toBeGreaterThan(0)
    expect(unhandled).toEqual([])
  })
})
