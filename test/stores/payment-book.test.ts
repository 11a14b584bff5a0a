import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { createClient } from 'redis'
import { describe } from 'vitest'
import { memoryStore, type ReceiverStore } from '../../src/index.js'
import { type RedisClientLike, redisStore } from '../../src/stores/redis/store.js'
import { paymentBookContract } from './payment-book-contract.js'
import { REDIS_URL, serviceAvailable } from './services.js'

/* The payment book contract on every built-in store; what only one store does is in its own payment-book file. */

const spaces = new Map<string, ReceiverStore>()
paymentBookContract({
  name: 'memory',
  // One process: the same space is the same store.
  open: async (space, options) => {
    let store = spaces.get(space)
    if (store === undefined) spaces.set(space, (store = memoryStore(options)))
    return { store, close: async () => {} }
  },
  cleanup: async () => spaces.clear(),
})

const redisAvailable = await serviceAvailable('Redis', REDIS_URL)
// Unique per run, so parallel runs on one Redis never meet; deleted at the end.
const RUN_PREFIX = `fpx-test:${randomUUID()}:`

const REDIS_CLIENTS = {
  ioredis: async () => {
    const client = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 })
    await client.connect()
    return { client: client as RedisClientLike, close: async () => void (await client.quit()) }
  },
  'node-redis': async () => {
    const client = createClient({ url: REDIS_URL })
    client.on('error', () => {})
    await client.connect()
    return { client: client as RedisClientLike, close: () => client.close() }
  },
} as const

describe.skipIf(!redisAvailable)('Redis', () => {
  for (const [name, connect] of Object.entries(REDIS_CLIENTS)) {
    paymentBookContract({
      name: `redis via ${name}`,
      open: async (space, options) => {
        const { client, close } = await connect()
        return { store: redisStore({ client, prefix: `${RUN_PREFIX}${space}:`, inspect: false, ...options }), close }
      },
      cleanup: async () => {
        const admin = new Redis(REDIS_URL)
        let cursor = '0'
        do {
          const [next, keys] = await admin.scan(cursor, 'MATCH', `${RUN_PREFIX}*`, 'COUNT', 1000)
          if (keys.length > 0) await admin.del(...keys)
          cursor = next
        } while (cursor !== '0')
        await admin.quit()
      },
    })
  }
})
