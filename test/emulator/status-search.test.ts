import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Emulator, launch, paymentForm } from './harness.js'

let emulator: Emulator
let paid: { exchangeNumber: string; orderNumber: string; reference: string; fpxTransactionId: string }

beforeAll(async () => {
  emulator = await launch()
  const form = paymentForm()
  const exchangeNumber = await emulator.pay({ order_number: form.order_number })
  const completed = (await emulator.complete(exchangeNumber, 'approve')) as { payment: Record<string, string> }
  paid = {
    exchangeNumber,
    orderNumber: form.order_number,
    reference: completed.payment.merchant_reference_number as string,
    fpxTransactionId: completed.payment.fpx_transaction_id as string,
  }
})
afterAll(() => emulator.stop())

const STATUS_FIELDS = [
  'source', 'payment_status', 'currency', 'transaction_amount', 'transaction_amount_received', 'order_number',
  'merchant_reference_number', 'exchange_number', 'buyer_name', 'buyer_phone', 'buyer_email', 'payment_id', 'client_ip',
  'status_url', 'retry_url', 'receipt_url', 'created_at', 'created_at_unixtime', 'interface_name', 'interface_uid',
].sort()

describe('payment status', () => {
  it('by order number answers one record with the status fields', async () => {
    const response = await emulator.get(`/v1/payments/status/${paid.orderNumber}`)
    expect(response.status).toBe(200)
    const record = (await response.json()) as Record<string, unknown>
    expect(Object.keys(record).sort()).toEqual(STATUS_FIELDS)
    expect(record).toMatchObject({
      source: 'FPX',
      payment_status: true,
      currency: 'MYR',
      transaction_amount: '100.20',
      transaction_amount_received: '100.20',
      exchange_number: paid.exchangeNumber,
      interface_name: 'Demo API',
      retry_url: null,
    })
    expect(typeof record.payment_id).toBe('number')
    expect(record.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+08:00$/)
    expect(record.created_at_unixtime).toMatch(/^\d+$/)
    expect(record.status_url).toBe(`${emulator.baseUrl}/v1/status/${paid.exchangeNumber}?uid=${record.interface_uid}`)
    expect(record.receipt_url).toBe(`${emulator.baseUrl}/v1/receipt/${paid.exchangeNumber}.pdf?uid=${record.interface_uid}`)
  })

  it('by merchant reference number answers the same record', async () => {
    const response = await emulator.get(`/v1/payments/status/merchant_reference_number/${paid.reference}`)
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ order_number: paid.orderNumber, exchange_number: paid.exchangeNumber })
  })

  it('by order number answers the latest attempt when the buyer retried', async () => {
    const form = paymentForm()
    const first = await emulator.pay({ order_number: form.order_number })
    await emulator.complete(first, 'cancel')
    const second = await emulator.pay({ order_number: form.order_number })
    const record = (await (await emulator.get(`/v1/payments/status/${form.order_number}`)).json()) as Record<string, unknown>
    expect(record.exchange_number).toBe(second)
  })

  it('shows a failed payment with nothing received and a retry address', async () => {
    const exchangeNumber = await emulator.pay()
    await emulator.complete(exchangeNumber, 'reject')
    const order = emulator.state.payment(exchangeNumber)?.orderNumber as string
    const record = (await (await emulator.get(`/v1/payments/status/${order}`)).json()) as Record<string, unknown>
    expect(record).toMatchObject({ payment_status: false, transaction_amount_received: '0.00', receipt_url: null })
    expect(record.retry_url).toMatch(/\/v1\/retry\/[A-Z]{5}\d{10}\?uid=/)
  })

  it('answers 404 for an unknown order or reference', async () => {
    const unknown = await emulator.get('/v1/payments/status/NO-SUCH-ORDER')
    expect(unknown.status).toBe(404)
    expect(await unknown.json()).toMatchObject({ code: 'not_found', error: expect.stringContaining('NO-SUCH-ORDER') })
    expect((await emulator.get('/v1/payments/status/merchant_reference_number/ABCDE0000000000')).status).toBe(404)
  })

  it('answers 401 without Basic auth', async () => {
    const response = await emulator.get(`/v1/payments/status/${paid.orderNumber}`, null)
    expect(response.status).toBe(401)
    expect(await response.json()).toMatchObject({ code: 'unauthorized', error: expect.any(String) })
  })
})

describe('GET /v1/transactions/search', () => {
  it.each([
    ['fpx_ref_number', () => paid.fpxTransactionId],
    ['order_number', () => paid.orderNumber],
    ['exchange_number', () => paid.exchangeNumber],
  ])('finds a payment by %s', async (kind, value) => {
    const response = await emulator.get(`/v1/transactions/search?search_reference=${kind}&reference_number=${value()}`)
    expect(response.status).toBe(200)
    const found = (await response.json()) as Record<string, unknown>[]
    expect(found).toHaveLength(1)
    expect(found[0]).toMatchObject({ exchange_number: paid.exchangeNumber, fpx_model: 'B2C', payment_stage: 'payment_successful' })
    expect(found[0]).toHaveProperty('transaction_fee')
    expect(found[0]).toHaveProperty('fpx_debit_auth_code', '00')
  })

  it('answers an empty array when nothing matches', async () => {
    const response = await emulator.get('/v1/transactions/search?search_reference=order_number&reference_number=NOPE')
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual([])
  })

  it('answers every attempt of a retried order', async () => {
    const form = paymentForm()
    await emulator.pay({ order_number: form.order_number })
    await emulator.pay({ order_number: form.order_number })
    const found = (await (await emulator.get(`/v1/transactions/search?search_reference=order_number&reference_number=${form.order_number}`)).json()) as unknown[]
    expect(found).toHaveLength(2)
  })

  it('answers 422 for an unknown search_reference or a missing reference_number', async () => {
    const response = await emulator.get('/v1/transactions/search?search_reference=buyer_email&reference_number=x')
    expect(response.status).toBe(422)
    expect(await response.json()).toMatchObject({ fields: { search_reference: expect.any(String) } })
    const missing = await emulator.get('/v1/transactions/search?search_reference=order_number')
    expect(await missing.json()).toMatchObject({ fields: { reference_number: 'is required' } })
  })

  it('answers 401 without Basic auth', async () => {
    expect((await emulator.get('/v1/transactions/search?search_reference=order_number&reference_number=x', null)).status).toBe(401)
  })
})

describe('GET /v1/payments/list', () => {
  it('answers 410 Gone, pointing to /v1/transactions/list', async () => {
    const response = await emulator.get('/v1/payments/list')
    expect(response.status).toBe(410)
    const body = (await response.json()) as { error: string; code: string }
    expect(body.code).toBe('endpoint_removed')
    expect(body.error).toContain('/v1/transactions/list')
  })
})
