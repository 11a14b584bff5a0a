import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createReceiver, type PaymentEvent, type Receiver } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { formBody, indexOf, moved, type Pairs, renamed, signedPairs } from './rearrange.js'

const TOKEN = 'cd'.repeat(32)
const FORM = 'application/x-www-form-urlencoded'
const NUM_RUNS = Number(process.env.FC_RUNS ?? 60)

function recorded(): { receiver: Receiver; events: PaymentEvent[] } {
  const receiver = createReceiver({ checksumToken: TOKEN, logger: false as never })
  const events: PaymentEvent[] = []
  for (const name of ['payment.succeeded', 'payment.failed', 'payment.pending'] as const) receiver.on(name, (event) => void events.push(event))
  return { receiver, events }
}

function genuine(overrides: Record<string, string> = {}): { body: string; pairs: Pairs; checksum: string; fields: Record<string, string> } {
  const fields = samplePaymentFields(overrides) as Record<string, string>
  const { body } = signCallback(fields, TOKEN)
  return { body, fields, ...signedPairs(body) }
}

const deliver = (receiver: Receiver, body: string) => receiver.handle({ kind: 'callback', body, contentType: FORM })

/** A B2B1 payment pending corporate approval, as the first callback carries it. */
const PENDING = { payment_status: 'false', fpx_debit_auth_code: '99', fpx_model: 'B2B1', payment_stage: 'payment_pending', transaction_amount_received: '0.00' }

describe('renamed-field replays, with the defaults (attacks from docs/security.md)', () => {
  it('A: one genuine success moved into nine exchange_numbers runs the handler once', async () => {
    const result = genuine({ buyer_name: 'EX-PLANTED-1', buyer_email: 'EX-PLANTED-2' })
    const variants: string[] = []
    for (const name of ['amount', 'buyer_email', 'buyer_name', 'buyer_phone', 'client_ip', 'created_at', 'created_at_unixtime', 'currency']) {
      const pairs = moved(result.pairs, indexOf(result.pairs, name), 'exchange_number')
      if (pairs !== undefined) variants.push(formBody(pairs, result.checksum))
    }
    expect(variants.length).toBeGreaterThanOrEqual(8)
    const { receiver, events } = recorded()
    // The variants first, as a buyer who holds back the genuine redirect would send them.
    const answers = await Promise.all([...variants, result.body].map((body) => deliver(receiver, body)))
    expect(events).toHaveLength(1)
    expect(events[0]!.payment).toMatchObject({ exchangeNumber: result.fields.exchange_number, orderNumber: result.fields.order_number })
    for (const answer of answers.slice(0, -1)) expect(answer).toMatchObject({ status: 400, error: { code: 'inconsistent_result' } })
    expect(answers.at(-1)!.error?.message ?? '').not.toContain(TOKEN)
  })

  it('B: a buyer_name holding another order number never pays that order', async () => {
    const expensive = 'ORD-EXPENSIVE-9'
    const result = genuine({ buyer_name: expensive, transaction_amount: '1.00' })
    const from = indexOf(result.pairs, 'buyer_name')
    const pairs = moved(result.pairs, from, 'order_number', new Map([[from - 1, 'exchange_number']]))
    expect(pairs).toBeDefined()
    const { receiver, events } = recorded()
    const answer = await deliver(receiver, formBody(pairs!, result.checksum))
    expect(answer).toMatchObject({ status: 400, outcome: 'rejected', error: { code: 'inconsistent_result' } })
    expect(answer.error?.message).toMatch(/status_url|receipt_url/)
    expect(answer.error?.message).not.toContain(expensive)
    expect(await deliver(receiver, result.body)).toMatchObject({ status: 200, outcome: 'processed' })
    expect(events.map((event) => event.payment.orderNumber)).toEqual([result.fields.order_number])
  })

  it('C: a B2B1 99 whose code was renamed away is not read as failed, and the genuine 99 still counts', async () => {
    const result = genuine(PENDING)
    const at = indexOf(result.pairs, 'fpx_debit_auth_code')
    const variants = [
      renamed(result.pairs, new Map([[at, 'fpx_debit_auth_codez']])),
      // The code's name given to the next value (B2B1), the 99 pushed under a name before it.
      renamed(result.pairs, new Map([[at, 'fpx_debit_auth_cod'], [at + 1, 'fpx_debit_auth_code']])),
    ]
    const { receiver, events } = recorded()
    for (const pairs of variants) {
      expect(pairs).toBeDefined()
      expect(await deliver(receiver, formBody(pairs!, result.checksum))).toMatchObject({ status: 400, error: { code: 'inconsistent_result' } })
    }
    expect(await deliver(receiver, result.body)).toMatchObject({ status: 200, outcome: 'processed' })
    expect(events.map((event) => event.state)).toEqual(['pending'])
  })

  it('a result no service address pins (the minimal shape) is handled once whatever its names', async () => {
    const minimal = { buyer_name: 'EX-OTHER-1', exchange_number: 'EX-REAL-1', order_number: 'ORD-1', payment_status: 'true' }
    const { body } = signCallback(minimal, TOKEN)
    const { pairs, checksum } = signedPairs(body)
    const variant = moved(pairs, indexOf(pairs, 'buyer_name'), 'exchange_number')
    expect(variant).toBeDefined()
    const { receiver, events } = recorded()
    const first = await deliver(receiver, formBody(variant!, checksum))
    const second = await deliver(receiver, body)
    expect([first.outcome, second.outcome]).toEqual(['processed', 'duplicate'])
    expect(events).toHaveLength(1)
    // Another genuine result of the same payment (the callback after a minimal redirect) is deduplicated as ever.
    const { receiver: fresh, events: freshEvents } = recorded()
    await deliver(fresh, body)
    expect((await deliver(fresh, signCallback({ ...minimal, transaction_amount: '5.00' }, TOKEN).body)).outcome).toBe('duplicate')
    expect(freshEvents).toHaveLength(1)
  })

  it('keeps accepting genuine results: extra unknown fields, a buyer name with a pipe, and a failure carrying 99 elsewhere in B2C', async () => {
    const { receiver, events } = recorded()
    const extra = genuine({ interface_name: 'Shop', interface_uid: 'x', id: '7', bank: 'MBB', token: '' })
    const piped = genuine({ buyer_name: 'A|B', product_description: 'x' })
    const failed = genuine({ payment_status: 'false', fpx_debit_auth_code: '1C', payment_id: '99', transaction_amount_received: '0.00' })
    for (const result of [extra, piped, failed]) expect((await deliver(receiver, result.body)).outcome).toBe('processed')
    expect(events.map((event) => event.state)).toEqual(['succeeded', 'succeeded', 'failed'])
  })
})

