/*
 * Handlers' events are narrowed by the event's name. The expectTypeOf lines are checked by `tsc --noEmit` (the
 * tests are in tsconfig's include); the runtime lines check that what the types promise is what handlers get.
 */
import { describe, expect, expectTypeOf, it } from 'vitest'
import { createReceiver, type Payment, type PaymentEvent, type PaymentEventName, type PaymentState } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

const TOKEN = 'ab'.repeat(32)

const STATUS = {
  succeeded: { payment_status: 'true', fpx_debit_auth_code: '00' },
  failed: { payment_status: 'false', fpx_debit_auth_code: '51', transaction_amount_received: '0.00' },
  pending: { payment_status: 'false', fpx_debit_auth_code: '99', fpx_model: 'B2B1', transaction_amount_received: '0.00' },
} as const

function delivery(state: PaymentState) {
  const signed = signCallback(samplePaymentFields({ exchange_number: `EX-TYPES-${state}`, ...STATUS[state] }), TOKEN)
  return { kind: 'callback' as const, body: Buffer.from(signed.body), contentType: signed.contentType }
}

describe('event types', () => {
  it('narrow name, state and payment.state by the name given to on()', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    const seen: [string, string, string][] = []
    receiver.on('payment.succeeded', (event) => {
      expectTypeOf(event.name).toEqualTypeOf<'payment.succeeded'>()
      expectTypeOf(event.state).toEqualTypeOf<'succeeded'>()
      expectTypeOf(event.payment.state).toEqualTypeOf<'succeeded'>()
      expectTypeOf(event.payment).toExtend<Payment>()
      seen.push([event.name, event.state, event.payment.state])
    })
    receiver.on('payment.failed', (event) => {
      expectTypeOf(event.state).toEqualTypeOf<'failed'>()
      expectTypeOf(event.name).toEqualTypeOf<'payment.failed'>()
      seen.push([event.name, event.state, event.payment.state])
    })
    receiver.on('payment.pending', (event) => {
      expectTypeOf(event.state).toEqualTypeOf<'pending'>()
      expectTypeOf(event.previousState).toEqualTypeOf<PaymentState | null>()
      seen.push([event.name, event.state, event.payment.state])
    })
    for (const state of ['succeeded', 'failed', 'pending'] as const) expect((await receiver.handle(delivery(state))).outcome).toBe('processed')
    expect(seen).toEqual([
      ['payment.succeeded', 'succeeded', 'succeeded'],
      ['payment.failed', 'failed', 'failed'],
      ['payment.pending', 'pending', 'pending'],
    ])
  })

  it('give onAny the union, which a test of name narrows', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    const seen: string[] = []
    receiver.onAny((event) => {
      expectTypeOf(event.name).toEqualTypeOf<PaymentEventName>()
      expectTypeOf(event.state).toEqualTypeOf<PaymentState>()
      if (event.name === 'payment.failed') {
        expectTypeOf(event.state).toEqualTypeOf<'failed'>()
        seen.push(`failed:${event.state}`)
      } else seen.push(event.state)
    })
    expect((await receiver.handle(delivery('failed'))).outcome).toBe('processed')
    expect(seen).toEqual(['failed:failed'])
  })

  it('refuse a handler typed for another event, and keep PaymentEvent usable as the general type', () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    const onSuccess = (event: PaymentEvent<undefined, 'payment.succeeded'>) => void event.state
    receiver.on('payment.succeeded', onSuccess)
    // @ts-expect-error: a payment.succeeded handler cannot listen to payment.failed
    receiver.on('payment.failed', onSuccess)
    // A handler written for any event fits every name.
    const general = (event: PaymentEvent) => void event.state
    receiver.on('payment.pending', general)
    expectTypeOf<PaymentEvent<undefined, 'payment.failed'>>().toExtend<PaymentEvent>()
    // @ts-expect-error: not an event name
    expect(() => receiver.on('payment.refunded', general)).toThrow(TypeError)
  })
})
