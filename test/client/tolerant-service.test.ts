import { createHmac } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FpxValidationError, type PaymentInput } from '../../src/client/index.js'
import { demoClient, DEMO, type Emulator, launch, paymentInput, recordingFetch } from './helpers.js'

/*
 * What the service takes although the spec's strict reading would not (issue 9), end to end: the client sends it
 * and the emulator, outside strict mode, accepts it. Phones go out exactly as given, empty included, because the vendor's plugins send '' or the billing phone as
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

const PHONES = ['', '0123456789', '012-345 6789', '+60 12-345 6789']

describe('buyer_phone accepted by the service', () => {
  it("leaves the emulator's own phone limit to the emulator, whose 422 names the field", async () => {
    const wire = recordingFetch()
    const error = await demoClient(emulator, { fetch: wire.fetch }).createPayment(paymentInput({ buyer_phone: '1'.repeat(51) })).catch((caught: unknown) => caught)
    expect(wire.sent).toHaveLength(1)
    expect(error).toBeInstanceOf(FpxValidationError)
    expect(error).toMatchObject({ status: 422, fields: { buyer_phone: 'must be at most 50 characters' } })
  })

  it.each(PHONES)('creates a payment with %j, recorded as sent', async (phone) => {
    const wire = recordingFetch()
    const created = await demoClient(emulator, { fetch: wire.fetch }).createPayment(paymentInput({ buyer_phone: phone }))
    const form = (wire.sent[0] as { form: URLSearchParams }).form
    expect(form.getAll('buyer_phone')).toEqual([phone])
    expect(form.get('checksum')).toBe(independentChecksum(form))
    expect(await recorded(created.exchangeNumber)).toMatchObject({ buyer_phone: phone })
  })

  it.each(['0123456789', '012-345 6789'])('sends %j unchanged and the session keeps it', async (phone) => {
    const session = await demoClient(emulator).createPaymentSession({ transaction_amount: 20, buyer_phone: phone })
    expect(session.data.buyer_phone).toBe(phone)
  })
})

describe('partner_uid accepted by the service', () => {
  it("creates a session with the merchant's own uid as partner_uid, as the merchant variant", async () => {
    const wire = recordingFetch()
    const session = await demoClient(emulator, { fetch: wire.fetch }).createPaymentSession({ transaction_amount: 5, partner_uid: DEMO.uid })
    expect((wire.sent[0] as { form: URLSearchParams }).form.get('partner_uid')).toBe(DEMO.uid)
    expect(session.data.partner_uid).toBeNull()
  })

  it("sends the merchant's own uid as partner_uid, and the service takes it as the merchant variant", async () => {
    const wire = recordingFetch()
    const created = await demoClient(emulator, { fetch: wire.fetch }).createPayment(paymentInput({ partner_uid: DEMO.uid }))
    const form = (wire.sent[0] as { form: URLSearchParams }).form
    expect([form.get('partner_uid'), form.get('uid')]).toEqual([DEMO.uid, DEMO.uid])
    expect(await recorded(created.exchangeNumber)).toMatchObject({ partner_uid: null })
  })

  it("takes the merchant's own uid as a client partnerUid too", async () => {
    const created = await demoClient(emulator, { partnerUid: DEMO.uid }).createPayment(paymentInput())
    expect(await recorded(created.exchangeNumber)).toMatchObject({ partner_uid: null })
  })
})

describe('what the emulator notes', () => {
  it('notes nothing about an amount the client normalised before sending', async () => {
    const created = await demoClient(emulator).createPayment(paymentInput({ transaction_amount: 200 }))
    expect(await recorded(created.exchangeNumber)).toMatchObject({ transaction_amount: '200.00', warnings: [] })
  })

  it('notes a local phone it took as sent', async () => {
    const created = await demoClient(emulator).createPayment(paymentInput({ buyer_phone: '0123456789' }))
    const record = await recorded(created.exchangeNumber)
    expect(record.warnings).toEqual([expect.stringMatching(/buyer_phone "0123456789" is not in international format/)])
  })
})

/**
 * The emulator's verdict on a payment form as a shop would send it (nested objects as `name[key]`, empty values
 * left out as the client leaves them out), signed as sent.
 */
async function emulatorTakes(input: Readonly<Record<string, unknown>>): Promise<boolean> {
  const { order_number, buyer_name, buyer_email, product_description } = paymentInput()
  const form = new URLSearchParams({ order_number, buyer_name, buyer_email, buyer_phone: '', product_description, transaction_amount: '100.20', uid: DEMO.uid, token: DEMO.authToken })
  for (const [name, value] of Object.entries(input)) {
    if (typeof value === 'object' && value !== null) for (const [key, inner] of Object.entries(value)) form.set(`${name}[${key}]`, String(inner))
    else if (value === '') form.delete(name)
    else form.set(name, String(value))
  }
  form.set('checksum', createHmac('sha256', DEMO.checksumToken).update(SIGNED.map((name) => form.get(name) ?? '').join('|')).digest('hex'))
  const response = await emulator.postForm('/v1/payments', Object.fromEntries(form), null)
  await response.text()
  if (response.status !== 200) expect(response.status).toBe(422)
  return response.status === 200
}

