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

/**
 * A failure as the service sends one: its stage, and the retry address only failed payments get (spec). Its
 * fpx_status true is what an attacker would move into payment_status.
 */
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

  it('A, with the rearrangements sent as JSON bodies (the signed string is then text, not the form bytes)', async () => {
    const result = genuine({ buyer_name: 'EX-PLANTED-1' })
    const { receiver, events } = recorded()
    for (const name of ['buyer_name', 'client_ip', 'currency']) {
      const pairs = moved(result.pairs, indexOf(result.pairs, name), 'exchange_number') as Pairs
      const body = JSON.stringify(Object.fromEntries([...pairs, ['checksum', result.checksum]]))
      expect((await receiver.handle({ kind: 'callback', body, contentType: 'application/json' })).error?.code).toBe('inconsistent_result')
    }
    const genuineJson = JSON.stringify(Object.fromEntries([...result.pairs, ['checksum', result.checksum]]))
    expect((await receiver.handle({ kind: 'callback', body: genuineJson, contentType: 'application/json' })).outcome).toBe('processed')
    expect(events).toHaveLength(1)
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

  it('a result no service address pins is taken only when exchange_number is its first signed value', async () => {
    // The minimal shape: nothing sorts before exchange_number, so nothing can be moved into it.
    const minimal = { exchange_number: 'EX-REAL-1', order_number: 'ORD-1', payment_status: 'true' }
    const withBuyer = { buyer_name: 'EX-OTHER-1', ...minimal }
    const { pairs, checksum } = signedPairs(signCallback(withBuyer, TOKEN).body)
    const variant = formBody(moved(pairs, indexOf(pairs, 'buyer_name'), 'exchange_number') as Pairs, checksum)
    const { receiver, events } = recorded()
    expect((await deliver(receiver, signCallback(minimal, TOKEN).body)).outcome).toBe('processed')
    for (const body of [variant, signCallback(withBuyer, TOKEN).body]) {
      const answer = await deliver(receiver, body)
      expect(answer).toMatchObject({ status: 400, error: { code: 'inconsistent_result' } })
      expect(answer.error?.message).toContain('API client')
    }
    expect(events.map((event) => event.payment.exchangeNumber)).toEqual(['EX-REAL-1'])
    // A status_url hidden under a bracket name does not make the first value count as pinned.
    const hidden = signCallback({ ...minimal, exchange_number: 'EX-REAL-2', 'z[u]': 'https://s.test/api/v1/status/EX-REAL-1?uid=1' }, TOKEN).body
    expect((await deliver(receiver, hidden)).error?.code).toBe('inconsistent_result')
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
      const [kept, renamedAway] = variants.map((pairs) => formBody(pairs, result.checksum)) as [string, string]
      // With the code still under its name, a 51 or a 99 beside payment_status true is refused too.
      for (const body of [kept, renamedAway]) expect((await deliver(receiver, body)).error?.code).toBe('inconsistent_result')
    }
    expect(events).toHaveLength(0)
  })

  it('keeps accepting genuine results: extra unknown fields, a buyer name with a pipe, and a failure carrying 99 elsewhere in B2C', async () => {
    const { receiver, events } = recorded()
    const extra = genuine({ interface_name: 'Shop', interface_uid: 'x', id: '7', bank: 'MBB', token: '' })
    const piped = genuine({ buyer_name: 'A|B', product_description: 'x' })
    const failed = genuine({ payment_status: 'false', fpx_debit_auth_code: '1C', payment_id: '99', transaction_amount_received: '0.00' })
    const corporateFailed = genuine({ payment_status: 'false', fpx_debit_auth_code: '51', fpx_model: 'B2B1', buyer_phone: '99', transaction_amount_received: '0.00' })
    // A shop's own links in params, one shaped like the service's receipt address.
    const links = signCallback({ ...samplePaymentFields(), params: { reference1_label: 'Receipt', reference1: 'https://shop.test/v1/receipt/77.pdf' } }, TOKEN)
    for (const result of [extra, piped, failed, corporateFailed]) expect((await deliver(receiver, result.body)).outcome).toBe('processed')
    expect((await deliver(receiver, links.body)).outcome).toBe('processed')
    expect(events.map((event) => event.state)).toEqual(['succeeded', 'succeeded', 'failed', 'failed', 'succeeded'])
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
const stateFields = fc.constantFrom(
  {},
  { payment_status: 'false', fpx_debit_auth_code: '1C', transaction_amount_received: '0.00', payment_stage: 'payment_unsuccessful' },
  FAILED_51,
  PENDING,
  { ...PENDING, fpx_status: 'true' },
  { fpx_model: 'B2B1' },
)

describe('generated rearrangements, with the defaults', () => {
  it('never run a handler twice, for another exchange_number, or read a pending approval as failed', async () => {
    await fc.assert(
      fc.asyncProperty(
        // buyer fields, and real fields the spec does not list (name, interface_name) holding text of the buyer's
        fc.record({ buyer_name: buyerText, buyer_email: buyerText, buyer_phone: buyerText, name: buyerText, interface_name: buyerText }),
        stateFields,
        fc.integer({ min: 1, max: 2 ** 31 }),
        async (buyer, state, seed) => {
          const result = genuine({ ...buyer, ...state })
          const genuineState = result.fields.fpx_debit_auth_code === '99' ? 'pending' : result.fields.payment_status === 'true' ? 'succeeded' : 'failed'
          const variants = fc.sample(rearrangement(result.pairs), { numRuns: 12, seed }).filter((pairs): pairs is Pairs => pairs !== undefined)
          const { receiver, events } = recorded()
          for (const pairs of variants) await deliver(receiver, formBody(pairs, result.checksum))
          const answer = await deliver(receiver, result.body)
          // A genuine result is never refused: processed, or a duplicate of a variant that carried the same payment.
          expect(answer.status).toBe(200)
          const states = events.map((event) => event.state)
          expect(new Set(states).size).toBe(states.length)
          for (const event of events) {
            expect(event.payment.exchangeNumber).toBe(result.fields.exchange_number)
            // Never another state than the genuine one: not a 99 read as failed, not a failure read as paid.
            expect(event.state).toBe(genuineState)
          }
        },
      ),
      { numRuns: NUM_RUNS },
    )
  })
})
