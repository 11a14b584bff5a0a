/**
 * The dispatcher's in-process wait (src/receiver/dispatch.ts): a delivery whose payment is being handled by another
 * delivery in the same process waits for it, but no longer than the holder's lease, so that a handler stuck for good
 * holds the payment no longer than it would in another process.
 */
import { describe, expect, it } from 'vitest'
import { createReceiver, memoryStore } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

const TOKEN = 'cd'.repeat(32)

describe('a delivery waiting for a delivery of the same payment in this process', () => {
  it('is answered once the holder’s lease has run out, even when the holder’s handler never returns', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store: memoryStore(), leaseMs: 200, logger: false })
    let calls = 0
    receiver.on('payment.succeeded', async () => {
      calls++
      // The first run is stuck for good (an upstream call with no time-out); the next returns.
      if (calls === 1) await new Promise(() => {})
    })
    const delivery = { kind: 'callback' as const, ...signCallback(samplePaymentFields(), TOKEN) }
    void receiver.handle(delivery)
    await new Promise((resolve) => setTimeout(resolve, 20))
    const answer = await Promise.race([receiver.handle(delivery), new Promise((resolve) => setTimeout(() => resolve('no answer'), 3000))])
    expect(answer).toMatchObject({ status: 200, outcome: 'processed' })
  })
})
