import { createHmac } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { demoClient, DEMO, type Emulator, launch, PARTNER, paymentInput, recordingFetch } from './helpers.js'

/*
 * Phones go out exactly as given, empty included, because the vendor's plugins send '' or the billing phone as
 * typed and the service takes them; partner_uid is never second-guessed by the client. Through the public client,
 * against the emulator over HTTP.
 */

let emulator: Emulator
beforeAll(async () => {
  emulator = await launch()
})
afterAll(() => emulator.stop())

const SIGNED = ['buyer_email', 'buyer_name', 'buyer_phone', 'callback_url', 'order_number', 'product_description', 'redirect_url', 'transaction_amount', 'uid']

/** The spec's request checksum written out here, independently of core/checksum.ts. */
function independentChecksum(form: URLSearchParams | Readonly<Record<string, string>>): string {
  const get = (name: string) => (form instanceof URLSearchParams ? form.get(name) : form[name]) ?? ''
  return createHmac('sha256', DEMO.checksumToken).update(SIGNED.map(get).join('|')).digest('hex')
}

async function recorded(exchangeNumber: string | null): Promise<Record<string, unknown>> {
  const response = await emulator.control(`/payments/${exchangeNumber ?? ''}`)
  expect(response.status).toBe(200)
  return (await response.json()) as Record<string, unknown>
}

const PHONES = ['', '0123456789', '012-345 6789', '+60 12-345 6789', '+60123456789']

describe('buyer_phone on payments', () => {
  it.each(PHONES)('signs and sends %j unchanged', (phone) => {
    const form = demoClient(emulator).buildPaymentForm(paymentInput({ buyer_phone: phone }), { exposeAuthToken: true })
    expect(form.fields.buyer_phone).toBe(phone)
    expect(form.fields.checksum).toBe(independentChecksum(form.fields))
  })

  it('sends an empty buyer_phone when none is given', () => {
    const { buyer_phone: _left, ...input } = paymentInput()
    const form = demoClient(emulator).buildPaymentForm(input, { exposeAuthToken: true })
    expect(form.fields).toHaveProperty('buyer_phone', '')
    expect(form.fields.checksum).toBe(independentChecksum(form.fields))
  })

})

describe('buyer_phone on payment sessions', () => {
  it('sends an empty buyer_phone as given; the session holds none', async () => {
    const wire = recordingFetch()
    const session = await demoClient(emulator, { fetch: wire.fetch }).createPaymentSession({ transaction_amount: 20, buyer_phone: '' })
    expect((wire.sent[0] as { form: URLSearchParams }).form.getAll('buyer_phone')).toEqual([''])
    expect(session.data.buyer_phone).toBeNull()
  })
})

describe('partner_uid', () => {
  it("sends the merchant's own uid as partner_uid without refusing it", () => {
    const form = demoClient(emulator).buildPaymentForm(paymentInput({ partner_uid: DEMO.uid }), { exposeAuthToken: true })
    expect([form.fields.partner_uid, form.fields.uid]).toEqual([DEMO.uid, DEMO.uid])
    expect(form.fields.checksum).toBe(independentChecksum(form.fields))
  })

  it("reads an empty input partner_uid as not given: the client's partnerUid applies", () => {
    const form = demoClient(emulator, { partnerUid: PARTNER.partnerUid }).buildPaymentForm(paymentInput({ partner_uid: '' }), { exposeAuthToken: true })
    expect(form.fields.partner_uid).toBe(PARTNER.partnerUid)
    expect(demoClient(emulator).buildPaymentForm(paymentInput({ partner_uid: '' }), { exposeAuthToken: true }).fields).not.toHaveProperty('partner_uid')
  })

  it('leaves a foreign partner_uid to the service, whose 403 comes back typed', async () => {
    const error = await demoClient(emulator).createPayment(paymentInput({ partner_uid: 'someone-else' })).catch((caught: unknown) => caught)
    expect(error).toMatchObject({ name: 'FpxApiError', status: 403, code: 'partner_not_authorized' })
  })
})

describe('empty optional fields', () => {
  it('leaves them out of the request; the signed URL segments are empty either way', async () => {
    const wire = recordingFetch()
    const input = paymentInput({ callback_url: '', redirect_url: '', cancel_url: '', buyer_bank_code: '', shipping_address: { line1: 'Jalan 1', line2: '' } })
    const created = await demoClient(emulator, { fetch: wire.fetch }).createPayment(input)
    const form = (wire.sent[0] as { form: URLSearchParams }).form
    expect(['callback_url', 'redirect_url', 'cancel_url', 'buyer_bank_code'].filter((name) => form.has(name))).toEqual([])
    expect(form.get('shipping_address[line2]')).toBe('')
    expect(await recorded(created.exchangeNumber)).toMatchObject({ callback_url: null, redirect_url: null, cancel_url: null, buyer_bank_code: null })
  })
})
