import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createReceiver, type FieldInput, type PaymentState } from '../../src/index.js'
import { encodeForm } from '../../src/testing.js'
import { DEMO, type Emulator, launch } from './harness.js'

let emulator: Emulator

beforeAll(async () => {
  emulator = await launch()
})
afterAll(() => emulator.stop())

const receiver = createReceiver({ signatureOnly: true, credentials: [{ uid: DEMO.uid, checksumToken: DEMO.checksumToken }] })

/** Posts nothing: hands the signed fields, form-encoded as the service posts them, to the receiver's verify(). */
async function verify(fields: Record<string, FieldInput>) {
  return receiver.verify({ body: encodeForm(fields), contentType: 'application/x-www-form-urlencoded' })
}

function resultOf(completion: Record<string, unknown>): Record<string, FieldInput> {
  return completion.result as Record<string, FieldInput>
}

describe('signed result fields', () => {
  it.each([
    ['approve', 'succeeded', '00', 'true', 'payment_successful'],
    ['reject', 'failed', '51', 'false', 'payment_unsuccessful'],
    ['cancel', 'failed', '1C', 'false', 'payment_unsuccessful'],
  ] as const)('%s gives fields the receiver verifies as %s', async (outcome, state: PaymentState, code, status, stage) => {
    const exchangeNumber = await emulator.pay()
    const fields = resultOf(await emulator.complete(exchangeNumber, outcome))
    expect(fields).toMatchObject({ fpx_debit_auth_code: code, payment_status: status, payment_stage: stage, exchange_number: exchangeNumber })
    const verified = await verify(fields)
    expect(verified.state).toBe(state)
    expect(verified.rendering).toBe('plain')
    expect(verified.payment.uid).toBe(DEMO.uid)
    expect(verified.payment.amountSen).toBe(10020)
  })

  it('carries every field the Events section lists, and no token by default', async () => {
    const fields = resultOf(await emulator.complete(await emulator.pay(), 'approve'))
    const expected = [
      'source', 'payment_status', 'currency', 'transaction_amount', 'transaction_amount_received', 'order_number',
      'merchant_reference_number', 'exchange_number', 'buyer_name', 'buyer_phone', 'buyer_email', 'payment_id', 'client_ip',
      'status_url', 'retry_url', 'receipt_url', 'checksum', 'transaction_fee', 'payment_mode', 'payment_method', 'fpx_model',
      'fpx_debit_auth_code', 'fpx_name', 'fpx_bank', 'fpx_transaction_id', 'fpx_status', 'fpx_status_message',
      'fpx_transaction_time', 'amount', 'payment_stage', 'merchant_name', 'merchant_co_number', 'uid', 'created_at',
      'created_at_unixtime',
    ]
    expect(Object.keys(fields).sort()).toEqual(expected.sort())
    expect(fields.checksum).toMatch(/^[0-9a-f]{64}$/)
  })

  it('signs params sent with the request, which the receiver verifies in a nested rendering', async () => {
    const exchangeNumber = await emulator.pay({ 'params[reference1_label]': 'Table', 'params[reference1]': '12' })
    const fields = resultOf(await emulator.complete(exchangeNumber, 'approve'))
    expect(fields.params).toEqual({ reference1_label: 'Table', reference1: '12' })
    const verified = await verify(fields)
    expect(verified.rendering).not.toBe('plain')
    expect(verified.payment.params).toEqual({ reference1_label: 'Table', reference1: '12' })
  })

  it('is refused by the receiver once a field is altered', async () => {
    const fields = resultOf(await emulator.complete(await emulator.pay(), 'approve'))
    await expect(verify({ ...fields, transaction_amount: '1.00' })).rejects.toMatchObject({ code: 'checksum_mismatch' })
  })

  it('B2B1: 99 pending approval first, then 00 after approval, same exchange_number', async () => {
    const exchangeNumber = await emulator.pay({ model: 'B2B1' })
    const pending = resultOf(await emulator.complete(exchangeNumber, 'pending'))
    expect(pending).toMatchObject({ fpx_debit_auth_code: '99', fpx_model: 'B2B1', payment_status: 'false' })
    expect((await verify(pending)).state).toBe('pending')
    const approved = resultOf(await emulator.complete(exchangeNumber, 'approve'))
    expect(approved).toMatchObject({ fpx_debit_auth_code: '00', payment_status: 'true', fpx_transaction_id: pending.fpx_transaction_id })
    expect((await verify(approved)).state).toBe('succeeded')
  })

  it('GET /__emulator/payments/:exchange_number/result answers the current signed fields', async () => {
    const exchangeNumber = await emulator.pay()
    expect((await emulator.control(`/payments/${exchangeNumber}/result`)).status).toBe(409)
    await emulator.complete(exchangeNumber, 'approve')
    const fields = (await (await emulator.control(`/payments/${exchangeNumber}/result`)).json()) as Record<string, FieldInput>
    expect((await verify(fields)).state).toBe('succeeded')
  })
})

