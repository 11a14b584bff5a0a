/**
 * The merchant's `expect` hook (its own record of the order: a database query) that never answers, like a store
 * call that never answers: the delivery is answered 503 expect_failed within half the lease, as a hook that throws
 * is, and its claim is released (a retry is not told 409 for the rest of the lease).
 */
import { expect, it } from 'vitest'
import { createReceiver, type Logger } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

const TOKEN = 'ab'.repeat(32)

it('an expect hook that never answers: 503 expect_failed within half the lease, logged, the claim released', async () => {
  const errors: unknown[] = []
  const logger: Logger = { debug() {}, info() {}, warn() {}, error: (details) => void errors.push(details) }
  let stalled = true
  const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, leaseMs: 400, logger, expect: () => (stalled ? new Promise<never>(() => {}) : undefined) })
  const runs: string[] = []
  receiver.onAny((event) => void runs.push(event.id))
  const { body } = signCallback(samplePaymentFields(), TOKEN, { format: 'form' })
  const delivery = { kind: 'callback' as const, body, contentType: 'application/x-www-form-urlencoded' }
  const started = performance.now()
  const answered = await Promise.race([receiver.handle(delivery), new Promise<'no answer'>((resolve) => setTimeout(() => resolve('no answer'), 5000))])
  expect(answered).not.toBe('no answer')
  if (answered !== 'no answer') expect([answered.status, answered.error?.code]).toEqual([503, 'expect_failed'])
  expect(performance.now() - started).toBeLessThan(2000)
  expect(errors).toHaveLength(1)
  stalled = false
  const retry = await receiver.handle(delivery)
  expect([retry.status, retry.outcome]).toEqual([200, 'processed'])
  expect(runs).toHaveLength(1)
}, 10_000)
