/**
 * A handler that outlives its lease while no other delivery takes the payment over: its completion is still the only
 * one, so recording it is safe, and refusing it (lease_lost, 500) makes the sender's redelivery run the handler a
 * second time for the same payment state. PostgreSQL records such a late completion; the memory store refused it
 * (Redis still does for a payment with nothing handled, its lease gone with the key: late-completion-redis.test.ts).
 */
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { createReceiver, memoryStore, type ReceiverStore } from '../../src/index.js'
import { postgresStore } from '../../src/stores/postgres/store.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { DATABASE_URL, serviceAvailable } from '../stores/services.js'

const postgresUp = await serviceAvailable('PostgreSQL', DATABASE_URL)
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

describe('a handler that outlives its lease, with no other delivery meanwhile', () => {
  it('memory: runs once', async () => {
    const { runs } = await slowOnce(memoryStore() as ReceiverStore<unknown>)
    expect(runs).toHaveLength(1)
  })

  describe.skipIf(!postgresUp)('PostgreSQL', () => {
    const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 3 })
    pool.on('error', () => {})
    const table = `atk_late_${randomUUID().replace(/-/g, '').slice(0, 10)}`
    afterAll(async () => {
      const names = ['', '_inbox', '_timeline', '_book', '_book_sets', '_locks']
      await pool.query(`DROP TABLE IF EXISTS ${names.map((suffix) => `"${table}${suffix}"`).join(', ')}`).catch(() => {})
      await pool.end()
    })
    it('runs once', async () => {
      const store = postgresStore({ client: pool, table })
      await store.migrate()
      const { runs } = await slowOnce(store as ReceiverStore<unknown>)
      expect(runs).toHaveLength(1)
    })
  })
})
