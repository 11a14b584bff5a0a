/**
 * The merchant's credential lookup (resolveCredentials / resolveChecksumToken: a database query, docs/receiving.md)
 * that never answers, like a store call that never answers (test/adapters/faults.ts): the delivery must still be
 * answered, 500 credential_lookup_failed within half the lease as a store call is, not whenever the lookup returns.
 */
import { expect, it } from 'vitest'
import { createReceiver, type Logger } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

const TOKEN = 'ab'.repeat(32)
const UID = '0c0ffee0-d3e0-4a11-8f00-00000000d3e0'

it.each(['resolveChecksumToken', 'resolveCredentials'] as const)('%s that never answers: 500 credential_lookup_failed within half the lease, logged', async (way) => {
  const errors: unknown[] = []
  const logger: Logger = { debug() {}, info() {}, warn() {}, error: (details) => void errors.push(details) }
  const stall = () => new Promise<never>(() => {})
  const options =
    way === 'resolveChecksumToken'
      ? { signatureOnly: true as const, resolveChecksumToken: stall }
      : { environment: { baseUrl: 'http://127.0.0.1:9' }, resolveCredentials: stall }
  const receiver = createReceiver({ ...options, leaseMs: 400, logger })
  receiver.onAny(() => {})
  const { body } = signCallback(samplePaymentFields({ uid: UID }), TOKEN, { format: 'form' })
  const started = performance.now()
  const answered = await Promise.race([
    receiver.handle({ kind: 'callback', body, contentType: 'application/x-www-form-urlencoded' }),
    new Promise<'no answer'>((resolve) => setTimeout(() => resolve('no answer'), 5000)),
  ])
  expect(answered).not.toBe('no answer')
  if (answered !== 'no answer') expect([answered.status, answered.error?.code]).toEqual([500, 'credential_lookup_failed'])
  expect(performance.now() - started).toBeLessThan(2000)
  expect(errors).toHaveLength(1)
}, 10_000)
