/**
 * A handler that outlives its lease while no other delivery takes the payment over: its completion is still the only
 * one, so recording it is safe, and refusing it (lease_lost, 500) makes the sender's redelivery run the handler a
 * second time for the same payment state. PostgreSQL and the memory store record such a late completion; the Redis store
 * refused it (test committed failing first; the dispatcher now claims again and completes).
 */
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { createReceiver, type ReceiverStore } from '../../src/index.js'
import { redisStore } from '../../src/stores/redis/store.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { REDIS_URL, serviceAvailable } from '../stores/services.js'

const redisUp = await serviceAvailable('Redis', REDIS_URL)
const TOKEN = 'ef'.repeat(32)
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** One delivery whose handler runs 450 ms under a 300 ms lease, nothing else meanwhile, then the redelivery. */
async function slowOnce(store: ReceiverStore<unknown>) {
  const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store, leaseMs: 300, logger: false, timeline: false } as never)
  const runs: string[] = []
  receiver.on('payment.succeeded', async (event) => {
    runs.push(event.id)
    if (runs.length === 1) await sleep(450)
  })
  const fields = samplePaymentFields()
  const signed = signCallback(fields, TOKEN)
  const deliver = () => receiver.handle({ kind: 'callback', body: Buffer.from(signed.body), contentType: signed.contentType })
  const first = await deliver()
  // The service delivers again whatever was not answered 200.
  const second = first.status === 200 ? undefined : await deliver()
  await receiver.close()
  return { runs, answers: [first, second].map((answer) => answer?.error?.code ?? answer?.outcome) }
}

describe.skipIf(!redisUp)('Redis: a handler that outlives its lease, with no other delivery meanwhile', () => {
  const redis = new Redis(REDIS_URL)
  const prefix = `atk-late-completion:${randomUUID()}:`
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`)
    if (keys.length > 0) await redis.del(...keys)
    await redis.quit()
  })
  it('runs once', async () => {
    const { runs } = await slowOnce(redisStore({ client: redis, prefix, logger: false }) as ReceiverStore<unknown>)
    expect(runs).toHaveLength(1)
  })
})
