import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { convertToMyr } from '../../src/emulator/api-session.js'
import { REFERENCE_PATTERN } from '../../src/emulator/index.js'
import { DEMO, type Emulator, launch, PARTNER } from './harness.js'

let emulator: Emulator

beforeAll(async () => {
  emulator = await launch({ config: { usdToMyrRate: 4.4725 } })
})
afterAll(() => emulator.stop())

type Session = { payment_url: string; data: Record<string, unknown> }

async function createSession(fields: Record<string, string>): Promise<Session> {
  const response = await emulator.postForm('/apis/payments', fields)
  expect(response.status, await response.clone().text()).toBe(200)
  return (await response.json()) as Session
}

const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?[+-]\d{2}:\d{2}$/

describe('POST /apis/payments (payment session, beta)', () => {
  it('answers payment_url and data exactly as the spec table, nulls for what was not sent', async () => {
    const session = await createSession({ transaction_amount: '25.50', order_number: 'SESS-1' })
    expect(session.payment_url).toBe(`${emulator.baseUrl}/apis/${String(session.data.slug)}/payment_session`)
    expect(Object.keys(session.data).sort()).toEqual(
      [
        'buyer_name', 'buyer_email', 'buyer_phone', 'transaction_amount', 'order_number', 'product_description', 'slug',
        'callback_url', 'redirect_url', 'cancel_url', 'timeout_url', 'currency', 'currency_amount', 'partner_uid',
        'other_params', 'created_at', 'updated_at',
      ].sort(),
    )
    expect(session.data).toMatchObject({
      buyer_name: null, buyer_email: null, buyer_phone: null, callback_url: null, redirect_url: null, cancel_url: null,
      timeout_url: null, partner_uid: null, other_params: null, currency: 'MYR', currency_amount: '25.50',
      transaction_amount: '25.50', order_number: 'SESS-1',
    })
    // The service's own example answers "Payment for order no. 231212" and slug GSHJD1664332374.
    expect(session.data.product_description).toBe('Payment for order no. SESS-1')
    expect(session.data.slug).toMatch(REFERENCE_PATTERN)
    const seconds = Number(String(session.data.slug).slice(5))
    expect(Math.abs(seconds - Date.now() / 1000)).toBeLessThan(60)
    expect(session.data.created_at).toMatch(ISO_WITH_OFFSET)
    expect(session.data.updated_at).toMatch(ISO_WITH_OFFSET)
  })

  it('keeps what was supplied, including partner_uid of a partner linked to the merchant', async () => {
    const session = await createSession({
      transaction_amount: '10.00', order_number: 'SESS-2', buyer_name: 'Tan Mei Ling', buyer_email: 'mei@example.com',
      buyer_phone: '+60123456780', product_description: 'A teapot', callback_url: 'http://127.0.0.1:9/cb',
      redirect_url: 'http://127.0.0.1:9/back', cancel_url: 'http://127.0.0.1:9/cancel', timeout_url: 'http://127.0.0.1:9/late',
      partner_uid: PARTNER.partnerUid,
    })
    expect(session.data).toMatchObject({
      buyer_name: 'Tan Mei Ling', buyer_email: 'mei@example.com', buyer_phone: '+60123456780', product_description: 'A teapot',
      callback_url: 'http://127.0.0.1:9/cb', cancel_url: 'http://127.0.0.1:9/cancel', partner_uid: PARTNER.partnerUid,
    })
  })

  it('reads a USD amount and converts it to MYR at the configured rate', async () => {
    const session = await createSession({ transaction_amount: '10.00', currency: 'USD', order_number: 'SESS-USD' })
    expect(session.data).toMatchObject({ currency: 'USD', currency_amount: '10.00', transaction_amount: '44.73' })
  })

  it('converts exactly in sen, rounding half up, even for large amounts', () => {
    expect(convertToMyr('0.10', 3)).toBe('0.30')
    expect(convertToMyr('1.00', 4.125)).toBe('4.13')
    expect(convertToMyr('999999999.99', 4.4725)).toBe('4472499999.96')
  })

  it('refuses other currencies, a missing or malformed amount, and bad optional fields with 422 per field', async () => {
    const response = await emulator.postForm('/apis/payments', { currency: 'EUR', buyer_email: 'nope', callback_url: 'ftp://x' })
    expect(response.status).toBe(422)
    const body = (await response.json()) as { code: string; fields: Record<string, string> }
    expect(body.code).toBe('invalid_parameters')
    expect(Object.keys(body.fields).sort()).toEqual(['buyer_email', 'callback_url', 'currency', 'transaction_amount'])
  })

  it('needs Basic auth with a merchant credential set', async () => {
    expect((await emulator.postForm('/apis/payments', { transaction_amount: '1.00' }, null)).status).toBe(401)
    expect((await emulator.postForm('/apis/payments', { transaction_amount: '1.00' }, { uid: DEMO.uid, authToken: 'x'.repeat(20) })).status).toBe(401)
    const partner = await emulator.postForm('/apis/payments', { transaction_amount: '1.00' }, PARTNER)
    expect(partner.status).toBe(403)
    const unknownPartner = await emulator.postForm('/apis/payments', { transaction_amount: '1.00', partner_uid: 'someone-else' })
    expect(((await unknownPartner.json()) as { code: string }).code).toBe('partner_not_authorized')
  })
})

