import { Redis } from 'ioredis'
import { REDIS_URL } from './services.js'

/** A raw ioredis client for tests that drive the stores' scripts directly, connected before it is handed out. */
export async function connectedRedis(): Promise<Redis> {
  const client = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 })
  await client.connect()
  return client
}

/** Deletes the run's keys, so that a shared Redis does not keep them, and disconnects. */
export async function dropAndQuit(client: Redis, prefix: string): Promise<void> {
  const keys = await client.keys(`${prefix}*`)
  if (keys.length > 0) await client.del(...keys)
  await client.quit()
}