/** What the client did: refused before sending, or sent and had the payment created (or refused by the service). */
async function clientOutcome(input: PaymentInput): Promise<'refused before sending' | 'created' | 'refused by the service'> {
  const wire = recordingFetch()
  const outcome = await demoClient(emulator, { fetch: wire.fetch })
    .createPayment(input)
    .then(
      () => 'created' as const,
      (error: unknown) => {
        if (!(error instanceof FpxValidationError)) throw error
        return error.status === undefined ? ('refused before sending' as const) : ('refused by the service' as const)
      },
    )
  expect(wire.sent).toHaveLength(outcome === 'refused before sending' ? 0 : 1)
  return outcome
}

describe('amounts: the client refuses exactly what the emulator refuses', () => {
  const AMOUNTS = ['200', '199.5', '0.5', '100.20', '007.10', '999999999.99', '200.001', '0', '0.00', '-1', '1,000', 'RM10', ' 200', '.5', '200.', '1e3', '1000000000']

  it.each(AMOUNTS)('%j', async (amount) => {
    const outcome = await clientOutcome(paymentInput({ transaction_amount: amount }))
    expect(outcome).toBe((await emulatorTakes({ transaction_amount: amount })) ? 'created' : 'refused before sending')
  })
})

describe('the other fields: the client refuses exactly what the emulator refuses (one table, core/request/field-rules.ts)', () => {
  const x = (length: number) => 'x'.repeat(length)
  const address = Object.fromEntries(['contact_name', 'contact_phone_number', 'line1', 'line2', 'postcode', 'city', 'state'].map((key) => [key, x(255)]))
  const CASES: [string, Partial<PaymentInput>][] = [
    ['order_number of 50 characters', { order_number: x(50) }],
    ['order_number of 51 characters', { order_number: x(51) }],
    ['order_number on two lines', { order_number: 'ORD\n1' }],
    ['buyer_name of 100 characters', { buyer_name: x(100) }],
    ['buyer_name of 101 characters', { buyer_name: x(101) }],
    ['buyer_name with a tab', { buyer_name: 'Nur\tAisyah' }],
    ['buyer_email of 254 characters', { buyer_email: `${x(242)}@example.com` }],
    ['buyer_email of 255 characters', { buyer_email: `${x(243)}@example.com` }],
    ['buyer_email without a domain', { buyer_email: 'aisyah@' }],
    ['buyer_email empty', { buyer_email: '' }],
    ['product_description of 255 characters', { product_description: x(255) }],
    ['product_description of 256 characters', { product_description: x(256) }],
    ['callback_url over https', { callback_url: 'https://shop.example/fpx/callback?shop=42' }],
    ['callback_url over ftp', { callback_url: 'ftp://shop.example/cb' }],
    ['callback_url relative', { callback_url: '/fpx/callback' }],
    ['callback_url empty (not given)', { callback_url: '' }],
    ['redirect_url of 2048 characters', { redirect_url: `https://shop.example/${x(2048 - 21)}` }],
    ['redirect_url of 2049 characters', { redirect_url: `https://shop.example/${x(2049 - 21)}` }],
    ['cancel_url not a URL', { cancel_url: 'back to the shop' }],
    ['timeout_url over http', { timeout_url: 'http://shop.example/timeout' }],
    ['redirect_post true', { redirect_post: 'true' }],
    ['redirect_post yes', { redirect_post: 'yes' as 'true' }],
    ['model B2B', { model: 'B2B' as 'B2C' }],
    ['fpx_bank_selection grid', { fpx_bank_selection: 'grid' }],
    ['fpx_bank_selection list', { fpx_bank_selection: 'list' as 'grid' }],
    ['buyer_bank_code of 21 characters', { buyer_bank_code: x(21) }],
    ['params, documented keys', { params: { reference1_label: 'Table', reference1: '12', reference18: 'last' } }],
    ['params, other keys', { params: { selected_item: 'Blue mug', reference19: 'x', reference0: 'y' } }],
    ['params value of 255 characters', { params: { reference1: x(255) } }],
    ['params value of 256 characters', { params: { reference1: x(256) } }],
    ['params value on two lines', { params: { reference1: 'Leave at the gate\nafter 6 pm' } }],
    ['params value empty', { params: { reference1: '' } }],
    ['an address with all seven keys', { shipping_address: address }],
    ['an address value of 256 characters', { billing_address: { line1: x(256) } }],
    ['an address value on two lines', { billing_address: { line1: 'Jalan 1\nTaman 2' } }],
    ['an address value empty', { billing_address: { line2: '' } }],
    ['an address key the spec does not list', { shipping_address: { country: 'MY' } as never }],
  ]

  it.each(CASES)('%s', async (_name, overrides) => {
    const outcome = await clientOutcome(paymentInput(overrides))
    expect(outcome).toBe((await emulatorTakes(overrides)) ? 'created' : 'refused before sending')
  })
})