describe('the hosted payment session form', () => {
  it('asks only for the missing buyer fields, then creates the payment and continues to bank selection', async () => {
    const session = await createSession({ transaction_amount: '12.34', order_number: 'SESS-FORM', buyer_name: 'Ali bin Abu' })
    const page = await fetch(session.payment_url)
    expect(page.status).toBe(200)
    const html = await page.text()
    expect(html).toContain('SESS-FORM')
    expect(html).toContain('name="buyer_email"')
    expect(html).toContain('name="buyer_phone"')
    expect(html).not.toContain('name="buyer_name"')

    const submit = (fields: Record<string, string>) =>
      fetch(session.payment_url, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(fields).toString(),
      })
    const invalid = await submit({ buyer_email: 'not an address', buyer_phone: '+60198765432' })
    expect(invalid.status).toBe(422)
    expect(await invalid.text()).toContain('buyer_email-error')
    expect((await emulator.control('/payments').then((r) => r.json()) as { payments: unknown[] }).payments).toHaveLength(0)

    const accepted = await submit({ buyer_email: 'ali@example.com', buyer_phone: '+60198765432' })
    expect(accepted.status).toBe(303)
    const exchangeNumber = accepted.headers.get('x-exchange-number') as string
    expect(accepted.headers.get('location')).toBe(`${emulator.baseUrl}/pay/${exchangeNumber}`)
    const bankPage = await fetch(accepted.headers.get('location')!)
    expect(bankPage.status).toBe(200)
    expect(await bankPage.text()).toContain(exchangeNumber)
    const payment = (await (await emulator.control(`/payments/${exchangeNumber}`)).json()) as Record<string, unknown>
    expect(payment).toMatchObject({
      order_number: 'SESS-FORM', buyer_name: 'Ali bin Abu', buyer_email: 'ali@example.com', buyer_phone: '+60198765432',
      transaction_amount: '12.34', interface_uid: DEMO.uid,
    })

    await emulator.complete(exchangeNumber, 'approve')
    expect(await (await fetch(session.payment_url)).text()).toContain('already paid')
    expect((await submit({ buyer_email: 'ali@example.com', buyer_phone: '+60198765432' })).status).toBe(409)
  })

  it('answers 404 for an unknown slug', async () => {
    const response = await fetch(`${emulator.baseUrl}/apis/no-such-slug/payment_session`)
    expect(response.status).toBe(404)
    expect(((await response.json()) as { code: string }).code).toBe('not_found')
  })
})
