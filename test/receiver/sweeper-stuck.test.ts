/**
 * A sweep pass hands what the API shows to the receiver, whose handlers run in it: a handler stuck for good must not
 * keep the pass, and with it the sweep lock its heartbeat renews, for ever (src/receiver/sweeper.ts).
 */
import { describe, expect, it } from 'vitest'
import { createReceiver, memoryStore, type ReceiverOptions } from '../../src/index.js'
import { samplePaymentFields } from '../../src/testing.js'

const TOKEN = 'cd'.repeat(32)
const UID = '6f1c2a4e-8b3d-4f7a-9c2e-1d5b7a9e3f10'

describe('a sweep pass whose handler never returns', () => {
  it('ends once the lease of the claim it made has long run out, and the next pass sweeps again', async () => {
    const fields = samplePaymentFields()
    const record = { ...fields, payment_status: true, interface_uid: UID }
    const client = { searchTransactions: async () => [record] }
    const store = memoryStore()
    const receiver = createReceiver({
      credentials: { uid: UID, checksumToken: TOKEN },
      client,
      store,
      leaseMs: 200,
      logger: false,
      sweep: { inProcess: false, firstLookupAfterMs: 1, backoff: { baseMs: 20, maxMs: 40 }, maxLookupsPerMinute: 60_000 },
    } as ReceiverOptions)
    let calls = 0
    receiver.on('payment.succeeded', async () => {
      calls++
      // The first run is stuck for good (an upstream call with no time-out); the next returns.
      if (calls === 1) await new Promise(() => {})
    })
    await receiver.payments.record({ orderNumber: fields.order_number as string, amountSen: 10_020, uid: UID, kind: 'payment', createdAt: new Date(Date.now() - 60_000), exchangeNumber: null, attached: {} })
    const ended = await Promise.race([receiver.sweep(), new Promise((resolve) => setTimeout(() => resolve('still running'), 3000))])
    expect(ended).toMatchObject({ swept: true, lookups: 1, failures: 1 })
    // The lock was given back: the next pass takes it and hands the payment over again, its lease over by now.
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(await receiver.sweep()).toMatchObject({ swept: true, processed: 1, closed: 1 })
    expect(calls).toBe(2)
  })
})
