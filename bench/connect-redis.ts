/** An ioredis client for a benchmark: connected now, failing at once (no retries) with the first error's reason. */
import { Redis } from 'ioredis'

export const CONNECT_TIMEOUT_MS = 5_000

export async function ioredis(url: string): Promise<Redis> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null, connectTimeout: CONNECT_TIMEOUT_MS })
  // Without a listener ioredis prints every connection error as unhandled; the first one says why.
  let failure: unknown
  client.on('error', (error: unknown) => void (failure ??= error))
  try {
    await client.connect()
  } catch (error) {
    client.disconnect()
    throw failure ?? error
  }
  return client
}
