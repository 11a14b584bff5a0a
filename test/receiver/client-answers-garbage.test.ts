/**
 * The merchant's API client (the documented `client` option) answers what is no list of records, or a record whose
 * property throws when read: a fault of ours or the client's, never the sender's. The delivery is answered 5xx
 * with a code that says so, the cause logged, and nothing is left held: the sender's retry a moment later must not
 * be told 409 in_progress (a 4xx) for a claim nobody holds, for the whole lease.
 */
import { describe, expect, it } from 'vitest'
import { createReceiver, type Logger } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

const TOKEN = 'ab'.repeat(32)
const FORM = 'application/x-www-form-urlencoded'

const garbage: [string, () => unknown][] = [
  ['null', () => null],
  ['an object', () => ({ data: [] })],
  ['a record whose property throws', () => [new Proxy({}, { get: () => { throw new TypeError('record getter failed') } })]],
]

describe('a confirming client that answers garbage', () => {
  it.each(garbage)('answers %s: 5xx with a code of ours, logged, and a retry is not told 409', async (_name, answer) => {
    const errors: { details: Record<string, unknown>; message: string }[] = []
    const logger: Logger = { debug() {}, info() {}, warn() {}, error: (details, message) => void errors.push({ details: details as Record<string, unknown>, message }) }
    const receiver = createReceiver({ client: { searchTransactions: async () => answer() as never }, checksumToken: TOKEN, logger, leaseMs: 60_000 })
    const runs: string[] = []
    receiver.onAny((event) => void runs.push(event.id))
    const { body } = signCallback(samplePaymentFields(), TOKEN, { format: 'form' })
    const first = await receiver.handle({ kind: 'callback', body, contentType: FORM })
    expect(first.status, first.body).toBeGreaterThanOrEqual(500)
    expect(['confirmation_unavailable', 'internal_error']).toContain(first.error?.code)
    expect(errors.some((line) => 'err' in line.details)).toBe(true)
    const retry = await receiver.handle({ kind: 'callback', body, contentType: FORM })
    expect([retry.status, retry.error?.code]).toEqual([first.status, first.error?.code])
    expect(runs).toEqual([])
  })
})
