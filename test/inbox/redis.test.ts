import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { createClient } from 'redis'
import { afterAll, describe } from 'vitest'
import { redisStore } from '../../src/stores/redis/store.js'
import { REDIS_URL, serviceAvailable } from '../stores/services.js'
import { inboxSuite } from './suite.js'

const available = await serviceAvailable('Redis', REDIS_URL)
const prefixes = [`fpx-inbox-test:${randomUUID()}:`, `fpx-inbox-test:${randomUUID()}:`]

describe.skipIf(!available)('Redis inbox', () => {
  afterAll(async () => {
    const admin = new Redis(REDIS_URL)
    for (const prefix of prefixes) {
      const keys = await admin.keys(`${prefix}*`)
      if (keys.length > 0) await admin.del(...keys)
    }
    await admin.quit()
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
