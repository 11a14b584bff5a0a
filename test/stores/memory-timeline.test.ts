import { describe, expect, it } from 'vitest'
import { createReceiver, memoryStore, type TimelineEntry } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

const TOKEN = 'ab'.repeat(32)

describe('the memory store’s timeline beside its records', () => {
  async function deliver(receiver: ReturnType<typeof createReceiver>, n: number) {
    const fields = samplePaymentFields({ exchange_number: `ULDYE${1656661277 + n}`, order_number: `ORDER-2026-${100000000 + n}` })
    const { body, contentType } = signCallback(fields, TOKEN)
    return { fields, response: await receiver.handle({ kind: 'callback', body: Buffer.from(body), contentType }) }
  }

  it('forgets a payment’s timeline and its handled states when the cap needs the room', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store: memoryStore({ maxEntries: 2 }) })
    receiver.onAny(() => {})
    const delivered = []
    for (let n = 0; n < 3; n++) {
      delivered.push(await deliver(receiver, n))
      await receiver.flush()
    }
    const [first, , last] = delivered as [Awaited<ReturnType<typeof deliver>>, unknown, Awaited<ReturnType<typeof deliver>>]
    expect(await receiver.timeline({ exchangeNumber: String(first.fields.exchange_number) })).toEqual([])
    expect(await receiver.timeline(String(first.fields.order_number))).toEqual([])
    // Forgotten as a whole: its states too, so a redelivery is handled again.
    expect((await deliver(receiver, 0)).response.outcome).toBe('processed')
    const kept: TimelineEntry[] = await receiver.timeline(String(last.fields.order_number))
    expect(kept.map((entry) => entry.event)).toEqual(['received', 'verified', 'processed'])
  })

  it('keeps the timeline of a payment whose handlers failed, and its states once they ran', async () => {
    const store = memoryStore({ maxEntries: 10 })
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store })
    let fail = true
    receiver.onAny(() => {
      if (fail) throw new Error('the ERP is down')
    })
    expect((await deliver(receiver, 7)).response.outcome).toBe('failed')
    await receiver.flush()
    fail = false
    const { fields, response } = await deliver(receiver, 7)
    expect(response.outcome).toBe('processed')
    expect((await deliver(receiver, 7)).response.outcome).toBe('duplicate')
    const events = (await receiver.timeline({ exchangeNumber: String(fields.exchange_number) })).map((entry) => entry.event)
    expect(events).toEqual(['received', 'verified', 'handler_failed', 'received', 'verified', 'processed', 'received', 'verified', 'duplicate'])
  })
  it('reads a payment’s handled states back whatever its timeline holds', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store: memoryStore() })
    receiver.onAny(() => {})
    const pending = { payment_status: 'false', fpx_debit_auth_code: '99', fpx_model: 'B2B1', transaction_amount_received: '0.00' }
    const send = async (extra: Record<string, string>) => {
      const fields = samplePaymentFields({ exchange_number: 'ULDYE1656669999', order_number: 'ORDER-2026-199999999', fpx_model: 'B2B1', ...extra })
      const { body, contentType } = signCallback(fields, TOKEN)
      const response = await receiver.handle({ kind: 'callback', body: Buffer.from(body), contentType })
      // Each one's timeline written before the next arrives: the next claim reads the record from what was written.
      await receiver.flush()
      return response.outcome
    }
    expect(await send(pending)).toBe('processed')
    expect(await send(pending)).toBe('duplicate')
    expect(await send({})).toBe('processed')
    expect(await send(pending)).toBe('stale')
    expect(await send({})).toBe('duplicate')
    const events = (await receiver.timeline({ exchangeNumber: 'ULDYE1656669999' })).map((entry) => `${entry.state}:${entry.event}`)
    expect(events.filter((event) => !event.endsWith(':received') && !event.endsWith(':verified'))).toEqual([
      'pending:processed',
      'pending:duplicate',
      'succeeded:processed',
      'pending:stale',
      'succeeded:duplicate',
    ])
  })
  it('reads by order_number only the payments naming it, where another order number ends with it', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store: memoryStore() })
    receiver.onAny(() => {})
    const orders = ['ORD-1', 'XORD-1', 'ORD-10', 'ORD-1']
    for (const [n, order] of orders.entries()) {
      const fields = samplePaymentFields({ exchange_number: `ULDYE16566600${n}0`, order_number: order })
      const { body, contentType } = signCallback(fields, TOKEN)
      expect((await receiver.handle({ kind: 'callback', body: Buffer.from(body), contentType })).outcome).toBe('processed')
    }
    await receiver.flush()
    const read = await receiver.timeline('ORD-1')
    expect(new Set(read.map((entry) => entry.exchangeNumber))).toEqual(new Set(['ULDYE1656660000', 'ULDYE1656660030']))
    expect(read.every((entry) => entry.orderNumber === 'ORD-1')).toBe(true)
    expect(await receiver.timeline('1')).toEqual([])
  })
})
