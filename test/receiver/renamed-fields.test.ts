/**
 * Renamed-field replays against a receiver that does not confirm (signatureOnly: true): what it cannot tell apart
 * from a genuine result it refuses with needs_confirmation, and it never runs a handler with another payment,
 * order, amount or state than the genuine result's. The same attacks against the confirmed default, from real
 * emulator payments, are in test/security.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createReceiver, type PaymentEvent, type Receiver } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { formBody, indexOf, moved, type Pairs, renamed, signedPairs } from './rearrange.js'

const TOKEN = 'cd'.repeat(32)
const FORM = 'application/x-www-form-urlencoded'
const NUM_RUNS = Number(process.env.FC_RUNS ?? 60)

function recorded(): { receiver: Receiver; events: PaymentEvent[] } {
  const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, logger: false })
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

/** A failure as the service sends one: its stage, and the retry address only failed payments get (spec). */
const FAILED_51 = {
  payment_status: 'false',
  fpx_debit_auth_code: '51',
  fpx_status: 'true',
  transaction_amount_received: '0.00',
  payment_stage: 'payment_unsuccessful',
  retry_url: 'https://sandbox.example.test/api/v1/retry/ABCDE0000000001?uid=u',
}

/** A B2B1 payment pending corporate approval, as the first callback carries it. */
const PENDING = { payment_status: 'false', fpx_debit_auth_code: '99', fpx_model: 'B2B1', payment_stage: 'payment_pending', transaction_amount_received: '0.00' }

const refusedUnconfirmed = { status: 400, outcome: 'rejected', error: { code: 'needs_confirmation' } }

describe('renamed-field replays without confirmation (attacks from docs/security.md)', () => {
  it('A: one genuine success moved into nine exchange_numbers runs the handler once', async () => {
    const result = genuine({ buyer_name: 'EXPLANTED1', buyer_email: 'EXPLANTED2' })
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
    for (const answer of answers.slice(0, -1)) expect(answer).toMatchObject(refusedUnconfirmed)
    expect(answers.at(-1)!.error?.message ?? '').not.toContain(TOKEN)
  })

  it('A, with the rearrangements sent as JSON bodies (the signed string is then text, not the form bytes)', async () => {
    const result = genuine({ buyer_name: 'EXPLANTED1' })
    const { receiver, events } = recorded()
    for (const name of ['buyer_name', 'client_ip', 'currency']) {
      const pairs = moved(result.pairs, indexOf(result.pairs, name), 'exchange_number') as Pairs
      const body = JSON.stringify(Object.fromEntries([...pairs, ['checksum', result.checksum]]))
      expect(await receiver.handle({ kind: 'callback', body, contentType: 'application/json' })).toMatchObject(refusedUnconfirmed)
    }
    const genuineJson = JSON.stringify(Object.fromEntries([...result.pairs, ['checksum', result.checksum]]))
    expect((await receiver.handle({ kind: 'callback', body: genuineJson, contentType: 'application/json' })).outcome).toBe('processed')
    expect(events).toHaveLength(1)
  })

  it('B: a buyer_name holding another order number never pays that order, and the refusal names no value', async () => {
    const expensive = 'ORD-EXPENSIVE-9'
    const result = genuine({ buyer_name: expensive, transaction_amount: '1.00' })
    const from = indexOf(result.pairs, 'buyer_name')
    const pairs = moved(result.pairs, from, 'order_number', new Map([[from - 1, 'exchange_number']]))
    expect(pairs).toBeDefined()
    const { receiver, events } = recorded()
    const answer = await deliver(receiver, formBody(pairs!, result.checksum))
    expect(answer).toMatchObject(refusedUnconfirmed)
    expect(answer.error?.message).toMatch(/confirms results over the service's API/)
    expect(answer.error?.message).not.toContain(expensive)
    expect(await deliver(receiver, result.body)).toMatchObject({ status: 200, outcome: 'processed' })
    expect(events.map((event) => event.payment.orderNumber)).toEqual([result.fields.order_number])
  })

  it('D: a value moved into order_number from a field after it (payment_id) is refused', async () => {
    const result = genuine({ order_number: '1001', payment_id: '1002' })
    const pairs = moved(result.pairs, indexOf(result.pairs, 'payment_id'), 'order_number')
    const { receiver, events } = recorded()
    expect(await deliver(receiver, formBody(pairs!, result.checksum))).toMatchObject(refusedUnconfirmed)
    expect((await deliver(receiver, result.body)).outcome).toBe('processed')
    expect(events.map((event) => event.payment.orderNumber)).toEqual(['1001'])
  })

  it('a wrong amount: transaction_fee moved under transaction_amount is refused', async () => {
    const result = genuine({ transaction_amount: '10.00', transaction_amount_received: '10.00' })
    const pairs = moved(result.pairs, indexOf(result.pairs, 'transaction_fee'), 'transaction_amount')
    const { receiver, events } = recorded()
    expect(await deliver(receiver, formBody(pairs!, result.checksum))).toMatchObject(refusedUnconfirmed)
    expect((await deliver(receiver, result.body)).outcome).toBe('processed')
    expect(events.map((event) => event.payment.amountSen)).toEqual([1000])
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
      const answer = await deliver(receiver, formBody(pairs!, result.checksum))
      expect([400, 401]).toContain(answer.status)
    }
    expect(await deliver(receiver, result.body)).toMatchObject({ status: 200, outcome: 'processed' })
    expect(events.map((event) => event.state)).toEqual(['pending'])
  })

  it('a failure or a pending approval is not read as succeeded when a true value is moved into payment_status', async () => {
    const { receiver, events } = recorded()
    for (const state of [FAILED_51, { ...PENDING, fpx_status: 'true' }]) {
      const result = genuine(state)
      const from = indexOf(result.pairs, 'fpx_status')
      const code = indexOf(result.pairs, 'fpx_debit_auth_code')
      const variants = [
        moved(result.pairs, from, 'payment_status', new Map([[from - 1, 'order_number']])),
        moved(result.pairs, from, 'payment_status', new Map([[from - 1, 'order_number'], [code, 'fpx_debit_auth_codez']])),
      ].filter((pairs): pairs is Pairs => pairs !== undefined)
      expect(variants.length).toBe(2)
      for (const body of variants.map((pairs) => formBody(pairs, result.checksum))) expect([400, 401]).toContain((await deliver(receiver, body)).status)
    }
    expect(events).toHaveLength(0)
  })

  it('takes genuine results it can place, and refuses with needs_confirmation those it cannot (a field it does not know, a pipe)', async () => {
    const { receiver, events } = recorded()
    const failed = genuine({ payment_status: 'false', fpx_debit_auth_code: '1C', payment_id: '99', transaction_amount_received: '0.00' })
    const corporateFailed = genuine({ payment_status: 'false', fpx_debit_auth_code: '51', fpx_model: 'B2B1', buyer_phone: '99', transaction_amount_received: '0.00' })
    for (const result of [failed, corporateFailed]) expect((await deliver(receiver, result.body)).outcome).toBe('processed')
    expect(events.map((event) => event.state)).toEqual(['failed', 'failed'])
    const extra = genuine({ interface_name: 'Shop', id: '7' })
    const piped = genuine({ buyer_name: 'A|B' })
    for (const result of [extra, piped]) expect(await deliver(receiver, result.body)).toMatchObject(refusedUnconfirmed)
    expect(events).toHaveLength(2)
  })
})

