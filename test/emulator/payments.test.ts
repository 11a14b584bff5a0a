import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { REFERENCE_PATTERN, startEmulator } from '../../src/emulator/index.js'
import { DEMO, type Emulator, launch, PARTNER, paymentForm } from './harness.js'

let emulator: Emulator

beforeAll(async () => {
  emulator = await launch()
})
afterAll(() => emulator.stop())

async function create(fields: Record<string, string>): Promise<Response> {
  return emulator.postForm('/v1/payments', fields, null)
}

async function problems(response: Response): Promise<Record<string, string>> {
  expect(response.status).toBe(422)
  const body = (await response.json()) as { code: string; fields: Record<string, string> }
  expect(body.code).toBe('invalid_parameters')
  return body.fields
}

describe('POST /v1/payments, merchant variant', () => {
  it('creates a payment and answers a page leading to bank selection', async () => {
    const form = paymentForm()
    const response = await create(form)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^text\/html/)
    const exchangeNumber = response.headers.get('x-exchange-number') as string
    expect(exchangeNumber).toMatch(REFERENCE_PATTERN)
    const html = await response.text()
    expect(html).toContain(`${emulator.baseUrl}/pay/${exchangeNumber}`)
    expect(html).not.toContain('.submit()')
    const record = emulator.state.payment(exchangeNumber)
    expect(record).toMatchObject({ orderNumber: form.order_number, paymentStatus: false, paymentStage: 'payment_pending', model: 'B2C' })
    // One reference, answered as both (the service's documented callbacks carry the same value twice).
    expect(record?.merchantReferenceNumber).toBe(exchangeNumber)
    expect(Number(exchangeNumber.slice(5))).toBe(Math.floor(new Date(record!.createdAt).getTime() / 1000))
    expect(record?.clientIp).toBe('127.0.0.1')
  })

  it('auto-submits the page when redirect_post is true', async () => {
    const html = await (await create(paymentForm({ redirect_post: 'true' }))).text()
    expect(html).toMatch(/<form id="continue"[^>]*action="[^"]*\/pay\/[A-Z]{5}\d{10}"/)
    expect(html).toContain(`document.getElementById('continue').submit()`)
  })

  it('identifies the merchant by token alone: uid may stay out of the body', async () => {
    const { uid: _uid, ...withoutUid } = paymentForm()
    expect((await create(withoutUid)).status).toBe(200)
  })

  it('signs optional URLs left out as empty segments', async () => {
    // Empty text signs exactly like an absent field; the request then leaves both out.
    const { callback_url: _callback, redirect_url: _redirect, ...form } = paymentForm({ callback_url: '', redirect_url: '' })
    expect((await create(form)).status).toBe(200)
    const record = emulator.state.payment(emulator.state.payments.at(-1)?.exchangeNumber ?? '')
    expect(record).toMatchObject({ orderNumber: form.order_number, callbackUrl: null, redirectUrl: null })
  })

  it('keeps params and addresses', async () => {
    const form = { ...paymentForm(), 'params[reference1_label]': 'Table', 'params[reference1]': '12', 'shipping_address[city]': 'Ipoh' }
    const response = await create(form)
    expect(response.status).toBe(200)
    const record = emulator.state.payment(response.headers.get('x-exchange-number') as string)
    expect(record?.params).toEqual({ reference1_label: 'Table', reference1: '12' })
    expect(record?.shippingAddress).toEqual({ city: 'Ipoh' })
  })

  it('answers 401 checksum_mismatch when a signed field was changed', async () => {
    const form = { ...paymentForm(), transaction_amount: '1.00' }
    const response = await create(form)
    expect(response.status).toBe(401)
    expect(await response.json()).toMatchObject({ code: 'checksum_mismatch' })
  })

  it('answers 401 checksum_mismatch when signed with another Checksum Token', async () => {
    const response = await create(paymentForm({}, 'ab'.repeat(32)))
    expect(response.status).toBe(401)
    expect(await response.json()).toMatchObject({ code: 'checksum_mismatch' })
  })

  it('answers 401 invalid_token for an unknown or missing token', async () => {
    for (const token of ['NoSuchToken000000000', '']) {
      const response = await create({ ...paymentForm(), token })
      expect(response.status).toBe(401)
      expect(await response.json()).toMatchObject({ code: 'invalid_token' })
    }
  })

  it('answers 401 when uid belongs to another credential set than token', async () => {
    const response = await create(paymentForm({ uid: PARTNER.uid }))
    expect(response.status).toBe(401)
  })

  it('lists every invalid field with 422', async () => {
    const fields = await problems(
      await create({ ...paymentForm(), buyer_email: 'nobody', buyer_phone: 'line\nbreak', transaction_amount: '100.205', model: 'B2B2', callback_url: 'ftp://x' }),
    )
    expect(Object.keys(fields).sort()).toEqual(['buyer_email', 'buyer_phone', 'callback_url', 'model', 'transaction_amount'])
  })

  it('requires the documented fields', async () => {
    const { order_number: _order, buyer_name: _name, ...form } = paymentForm()
    expect(Object.keys(await problems(await create(form))).sort()).toEqual(['buyer_name', 'order_number'])
  })

  it('allows only the address keys (other params keys are kept with a warning: tolerance.test.ts)', async () => {
    const fields = await problems(await create({ ...paymentForm(), 'params[reference19]': 'x', 'billing_address[country]': 'MY' }))
    expect(Object.keys(fields).sort()).toEqual(['billing_address[country]'])
  })

  it('refuses a field sent twice', async () => {
    const body = `${new URLSearchParams(paymentForm()).toString()}&order_number=again`
    const response = await fetch(`${emulator.baseUrl}/v1/payments`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body,
    })
    expect(await problems(response)).toHaveProperty('order_number')
  })

  it('checks buyer_bank_code against the list of the model', async () => {
    expect((await create(paymentForm({ buyer_bank_code: 'MB2U0227' }))).status).toBe(200)
    expect(await problems(await create(paymentForm({ buyer_bank_code: 'NOPE0001' })))).toHaveProperty('buyer_bank_code')
    expect((await problems(await create(paymentForm({ buyer_bank_code: 'UOB0226' })))).buyer_bank_code).toMatch(/offline/)
  })

  it('refuses B2B1 for a merchant without the module', async () => {
    const other = await startEmulator({ config: { merchants: [{ name: 'Kedai B2C', credentials: [DEMO] }], partners: [] } })
    try {
      const response = await fetch(`${other.baseUrl}/v1/payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(paymentForm({ model: 'B2B1' })).toString(),
      })
      expect(await problems(response)).toHaveProperty('model')
    } finally {
      await other.stop()
    }
  })

  it('answers 415 to a JSON body', async () => {
    const response = await fetch(`${emulator.baseUrl}/v1/payments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(paymentForm()),
    })
    expect(response.status).toBe(415)
  })
})

