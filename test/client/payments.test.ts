import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FpxApiError, FpxAuthenticationError, FpxValidationError } from '../../src/client/index.js'
import { requestChecksum } from '../../src/core/request/request-checksum.js'
import { demoClient, DEMO, type Emulator, launch, PARTNER, paymentInput } from './helpers.js'

let emulator: Emulator
beforeAll(async () => {
  emulator = await launch()
})
afterAll(() => emulator.stop())

async function postForm(action: string, fields: Readonly<Record<string, string>>): Promise<Response> {
  return fetch(action, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() })
}

describe('buildPaymentForm', () => {
  it('signs a merchant payment that the service accepts when the browser posts it', async () => {
    const input = paymentInput({ callback_url: 'https://shop.example/fpx/callback', params: { reference1_label: 'Cart', reference1: 'C-1' }, model: 'B2C', fpx_bank_selection: 'grid' })
    const form = demoClient(emulator).buildPaymentForm(input, { exposeAuthToken: true })
    expect(form).toMatchObject({ action: `${emulator.baseUrl}/v1/payments`, method: 'POST' })
    expect(form.fields).toMatchObject({ token: DEMO.authToken, uid: DEMO.uid, 'params[reference1]': 'C-1', fpx_bank_selection: 'grid' })
    const signed = { ...input, uid: DEMO.uid, redirect_url: null } as Parameters<typeof requestChecksum>[0]
    expect(form.fields.checksum).toBe(requestChecksum(signed, DEMO.checksumToken))
    expect(form.fields).not.toHaveProperty('partner_uid')
    const response = await postForm(form.action, form.fields)
    expect(response.status).toBe(200)
    const exchangeNumber = response.headers.get('x-exchange-number') as string
    const record = (await (await emulator.control(`/payments/${exchangeNumber}`)).json()) as Record<string, unknown>
    expect(record).toMatchObject({ order_number: input.order_number, partner_uid: null })
    const completed = await emulator.complete(exchangeNumber, 'approve')
    expect(completed.result).toMatchObject({ params: { reference1_label: 'Cart', reference1: 'C-1' } })
  })

  it('adds partner_uid for the partner variant, and the service records it', async () => {
    const form = demoClient(emulator, { partnerUid: PARTNER.partnerUid }).buildPaymentForm(paymentInput(), { exposeAuthToken: true })
    expect(form.fields).toMatchObject({ partner_uid: PARTNER.partnerUid, uid: DEMO.uid })
    const response = await postForm(form.action, form.fields)
    expect(response.status).toBe(200)
    const record = (await (await emulator.control(`/payments/${response.headers.get('x-exchange-number')}`)).json()) as Record<string, unknown>
    expect(record.partner_uid).toBe(PARTNER.partnerUid)
  })

  it("refuses to build the form unless the caller says the buyer's page may hold the Auth Token", () => {
    const client = demoClient(emulator)
    // @ts-expect-error the type requires the option, so TypeScript callers learn it before running
    expect(() => client.buildPaymentForm(paymentInput())).toThrow(TypeError)
    // The run-time check is for JavaScript callers and casts.
    for (const options of [undefined, null, {}, { attach: {} }, { exposeAuthToken: false }, { exposeAuthToken: 'true' }]) {
      const build = () => client.buildPaymentForm(paymentInput(), options as never)
      expect(build, JSON.stringify(options)).toThrow(TypeError)
      expect(build).toThrow(/Auth Token in the buyer's page.*transaction list.*createPayment.*nextUrl.*\{ exposeAuthToken: true \}/)
    }
    expect(client.buildPaymentForm(paymentInput(), { exposeAuthToken: true }).fields.token).toBe(DEMO.authToken)
  })
})

describe('createPayment', () => {
  it('posts server-side and returns the bank-selection address read from the page', async () => {
    const created = await demoClient(emulator).createPayment(paymentInput())
    expect(created.exchangeNumber).toMatch(/\S/)
    expect(created.nextUrl).toBe(`${emulator.baseUrl}/pay/${created.exchangeNumber}`)
    expect((await fetch(created.nextUrl)).status).toBe(200)
  })

  it('throws FpxAuthenticationError (checksum_mismatch) when signed with another Checksum Token', async () => {
    const error = await demoClient(emulator, { checksumToken: 'ab'.repeat(32) }).createPayment(paymentInput()).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(FpxAuthenticationError)
    expect(error).toMatchObject({ status: 401, code: 'checksum_mismatch' })
    expect((error as Error).message).not.toContain('ab'.repeat(32))
  })

  it('turns the service 422 into FpxValidationError naming the field', async () => {
    await emulator.control('/banks/b2c/ABB0233', { status: 'offline' })
    const error = await demoClient(emulator).createPayment(paymentInput({ buyer_bank_code: 'ABB0233' })).catch((caught: unknown) => caught)
    await emulator.control('/banks/b2c/ABB0233', { status: 'online' })
    expect(error).toBeInstanceOf(FpxValidationError)
    expect(error).toMatchObject({ status: 422, fields: { buyer_bank_code: 'the bank is offline' } })
  })
})

describe('createPaymentSession', () => {
  it('creates a USD session converted to MYR', async () => {
    const session = await demoClient(emulator).createPaymentSession({ transaction_amount: '10.00', currency: 'USD', order_number: 'SESSION-1' })
    expect(session.payment_url).toBe(`${emulator.baseUrl}/apis/${session.data.slug}/payment_session`)
    expect(session.data).toMatchObject({ currency: 'USD', currency_amount: '10.00', transaction_amount: '42.00', order_number: 'SESSION-1', buyer_name: null })
    expect((await fetch(session.payment_url)).status).toBe(200)
  })

  it('sends the client partnerUid, which the service checks', async () => {
    const session = await demoClient(emulator, { partnerUid: PARTNER.partnerUid }).createPaymentSession({ transaction_amount: '5.50' })
    expect(session.data).toMatchObject({ partner_uid: PARTNER.partnerUid, currency: 'MYR', transaction_amount: '5.50' })
    const refused = await demoClient(emulator, { partnerUid: 'someone-else' }).createPaymentSession({ transaction_amount: '5.50' }).catch((caught: unknown) => caught)
    expect(refused).toMatchObject({ status: 403, code: 'partner_not_authorized' })
  })
})

describe('status and search', () => {
  it('reads a completed payment by order number, by reference, and through search', async () => {
    const client = demoClient(emulator)
    const input = paymentInput()
    const created = await client.createPayment(input)
    const result = (await emulator.complete(created.exchangeNumber as string, 'approve')).result as Record<string, string>

    const byOrder = await client.paymentStatus(input.order_number)
    expect(byOrder).toMatchObject({ exchange_number: created.exchangeNumber, payment_status: true, transaction_amount: '100.20' })
    const byReference = await client.paymentStatusByReference(byOrder.merchant_reference_number as string)
    expect(byReference.exchange_number).toBe(created.exchangeNumber)

    const [byExchange] = await client.searchTransactions('exchange_number', created.exchangeNumber as string)
    expect(byExchange).toMatchObject({ order_number: input.order_number, fpx_debit_auth_code: '00', payment_stage: 'payment_successful' })
    const byBankRef = await client.searchTransactions('fpx_ref_number', result.fpx_transaction_id as string)
    expect(byBankRef.map((record) => record.exchange_number)).toEqual([created.exchangeNumber])
    expect(await client.searchTransactions('order_number', 'NO-SUCH-ORDER')).toEqual([])
  })

  it('answers FpxApiError 404 for an unknown order', async () => {
    const error = await demoClient(emulator).paymentStatus('NO-SUCH-ORDER').catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(FpxApiError)
    expect(error).toMatchObject({ status: 404, code: 'not_found' })
  })
})

describe('createPayment against other answer shapes', () => {
  it.each([
    ['a redirect', 303, { location: '/api/pay/REDIRECTED' }, '', '/api/pay/REDIRECTED'],
    ['a meta refresh', 200, {}, '<meta http-equiv="refresh" content="0; url=/api/pay/META&amp;x=1">', '/api/pay/META&x=1'],
    ['a bare link', 200, {}, '<p><a href=\'https://bank.example/pay?a=1&amp;b=2\'>Pay</a></p>', 'https://bank.example/pay?a=1&b=2'],
    // Past U+10FFFF: no character, kept as written (String.fromCodePoint would throw a RangeError).
    ['a link with a reference to no character', 200, {}, '<a href="/api/pay/X?n=&#99999999;">Pay</a>', '/api/pay/X?n=&#99999999;'],
  ])('reads the next address from %s', async (_name, status, headers, html, expected) => {
    const server = createServer((_req, res) => {
      res.writeHead(status, { 'content-type': 'text/html', ...headers })
      res.end(html)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    try {
      const created = await demoClient(emulator, { environment: { baseUrl: `${origin}/api` } }).createPayment(paymentInput())
      expect(created.nextUrl).toBe(new URL(expected, origin).toString())
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })

  it('throws FpxApiError for a page with nowhere to go', async () => {
    const server = createServer((_req, res) => res.end('<p>Thank you</p>'))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`
      await expect(demoClient(emulator, { environment: { baseUrl } }).createPayment(paymentInput())).rejects.toThrow(/no next address/)
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })
})
