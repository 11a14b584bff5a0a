/**
 * A store's awaitLeaseEnd that never answers (a subscription on a connection that stalled: a paused server, a
 * network partition), like a claim or a completion that never answers (test/adapters/faults.ts): the delivery must
 * still be answered, within the wait it allows itself (WAITS_FOR_HOLDER_MS) and not whenever the store recovers.
 */
import { expect, it } from 'vitest'
import { createReceiver, memoryStore, type ReceiverStore } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

const TOKEN = 'ab'.repeat(32)

it.each(['callback', 'redirect'] as const)('a %s whose payment is held elsewhere, the store stalling in awaitLeaseEnd, is answered within seconds', async (kind) => {
  const base = memoryStore()
  const store: ReceiverStore = {
    ...base,
    claim: async () => ({ outcome: 'busy', retryAfterMs: 30_000 }),
    awaitLeaseEnd: () => new Promise(() => {}),
  }
  const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store, logger: false })
  receiver.onAny(() => {})
  const { body } = signCallback(samplePaymentFields(), TOKEN, { format: 'form' })
  const started = performance.now()
  const answered = await Promise.race([
    receiver.handle({ kind, body, contentType: 'application/x-www-form-urlencoded' }),
    new Promise<'no answer'>((resolve) => setTimeout(() => resolve('no answer'), 8000)),
  ])
  expect(answered).not.toBe('no answer')
  if (answered !== 'no answer') expect([answered.status, answered.error?.code]).toEqual([409, 'in_progress'])
  expect(performance.now() - started).toBeLessThan(5000)
}, 15_000)
