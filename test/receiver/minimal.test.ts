import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  answerDelivery,
  createReceiver,
  type PaymentEvent,
  type PaymentResultFields,
  paymentResultSchema,
  type Receiver,
} from '../../src/index.js'
import { signCallback } from '../../src/testing.js'
import { DEMO, type Genuine, type Service, service } from '../security/genuine.js'
import { independentForm } from './independent-signer.js'

const TOKEN = DEMO.checksumToken
const FORM = 'application/x-www-form-urlencoded'

/*
 * Some real redirects carry no more than what classification and deduplication need. Minimal messages of real
 * payments at the emulator: the receiver confirms them over the API, and handlers get the API's whole record.
 */
let svc: Service
let paid: Genuine
let failed: Genuine
let pending: Genuine
let MINIMAL: { exchange_number: string; order_number: string; payment_status: string }
beforeAll(async () => {
  svc = await service()
  paid = await svc.pay('approve', { transaction_amount: '200.00' })
  failed = await svc.pay('reject')
  pending = await svc.pay('pending', { model: 'B2B1' })
  MINIMAL = { exchange_number: paid.exchangeNumber, order_number: paid.orderNumber, payment_status: 'true' }
})
afterAll(async () => {
  await svc.stop()
})

function recorded(options: object = {}): { receiver: Receiver; events: PaymentEvent[] } {
  const receiver = createReceiver({ environment: svc.environment, credentials: DEMO, logger: false, ...options })
  const events: PaymentEvent[] = []
  for (const name of ['payment.succeeded', 'payment.failed', 'payment.pending'] as const) receiver.on(name, (event) => void events.push(event))
  return { receiver, events }
}

const signers = [
  ['the test helper', (fields: Record<string, string>) => signCallback(fields, TOKEN).body],
  ['an independent signer', (fields: Record<string, string>) => independentForm(fields, TOKEN)],
] as const

describe.each(signers)('minimal messages (signed by %s)', (_label, sign) => {
  it('accepts and handles a redirect with only exchange_number, order_number and payment_status, with the API\'s record', async () => {
    const { receiver, events } = recorded()
    const response = await receiver.handle({ kind: 'redirect', body: sign(MINIMAL), contentType: FORM })
    expect([response.status, response.outcome]).toEqual([200, 'processed'])
    expect(events).toHaveLength(1)
    expect(events[0]!.confirmed).toBe(true)
    expect(events[0]!.payment).toMatchObject({
      state: 'succeeded',
      exchangeNumber: MINIMAL.exchange_number,
      orderNumber: MINIMAL.order_number,
      paid: true,
      // The API's record: the amount the redirect did not carry.
      amountSen: 20000,
      currency: 'MYR',
    })
    // Deduplicated like any other: the full callback that follows is the same payment state.
    const callback = await receiver.handle({ kind: 'callback', body: paid.body, contentType: FORM })
    expect([callback.status, callback.outcome]).toEqual([200, 'duplicate'])
  })

  it('classifies a minimal failure and a minimal pending B2B1 as the API knows them', async () => {
    const { receiver, events } = recorded()
    await receiver.handle({ kind: 'callback', body: sign({ exchange_number: failed.exchangeNumber, order_number: failed.orderNumber, payment_status: 'false' }), contentType: FORM })
    const minimalPending = { exchange_number: pending.exchangeNumber, order_number: pending.orderNumber, payment_status: 'false', fpx_debit_auth_code: '99' }
    await receiver.handle({ kind: 'callback', body: sign(minimalPending), contentType: FORM })
    expect(events.map((event) => event.state)).toEqual(['failed', 'pending'])
  })

  it('takes an empty transaction_amount as absent: the API\'s record says the amount', async () => {
    const { receiver, events } = recorded()
    expect((await receiver.handle({ kind: 'callback', body: sign({ ...MINIMAL, transaction_amount: '' }), contentType: FORM })).status).toBe(200)
    expect(events[0]!.payment.amountSen).toBe(20000)
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

  it('shows the built-in result page with the amount the API knows, and none for a duplicate that carries none', async () => {
    const { receiver } = recorded()
    const answer = await answerDelivery(receiver, { kind: 'redirect', body: signCallback(MINIMAL, TOKEN).body, contentType: FORM }, {}, undefined)
    expect(answer.status).toBe(200)
    expect(answer.body).toContain(MINIMAL.order_number)
    expect(answer.body).toContain('RM 200.00')
    // Handled already: the page shows the redirect as it came, with no made-up amount.
    const again = await answerDelivery(receiver, { kind: 'redirect', body: signCallback(MINIMAL, TOKEN).body, contentType: FORM }, {}, undefined)
    expect(again.body).toContain(MINIMAL.order_number)
    expect(again.body).not.toContain('Amount')
    expect(again.body).not.toContain('NaN')
  })

  it('without confirmation, warns when a result carries no amount, and refuses it with requireFields', async () => {
    const warnings: string[] = []
    const logger = { debug() {}, info() {}, warn: (_details: object, message: string) => void warnings.push(message), error() {} }
    const tolerant = createReceiver({ signatureOnly: true, checksumToken: TOKEN, logger })
    tolerant.onAny(() => {})
    const accepted = await tolerant.handle({ kind: 'callback', body: signCallback(MINIMAL, TOKEN).body, contentType: FORM })
    expect([accepted.status, accepted.outcome]).toEqual([200, 'processed'])
    expect(warnings.some((message) => /carries no transaction_amount/.test(message) && /confirm/.test(message))).toBe(true)

    const strict = createReceiver({ environment: svc.environment, credentials: DEMO, logger, requireFields: ['transaction_amount'] })
    strict.onAny(() => {})
    const refused = await strict.handle({ kind: 'callback', body: signCallback(MINIMAL, TOKEN).body, contentType: FORM })
    expect([refused.status, refused.outcome, refused.error?.code]).toEqual([400, 'rejected', 'invalid_fields'])
    expect(refused.error?.message).toMatch(/transaction_amount/)
    const full = await strict.handle({ kind: 'callback', body: signCallback({ ...MINIMAL, transaction_amount: '1.00' }, TOKEN).body, contentType: FORM })
    expect([full.status, full.outcome]).toEqual([200, 'processed'])
  })
})
