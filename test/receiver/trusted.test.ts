import { describe, expect, it } from 'vitest'
import { createReceiver, type PaymentEvent } from '../../src/receiver/receiver.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

const TOKEN = 'ab'.repeat(32)

describe('handleTrusted (records read over the API)', () => {
  it('runs the handlers once across a trusted record and a signed callback of the same result', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    const events: PaymentEvent[] = []
    receiver.on('payment.succeeded', (event) => void events.push(event))
    const fields = samplePaymentFields()
    const { checksum: _checksum, ...record } = fields as Record<string, string>
    expect((await receiver.handleTrusted(record)).outcome).toBe('processed')
    expect(events.map((event) => event.delivery)).toEqual(['reconcile'])
    // Nothing unsigned, no credential set: an API record has neither.
    expect([{ ...events[0]!.unsignedQuery }, events[0]!.credential]).toEqual([{}, undefined])
    const signed = signCallback(fields, TOKEN)
    expect((await receiver.handle({ kind: 'callback', ...signed })).outcome).toBe('duplicate')
    expect(events).toHaveLength(1)
  })

  it('refuses a record without the fields classification needs, without running handlers', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    let ran = 0
    receiver.on('payment.failed', () => void ran++)
    const response = await receiver.handleTrusted({ order_number: 'A-1', payment_status: 'false', transaction_amount: '1.00' })
    expect(response).toMatchObject({ outcome: 'rejected', status: 400, error: { code: 'invalid_fields' } })
    expect(ran).toBe(0)
  })
})