describe('control API', () => {
  it('refuses a second final result, pending for B2C, and unknown outcomes or payments', async () => {
    const exchangeNumber = await emulator.pay()
    expect((await emulator.control(`/payments/${exchangeNumber}/complete`, { outcome: 'pending' })).status).toBe(409)
    await emulator.complete(exchangeNumber, 'approve')
    const again = await emulator.control(`/payments/${exchangeNumber}/complete`, { outcome: 'reject' })
    expect(again.status).toBe(409)
    expect(await again.json()).toMatchObject({ code: 'conflict' })
    const unknownOutcome = await emulator.control(`/payments/${exchangeNumber}/complete`, { outcome: 'maybe' })
    expect(unknownOutcome.status).toBe(422)
    expect((await emulator.control('/payments/ABCDE0000000000/complete', { outcome: 'approve' })).status).toBe(404)
  })

  it('answers 400 malformed_request to a body that is not JSON', async () => {
    const response = await fetch(`${emulator.url}/__emulator/payments/${await emulator.pay()}/complete`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{outcome:',
    })
    expect(response.status).toBe(400)
    expect(await response.json()).toMatchObject({ code: 'malformed_request' })
  })

  it('completes with a chosen bank', async () => {
    const completion = await emulator.control(`/payments/${await emulator.pay()}/complete`, { outcome: 'approve', bank_code: 'PBB0233' })
    expect(((await completion.json()) as { result: Record<string, string> }).result.fpx_bank).toBe('Public Bank')
  })

  it('lists payments and resets the state', async () => {
    const exchangeNumber = await emulator.pay()
    const listed = (await (await emulator.control('/payments')).json()) as { payments: { exchange_number: string; callback_url: string }[] }
    expect(listed.payments.find((payment) => payment.exchange_number === exchangeNumber)?.callback_url).toBe('http://127.0.0.1:9/fpx/callback')
    expect((await emulator.control('/reset', {})).status).toBe(200)
    expect(((await (await emulator.control('/payments')).json()) as { payments: unknown[] }).payments).toEqual([])
  })
})

describe('state file', () => {
  const directory = mkdtempSync(join(tmpdir(), 'fpx-emulator-'))
  afterAll(() => rmSync(directory, { recursive: true, force: true }))

  it('saves payments and loads them on the next start', async () => {
    const file = join(directory, 'state.json')
    const first = await launch({ stateFile: file })
    const exchangeNumber = await first.pay()
    await first.complete(exchangeNumber, 'approve')
    await first.stop()
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ version: 1 })
    const second = await launch({ stateFile: file })
    try {
      expect(second.state.payment(exchangeNumber)?.paymentStatus).toBe(true)
      const order = second.state.payment(exchangeNumber)?.orderNumber as string
      expect((await second.get(`/v1/payments/status/${order}`)).status).toBe(200)
      const next = await second.pay()
      expect(second.state.payment(next)?.paymentId).toBeGreaterThan(second.state.payment(exchangeNumber)?.paymentId as number)
    } finally {
      await second.stop()
    }
  })
})