describe('POST /v1/payments, partner variant', () => {
  it('creates a payment with uid and partner_uid, partner_uid outside the checksum', async () => {
    const response = await create({ ...paymentForm(), partner_uid: PARTNER.partnerUid })
    expect(response.status).toBe(200)
    const record = emulator.state.payment(response.headers.get('x-exchange-number') as string)
    expect(record?.partnerUid).toBe(PARTNER.partnerUid)
  })

  it('takes partner_uid without uid (the merchant is known by token), strict mode aside (test/emulator/tolerance.test.ts)', async () => {
    const { uid: _uid, ...form } = paymentForm()
    const response = await create({ ...form, partner_uid: PARTNER.partnerUid })
    expect(response.status).toBe(200)
    expect(emulator.state.payment(response.headers.get('x-exchange-number') as string)?.partnerUid).toBe(PARTNER.partnerUid)
  })

  it('answers 403 to an unknown partner_uid', async () => {
    const response = await create({ ...paymentForm(), partner_uid: 'not-a-partner' })
    expect(response.status).toBe(403)
    expect(await response.json()).toMatchObject({ code: 'partner_not_authorized' })
  })

  it('lets the partner read the payments made with its partner_uid, and only those', async () => {
    const form = paymentForm()
    await create({ ...form, partner_uid: PARTNER.partnerUid })
    const own = await emulator.get(`/v1/payments/status/${form.order_number}`, PARTNER)
    expect(own.status).toBe(200)
    const direct = paymentForm()
    await create(direct)
    expect((await emulator.get(`/v1/payments/status/${direct.order_number}`, PARTNER)).status).toBe(404)
  })
})
