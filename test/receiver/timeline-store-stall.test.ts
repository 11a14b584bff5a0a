/**
 * The timeline is written one batch at a time, each after the one before (src/receiver/timeline.ts): a write the
 * store never answered held every later one, so flush() and receiver.close() waited for ever and no entry was
 * written again. Each write is bounded now; the batch it held is logged as lost, and the later ones are written.
 */
import { describe, expect, it } from 'vitest'
import { createReceiver, memoryStore, type ReceiverStore } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { stalling } from './never-answers.js'

const TOKEN = 'ef'.repeat(32)
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const within = (promise: Promise<unknown>, ms: number) =>
  Promise.race([promise.then(() => 'ended', () => 'ended'), pause(ms).then(() => 'still waiting')])

describe('the timeline when the store never answers one write', () => {
  it('flush() and close() end, the batch is logged as lost, and later entries are written', async () => {
    const store = stalling(memoryStore() as ReceiverStore<unknown>, 'appendTimeline')
    const logged: string[] = []
    const log = (_details: object, message: string) => logged.push(message)
    const receiver = createReceiver<unknown>({
      checksumToken: TOKEN,
      signatureOnly: true,
      store: store.object,
      leaseMs: 400,
      logger: { debug: () => {}, info: () => {}, warn: log, error: log },
    })
    receiver.on('payment.succeeded', () => {})
    const deliver = (order: string) => {
      const signed = signCallback(samplePaymentFields({ order_number: order, exchange_number: `EX-${order}` }), TOKEN)
      return receiver.handle({ kind: 'callback', body: Buffer.from(signed.body), contentType: signed.contentType })
    }
    expect(await deliver('ORD-STALL-1')).toMatchObject({ outcome: 'processed' })
    // With the write unbounded, this flush never ended, nor did any after it.
    expect(await within(receiver.flush(), 3000)).toBe('ended')
    expect(store.calls()).toBe(1)
    expect(logged.some((line) => line.includes('timeline entries; they are lost'))).toBe(true)
    expect(await deliver('ORD-STALL-2')).toMatchObject({ outcome: 'processed' })
    const read = receiver.timeline('ORD-STALL-2')
    expect(await within(read, 3000)).toBe('ended')
    expect((await read).length).toBeGreaterThan(0)
    expect(await within(receiver.close(), 3000)).toBe('ended')
  })
})
