import { createHmac } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FpxValidationError } from '../../src/client/index.js'
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

describe('amounts: the client refuses exactly what the emulator refuses', () => {
  const AMOUNTS = ['200', '199.5', '0.5', '100.20', '007.10', '999999999.99', '200.001', '0', '0.00', '-1', '1,000', 'RM10', ' 200', '.5', '200.', '1e3', '1000000000']

  /** The emulator's verdict on the text as a shop would send it, signed as sent. */
  async function emulatorTakes(amount: string): Promise<boolean> {
    const { order_number, buyer_name, buyer_email, product_description } = paymentInput()
    const form = new URLSearchParams({ order_number, buyer_name, buyer_email, buyer_phone: '', product_description, transaction_amount: amount, uid: DEMO.uid, token: DEMO.authToken })
    const names = ['buyer_email', 'buyer_name', 'buyer_phone', 'callback_url', 'order_number', 'product_description', 'redirect_url', 'transaction_amount', 'uid']
    form.set('checksum', createHmac('sha256', DEMO.checksumToken).update(names.map((name) => form.get(name) ?? '').join('|')).digest('hex'))
    const response = await emulator.postForm('/v1/payments', Object.fromEntries(form), null)
    await response.text()
    if (response.status !== 200) expect(response.status).toBe(422)
    return response.status === 200
  }

  it.each(AMOUNTS)('%j', async (amount) => {
    const wire = recordingFetch()
    const outcome = await demoClient(emulator, { fetch: wire.fetch })
      .createPayment(paymentInput({ transaction_amount: amount }))
      .then(() => true, (error: unknown) => (error instanceof FpxValidationError && error.status === undefined ? false : Promise.reject(error)))
    expect(outcome).toBe(await emulatorTakes(amount))
    expect(wire.sent).toHaveLength(outcome ? 1 : 0)
  })
})
