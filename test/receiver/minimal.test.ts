import { describe, expect, it } from 'vitest'
import {
  answerDelivery,
  createReceiver,
  type PaymentEvent,
  type PaymentResultFields,
  paymentResultSchema,
  type Receiver,
} from '../../src/index.js'
import { signCallback } from '../../src/testing.js'
import { independentForm } from './independent-signer.js'

const TOKEN = 'ab'.repeat(32)
const FORM = 'application/x-www-form-urlencoded'

/** What classification and deduplication need, and nothing else. */
const MINIMAL = { exchange_number: 'ULDYE1656661277', order_number: 'ORD-9', payment_status: 'true' } as const

function recorded(): { receiver: Receiver; events: PaymentEvent[] } {
  const receiver = createReceiver({ checksumToken: TOKEN })
  const events: PaymentEvent[] = []
  for (const name of ['payment.succeeded', 'payment.failed', 'payment.pending'] as const) receiver.on(name, (event) => void events.push(event))
  return { receiver, events }
}

const signers = [
  ['the test helper', (fields: Record<string, string>) => signCallback(fields, TOKEN).body],
  ['an independent signer', (fields: Record<string, string>) => independentForm(fields, TOKEN)],
] as const

describe.each(signers)('minimal messages (signed by %s)', (_label, sign) => {
  it('accepts and handles a redirect with only exchange_number, order_number and payment_status', async () => {
    const { receiver, events } = recorded()
    const response = await receiver.handle({ kind: 'redirect', body: sign(MINIMAL), contentType: FORM })
    expect([response.status, response.outcome]).toEqual([200, 'processed'])
    expect(events).toHaveLength(1)
    const { payment } = events[0]!
    expect(payment).toMatchObject({
      state: 'succeeded',
      exchangeNumber: MINIMAL.exchange_number,
      orderNumber: MINIMAL.order_number,
      paid: true,
      amountSen: undefined,
      amountReceivedSen: null,
      currency: null,
      uid: null,
    })
    // Deduplicated like any other: the full callback that follows is the same payment state.
    const callback = await receiver.handle({ kind: 'callback', body: sign({ ...MINIMAL, transaction_amount: '200.00', uid: 'x' }), contentType: FORM })
    expect([callback.status, callback.outcome]).toEqual([200, 'duplicate'])
  })

  it('classifies a minimal failure and a minimal pending B2B1', async () => {
    const { receiver, events } = recorded()
    await receiver.handle({ kind: 'callback', body: sign({ ...MINIMAL, payment_status: 'false' }), contentType: FORM })
    await receiver.handle({ kind: 'callback', body: sign({ ...MINIMAL, exchange_number: 'EX2', payment_status: 'false', fpx_debit_auth_code: '99' }), contentType: FORM })
    expect(events.map((event) => event.state)).toEqual(['failed', 'pending'])
  })

  it('takes an empty transaction_amount as absent', async () => {
    const { receiver, events } = recorded()
    expect((await receiver.handle({ kind: 'callback', body: sign({ ...MINIMAL, transaction_amount: '' }), contentType: FORM })).status).toBe(200)
    expect(events[0]!.payment.amountSen).toBeUndefined()
  })

  it.each(['exchange_number', 'order_number', 'payment_status'] as const)('still refuses a message without %s with 400', async (name) => {
    const { receiver, events } = recorded()
    const { [name]: _removed, ...rest } = MINIMAL
    const response = await receiver.handle({ kind: 'callback', body: sign(rest), contentType: FORM })
    expect([response.status, response.error?.code]).toEqual([400, 'invalid_fields'])
    expect(response.error?.message).toContain(name)
    expect(events).toHaveLength(0)
  })

  it.each([
    ['transaction_amount', 'abc'],
    ['transaction_amount', '100.205'],
    ['payment_status', 'yes'],
    ['payment_id', '12a'],
  ])('still refuses a present %s %j with 400 naming it', async (name, value) => {
    const { receiver, events } = recorded()
    const response = await receiver.handle({ kind: 'callback', body: sign({ ...MINIMAL, [name]: value }), contentType: FORM })
    expect([response.status, response.error?.code]).toEqual([400, 'invalid_fields'])
    expect(response.error?.message).toContain(name)
    expect(events).toHaveLength(0)
  })
})

describe('minimal messages elsewhere', () => {
  it('paymentResultSchema follows the same rules', () => {
    const withChecksum = { ...MINIMAL, checksum: 'a'.repeat(64) }
    expect(paymentResultSchema.safeParse(withChecksum).success).toBe(true)
    expect(paymentResultSchema.safeParse({ ...withChecksum, transaction_amount: '' }).success).toBe(true)
    const bad = paymentResultSchema.safeParse({ ...withChecksum, transaction_amount: 'abc' })
    expect(bad.error?.issues.map((issue) => issue.path)).toEqual([['transaction_amount']])
    for (const name of ['exchange_number', 'order_number', 'payment_status', 'checksum'] as const) {
      const { [name]: _removed, ...rest } = withChecksum
      expect(paymentResultSchema.safeParse(rest).error?.issues.map((issue) => issue.path)).toEqual([[name]])
    }
    // The inferred type says so too: this compiles without transaction_amount.
    const typed: PaymentResultFields = withChecksum
    expect(typed.transaction_amount).toBeUndefined()
  })

  it('shows the built-in result page without an amount row', async () => {
    const { receiver } = recorded()
    const answer = await answerDelivery(receiver, { kind: 'redirect', body: signCallback(MINIMAL, TOKEN).body, contentType: FORM }, {}, undefined)
    expect(answer.status).toBe(200)
    expect(answer.body).toContain('ORD-9')
    expect(answer.body).not.toContain('Amount')
    expect(answer.body).not.toContain('NaN')
    const body = signCallback({ ...MINIMAL, exchange_number: 'EX3', transaction_amount: '200' }, TOKEN).body
    const full = await answerDelivery(receiver, { kind: 'redirect', body, contentType: FORM }, {}, undefined)
    expect(full.body).toContain('RM 200.00')
  })

  it('warns when a verified result carries no amount, and refuses it with requireFields', async () => {
    const warnings: string[] = []
    const logger = { debug() {}, info() {}, warn: (_details: object, message: string) => void warnings.push(message), error() {} }
    const tolerant = createReceiver({ checksumToken: TOKEN, logger })
    tolerant.onAny(() => {})
    const accepted = await tolerant.handle({ kind: 'callback', body: signCallback(MINIMAL, TOKEN).body, contentType: FORM })
    expect([accepted.status, accepted.outcome]).toEqual([200, 'processed'])
    expect(warnings.some((message) => /carries no transaction_amount/.test(message) && /client\.paymentStatus/.test(message))).toBe(true)

    const strict = createReceiver({ checksumToken: TOKEN, logger, requireFields: ['transaction_amount'] })
    strict.onAny(() => {})
    const refused = await strict.handle({ kind: 'callback', body: signCallback(MINIMAL, TOKEN).body, contentType: FORM })
    expect([refused.status, refused.outcome, refused.error?.code]).toEqual([400, 'rejected', 'invalid_fields'])
    expect(refused.error?.message).toMatch(/transaction_amount/)
    const full = await strict.handle({ kind: 'callback', body: signCallback({ ...MINIMAL, transaction_amount: '1.00' }, TOKEN).body, contentType: FORM })
    expect([full.status, full.outcome]).toEqual([200, 'processed'])
  })
})