/** Random rearrangements of a genuine result: values moved under the names the receiver acts on, others renamed. */
const TARGETS = ['exchange_number', 'order_number', 'payment_status', 'fpx_debit_auth_code', 'transaction_amount', 'status_url', 'receipt_url', 'fpx_model']

function rearrangement(pairs: Pairs) {
  return fc
    .array(fc.tuple(fc.nat({ max: pairs.length - 1 }), fc.oneof(fc.constantFrom(...TARGETS), fc.constantFrom(...pairs.map(([n]) => `${n}z`)))), { minLength: 1, maxLength: 3 })
    .map((moves) => renamed(pairs, new Map(moves)))
}

const buyerText = fc.oneof(fc.constantFrom('ORD-OTHER', 'true', 'false', '99', 'B2B1', '1000.00', 'EX-OTHER'), fc.string({ minLength: 1, maxLength: 12 }).filter((s) => !/[\p{Cc}]/u.test(s)))
const stateFields = fc.constantFrom({}, { payment_status: 'false', fpx_debit_auth_code: '1C', transaction_amount_received: '0.00' }, PENDING, { fpx_model: 'B2B1' })

describe('generated rearrangements, with the defaults', () => {
  it('never run a handler twice, for another exchange_number, or read a pending approval as failed', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({ buyer_name: buyerText, buyer_email: buyerText, buyer_phone: buyerText }),
        stateFields,
        fc.integer({ min: 1, max: 2 ** 31 }),
        async (buyer, state, seed) => {
          const result = genuine({ ...buyer, ...state })
          const variants = fc.sample(rearrangement(result.pairs), { numRuns: 12, seed }).filter((pairs): pairs is Pairs => pairs !== undefined)
          const { receiver, events } = recorded()
          for (const pairs of variants) await deliver(receiver, formBody(pairs, result.checksum))
          const answer = await deliver(receiver, result.body)
          // A genuine result is never refused: processed, or a duplicate of a variant that carried the same payment.
          expect(answer.status).toBe(200)
          const states = events.map((event) => event.state)
          expect(new Set(states).size).toBe(states.length)
          for (const event of events) expect(event.payment.exchangeNumber).toBe(result.fields.exchange_number)
          if (result.fields.fpx_debit_auth_code === '99') expect(states).not.toContain('failed')
        },
      ),
      { numRuns: NUM_RUNS },
    )
  })
})
