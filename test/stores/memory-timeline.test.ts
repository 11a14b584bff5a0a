import { describe, expect, it } from 'vitest'
import { createReceiver, memoryStore, type TimelineEntry } from '../../src/index.js'
import { DeliveryTrace } from '../../src/contract/delivery-trace.js'
import { MAX_TIMELINE_ENTRIES, TIMELINE_EVENTS, TIMELINE_SOURCES } from '../../src/contract/timeline.js'
import { PAYMENT_STATES } from '../../src/core/payment.js'
import { addEntries, isTrail, withItems } from '../../src/stores/memory/trail.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

const TOKEN = 'ab'.repeat(32)
const DAY_MS = 24 * 60 * 60 * 1000

const trace = (i: number, at: number) =>
  new DeliveryTrace('EX1', 'ORD1', 'succeeded', 'callback', 'tag', i, true, at, at + 1, at + 2, 'duplicate', null, 200, null)

describe('the memory store’s timeline of one payment', () => {
  it('keeps a lone delivery as one string, then a trail bounded to between one and two times the read limit', () => {
    const now = Date.now()
    const first = withItems(undefined, [trace(0, now)], 0, 1, now, DAY_MS, undefined)
    expect(typeof first).toBe('string')
    let timeline = first
    const sizes: number[] = []
    for (let i = 1; i < 2000; i++) {
      timeline = withItems(timeline, [trace(i, now)], 0, 1, now, DAY_MS, undefined)
      if (isTrail(timeline)) sizes.push(timeline.count)
    }
    expect(isTrail(timeline)).toBe(true)
    // Three entries per delivery: 6,000 written, never more than twice the limit kept, never fewer than the limit.
    expect(Math.max(...sizes)).toBeLessThan(2 * MAX_TIMELINE_ENTRIES)
    expect(Math.min(...sizes.slice(MAX_TIMELINE_ENTRIES))).toBeGreaterThanOrEqual(MAX_TIMELINE_ENTRIES)
  })

  it('gives back every source, state, closing event and status it packs, as the trace has them', () => {
    const now = Date.now()
    for (const source of TIMELINE_SOURCES)
      for (const state of [null, ...PAYMENT_STATES])
        for (const closing of TIMELINE_EVENTS)
          for (const [verified, status] of [[true, 200], [false, 401], [true, 503], [true, 999]] as const)
            // Without a code and message a lone delivery is kept as one string (packed-delivery.ts), with them as an object.
            for (const [code, message, kept] of [[null, null, 'string'], ['some_code', 'why', 'object']] as const) {
              const delivered = new DeliveryTrace('EX1', 'ORD1', state, source, 'tag', 7, verified, now, now + 1, now + 2, closing, code, status, message)
              const timeline = withItems(undefined, [delivered], 0, 1, now, DAY_MS, undefined)
              expect(typeof timeline).toBe(kept)
              const read: TimelineEntry[] = []
              addEntries(timeline, 'EX1', read)
              expect(read).toEqual(delivered.entries())
            }
  })

  it('starts a payment’s timeline over once it is past retention', () => {
    const now = Date.now()
    const old = withItems(undefined, [trace(0, now - 2 * DAY_MS)], 0, 1, now - 2 * DAY_MS, DAY_MS, undefined)
    const fresh = withItems(old, [trace(1, now)], 0, 1, now, DAY_MS, undefined)
    expect(isTrail(fresh)).toBe(false)
  })
})

describe('the memory store keeps a payment’s record and timeline as one', () => {
  async function deliver(receiver: ReturnType<typeof createReceiver>, n: number) {
    const fields = samplePaymentFields({ exchange_number: `ULDYE${1656661277 + n}`, order_number: `ORDER-2026-${100000000 + n}` })
    const { body, contentType } = signCallback(fields, TOKEN)
    return { fields, response: await receiver.handle({ kind: 'callback', body: Buffer.from(body), contentType }) }
  }

  it('forgets a payment’s timeline with its handled states when the cap needs the room', async () => {
    const receiver = createReceiver({ checksumToken: TOKEN, store: memoryStore({ maxEntries: 2 }) })
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

  it('keeps the timeline of a payment whose handlers failed, and its states once they ran, in one entry', async () => {
    const store = memoryStore({ maxEntries: 10 })
    const receiver = createReceiver({ checksumToken: TOKEN, store })
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
  it('reads a payment’s handled states back from the one string its lone delivery is kept as', async () => {
    const receiver = createReceiver({ checksumToken: TOKEN, store: memoryStore() })
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
    const receiver = createReceiver({ checksumToken: TOKEN, store: memoryStore() })
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