/** Random rearrangements of a genuine result: values moved under the names the receiver acts on, others renamed. */
const TARGETS = ['exchange_number', 'order_number', 'payment_status', 'fpx_debit_auth_code', 'transaction_amount', 'status_url', 'receipt_url', 'fpx_model']

function rearrangement(pairs: Pairs) {
  return fc
    .array(fc.tuple(fc.nat({ max: pairs.length - 1 }), fc.oneof(fc.constantFrom(...TARGETS), fc.constantFrom(...pairs.map(([n]) => `${n}z`)))), { minLength: 1, maxLength: 3 })
    .map((moves) => renamed(pairs, new Map(moves)))
}

const buyerText = fc.oneof(fc.constantFrom('ORD-OTHER', 'true', 'false', '99', 'B2B1', '1000.00', 'EXOTHER'), fc.string({ minLength: 1, maxLength: 12 }).filter((s) => !/[\p{Cc}|]/u.test(s)))
const stateFields = fc.constantFrom(
  {},
  { payment_status: 'false', fpx_debit_auth_code: '1C', transaction_amount_received: '0.00', payment_stage: 'payment_unsuccessful' },
  FAILED_51,
  PENDING,
  { ...PENDING, fpx_status: 'true' },
  { fpx_model: 'B2B1' },
)

describe('generated rearrangements without confirmation', () => {
  it('never run a handler twice, or for another payment, order, amount or state than the genuine result’s', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({ buyer_name: buyerText, buyer_email: buyerText, buyer_phone: buyerText }),
        stateFields,
        fc.integer({ min: 1, max: 2 ** 31 }),
        async (buyer, state, seed) => {
          const result = genuine({ ...buyer, ...state })
          const genuineState = result.fields.fpx_debit_auth_code === '99' ? 'pending' : result.fields.payment_status === 'true' ? 'succeeded' : 'failed'
          const variants = fc.sample(rearrangement(result.pairs), { numRuns: 12, seed }).filter((pairs): pairs is Pairs => pairs !== undefined)
          const { receiver, events } = recorded()
          for (const pairs of variants) await deliver(receiver, formBody(pairs, result.checksum))
          await deliver(receiver, result.body)
          const states = events.map((event) => event.state)
          expect(new Set(states).size).toBe(states.length)
          for (const event of events)
            expect(event.payment).toMatchObject({
              exchangeNumber: result.fields.exchange_number,
              orderNumber: result.fields.order_number,
              amountSen: 10020,
              state: genuineState,
            })
        },
      ),
      { numRuns: NUM_RUNS },
    )
  })
})
