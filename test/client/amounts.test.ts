import { createHmac } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { demoClient, DEMO, type Emulator, launch, paymentInput, recordingFetch } from './helpers.js'

/*
 * Amounts as shops give them (`200`, `'199.5'`, numbers) are sent with two decimals, and the checksum signs
 * exactly what is sent. Every check goes through the public client against the emulator over HTTP.
 */

let emulator: Emulator
beforeAll(async () => {
  emulator = await launch()
})
afterAll(() => emulator.stop())

/** The spec's request checksum written out here, independently of core/checksum.ts. */
function independentChecksum(form: URLSearchParams): string {
  const names = ['buyer_email', 'buyer_name', 'buyer_phone', 'callback_url', 'order_number', 'product_description', 'redirect_url', 'transaction_amount', 'uid']
  return createHmac('sha256', DEMO.checksumToken)
    .update(names.map((name) => form.get(name) ?? '').join('|'))
    .digest('hex')
}

async function recorded(exchangeNumber: string): Promise<Record<string, unknown>> {
  const response = await emulator.control(`/payments/${exchangeNumber}`)
  expect(response.status).toBe(200)
  return (await response.json()) as Record<string, unknown>
}

describe('createPayment amounts', () => {
  it.each<[string | number, string]>([
    [200, '200.00'],
    ['199.5', '199.50'],
    [199.5, '199.50'],
    ['10', '10.00'],
    [0.5, '0.50'],
    ['100.20', '100.20'],
  ])('sends %j as %s, signed as sent, and the emulator records it', async (given, sent) => {
    const wire = recordingFetch()
    const created = await demoClient(emulator, { fetch: wire.fetch }).createPayment(paymentInput({ transaction_amount: given }))
    expect(wire.sent).toHaveLength(1)
    const form = (wire.sent[0] as { form: URLSearchParams }).form
    expect(form.getAll('transaction_amount')).toEqual([sent])
    // The emulator accepted the checksum, and an independent signer over the sent fields gives the same one.
    expect(form.get('checksum')).toBe(independentChecksum(form))
    expect(await recorded(created.exchangeNumber as string)).toMatchObject({ transaction_amount: sent })
  })

  it('reads the normalised amount back through status once paid', async () => {
    const client = demoClient(emulator)
    const input = paymentInput({ transaction_amount: 200 })
    const created = await client.createPayment(input)
    const completed = await emulator.complete(created.exchangeNumber as string, 'approve')
    expect(completed.result).toMatchObject({ transaction_amount: '200.00', transaction_amount_received: '200.00' })
    expect(await client.paymentStatus(input.order_number)).toMatchObject({ transaction_amount: '200.00', payment_status: true })
  })

  it('refuses, before any request, what the emulator refuses too', async () => {
    const wire = recordingFetch()
    const client = demoClient(emulator, { fetch: wire.fetch })
    for (const amount of ['200.001', '0', '-1', '1,000.00', 'RM10']) {
      await expect(Promise.resolve().then(() => client.createPayment(paymentInput({ transaction_amount: amount })))).rejects.toMatchObject({
        name: 'FpxValidationError',
        fields: { transaction_amount: expect.any(String) },
      })
      // The same text sent straight to the emulator (signed as sent) is refused there, on the same field.
      const direct = await emulator.postForm('/v1/payments', directForm(amount), null)
      expect(direct.status).toBe(422)
      expect(((await direct.json()) as { fields: Record<string, string> }).fields).toHaveProperty('transaction_amount')
    }
    expect(wire.sent).toEqual([])
  })
})

function directForm(amount: string): Record<string, string> {
  const { order_number, buyer_name, buyer_email, product_description } = paymentInput()
  const fields = new URLSearchParams({ order_number, buyer_name, buyer_email, buyer_phone: '+60123456789', product_description })
  for (const [name, value] of Object.entries({ transaction_amount: amount, callback_url: 'https://shop.example/cb', uid: DEMO.uid, token: DEMO.authToken })) fields.set(name, value)
  fields.set('checksum', independentChecksum(fields))
  return Object.fromEntries(fields)
}

describe('buildPaymentForm amounts', () => {
  it('puts 200 in the form as 200.00, and the browser post is accepted', async () => {
    const form = demoClient(emulator).buildPaymentForm(paymentInput({ transaction_amount: 200 }), { exposeAuthToken: true })
    expect(form.fields.transaction_amount).toBe('200.00')
    expect(form.fields.checksum).toBe(independentChecksum(new URLSearchParams(form.fields)))
    const response = await fetch(form.action, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form.fields).toString(),
    })
    expect(response.status).toBe(200)
    expect(await recorded(response.headers.get('x-exchange-number') as string)).toMatchObject({ transaction_amount: '200.00' })
  })
})

describe('createPaymentSession amounts', () => {
  it.each<[string | number, string]>([
    [200, '200.00'],
    ['199.5', '199.50'],
  ])('sends %j as %s and the session holds it', async (given, sent) => {
    const wire = recordingFetch()
    const session = await demoClient(emulator, { fetch: wire.fetch }).createPaymentSession({ transaction_amount: given })
    expect((wire.sent[0] as { form: URLSearchParams }).form.get('transaction_amount')).toBe(sent)
    expect(session.data).toMatchObject({ transaction_amount: sent, currency_amount: sent, currency: 'MYR' })
  })

  it('converts a USD amount given as 10.5 from 10.50', async () => {
    const session = await demoClient(emulator).createPaymentSession({ transaction_amount: 10.5, currency: 'USD' })
    // The emulator's default rate is 4.2 MYR per USD: 10.50 × 4.2 = 44.10.
    expect(session.data).toMatchObject({ currency: 'USD', currency_amount: '10.50', transaction_amount: '44.10' })
  })
})
