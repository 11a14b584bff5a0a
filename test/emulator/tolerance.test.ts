import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { REFERENCE_PATTERN } from '../../src/emulator/index.js'
import type { FieldInput } from '../../src/core/values.js'
import { createReceiver } from '../../src/index.js'
import { encodeForm } from '../../src/testing.js'
import { DEMO, type Emulator, launch, PARTNER, paymentForm } from './harness.js'

/**
 * What the real service is seen to take beyond the spec's strict reading (docs/emulator.md): accepted with a
 * warning by default, refused in strict mode. Over real HTTP, against two emulators side by side.
 */
let lenient: Emulator
let strict: Emulator
const logged: string[] = []
const strictLogged: string[] = []

beforeAll(async () => {
  lenient = await launch({ log: (line) => logged.push(line) })
  strict = await launch({ strict: true, log: (line) => strictLogged.push(line) })
})
afterAll(async () => {
  await lenient.stop()
  await strict.stop()
})

function create(emulator: Emulator, fields: Record<string, string>): Promise<Response> {
  return emulator.postForm('/v1/payments', fields, null)
}

async function created(emulator: Emulator, fields: Record<string, string>): Promise<string> {
  const response = await create(emulator, fields)
  expect(response.status, await response.clone().text()).toBe(200)
  return response.headers.get('x-exchange-number') as string
}

async function refusal(response: Response): Promise<{ status: number; code: string; fields?: Record<string, string> }> {
  return { status: response.status, ...((await response.json()) as { code: string; fields?: Record<string, string> }) }
}

async function describePayment(emulator: Emulator, exchangeNumber: string): Promise<Record<string, unknown>> {
  return (await (await emulator.control(`/payments/${exchangeNumber}`)).json()) as Record<string, unknown>
}

/**
 * Creates a payment the lenient emulator keeps with `message` as its one warning (logged too), approves it, and
 * checks that the receiver verifies the callback carrying it. Returns the result's params.
 */
async function keptWithWarning(fields: Record<string, string>, message: string): Promise<unknown> {
  const exchangeNumber = await created(lenient, fields)
  expect((await describePayment(lenient, exchangeNumber)).warnings).toEqual([message])
  expect(logged.some((line) => line.includes(message) && line.includes(exchangeNumber))).toBe(true)
  const { result } = (await lenient.complete(exchangeNumber, 'approve')) as { result: Record<string, unknown> }
  const receiver = createReceiver({ signatureOnly: true, checksumToken: DEMO.checksumToken })
  // A state no handler listens to is answered 503 no_handler: this one checks verification.
  receiver.onAny(() => {})
  const answer = await receiver.handle({ kind: 'callback', body: encodeForm(result as Record<string, FieldInput>), contentType: 'application/x-www-form-urlencoded' })
  expect(answer.status).toBe(200)
  return result.params
}

describe('transaction_amount without two fraction digits', () => {
  it.each([
    ['200', '200.00'],
    ['10', '10.00'],
    ['199.5', '199.50'],
  ])('takes %s on /v1/payments (signed as sent), records %s and warns', async (sent, recorded) => {
    const exchangeNumber = await created(lenient, paymentForm({ transaction_amount: sent }))
    const payment = await describePayment(lenient, exchangeNumber)
    expect(payment.transaction_amount).toBe(recorded)
    const message = `transaction_amount "${sent}" was normalised to "${recorded}"`
    expect(payment.warnings).toEqual([message])
    expect(logged.some((line) => line.includes(message) && line.includes(exchangeNumber))).toBe(true)
    const { warnings } = (await (await lenient.control(`/warnings?exchange_number=${exchangeNumber}`)).json()) as { warnings: Record<string, unknown>[] }
    expect(warnings).toEqual([expect.objectContaining({ source: 'request', where: 'POST /v1/payments', exchange_number: exchangeNumber, message })])
    // The result fields carry the normalised amount, as the service's own answers do ("200.00").
    const result = await lenient.complete(exchangeNumber, 'approve')
    expect((result.result as Record<string, string>).transaction_amount).toBe(recorded)
  })

  it('warns about nothing for an amount already in the two-decimal form', async () => {
    const exchangeNumber = await created(lenient, paymentForm({ transaction_amount: '100.20' }))
    expect((await describePayment(lenient, exchangeNumber)).warnings).toEqual([])
  })

  it.each([
    ['abc', 'must be a decimal number such as 100.20'],
    ['0', 'must be more than 0.00'],
    ['0.00', 'must be more than 0.00'],
    ['-5', 'must be more than 0.00'],
    ['1.234', 'must have at most two fraction digits'],
    ['', 'is required'],
  ])('still refuses %j with 422', async (sent, problem) => {
    expect(await refusal(await create(lenient, paymentForm({ transaction_amount: sent })))).toMatchObject({
      status: 422,
      code: 'invalid_parameters',
      fields: { transaction_amount: problem },
    })
  })

  it('strict mode refuses 200 and 199.5, as the spec words the field', async () => {
    for (const sent of ['200', '199.5'])
      expect(await refusal(await create(strict, paymentForm({ transaction_amount: sent })))).toMatchObject({
        status: 422,
        fields: { transaction_amount: 'must be a decimal with two fraction digits, such as 100.20' },
      })
  })

  it('takes 200 on /apis/payments and answers "200.00", as the service documents', async () => {
    const response = await lenient.postForm('/apis/payments', { transaction_amount: '200', order_number: '231212' })
    expect(response.status).toBe(200)
    const { data } = (await response.json()) as { data: Record<string, unknown> }
    expect(data).toMatchObject({ transaction_amount: '200.00', currency_amount: '200.00', product_description: 'Payment for order no. 231212' })
    const { warnings } = (await (await lenient.control('/warnings')).json()) as { warnings: { where: string; message: string }[] }
    expect(warnings.at(-1)).toMatchObject({ where: 'POST /apis/payments', message: `transaction_amount "200" was normalised to "200.00" (payment session ${String(data.slug)})` })
    const refused = await strict.postForm('/apis/payments', { transaction_amount: '200' })
    expect(await refusal(refused)).toMatchObject({ status: 422, fields: { transaction_amount: expect.any(String) } })
    expect(await refusal(await lenient.postForm('/apis/payments', { transaction_amount: '2.005' }))).toMatchObject({ status: 422 })
  })
})

describe('buyer_phone empty or in local format', () => {
  it.each(['', '0123456789', '012-345 6789'])('takes %j and warns', async (phone) => {
    const exchangeNumber = await created(lenient, paymentForm({ buyer_phone: phone }))
    const payment = await describePayment(lenient, exchangeNumber)
    expect(payment.buyer_phone).toBe(phone)
    expect(payment.warnings).toEqual([expect.stringMatching(/^buyer_phone /)])
  })

  it('takes a payment with no buyer_phone field at all (signed as empty)', async () => {
    const { buyer_phone: _phone, ...form } = paymentForm({ buyer_phone: '' })
    const exchangeNumber = await created(lenient, form)
    expect((await describePayment(lenient, exchangeNumber)).warnings).toEqual(['buyer_phone was not sent; accepted as empty'])
  })

  it('keeps the checks of buyer_email and buyer_name, and refuses a phone of two lines', async () => {
    const response = await create(lenient, paymentForm({ buyer_email: 'nobody', buyer_name: '', buyer_phone: '012\n345' }))
    expect(Object.keys((await refusal(response)).fields ?? {}).sort()).toEqual(['buyer_email', 'buyer_name', 'buyer_phone'])
  })

  it('strict mode refuses empty and local phones', async () => {
    for (const phone of ['', '0123456789', '012-345 6789'])
      expect(await refusal(await create(strict, paymentForm({ buyer_phone: phone })))).toMatchObject({ status: 422, fields: { buyer_phone: expect.any(String) } })
  })

  it('payment sessions take a local phone too, with a warning', async () => {
    const response = await lenient.postForm('/apis/payments', { transaction_amount: '5.00', buyer_phone: '012-345 6789' })
    expect(response.status).toBe(200)
    expect(((await response.json()) as { data: { buyer_phone: string } }).data.buyer_phone).toBe('012-345 6789')
    expect((await strict.postForm('/apis/payments', { transaction_amount: '5.00', buyer_phone: '012-345 6789' })).status).toBe(422)
  })
})

describe('partner_uid as shop plugins send it', () => {
  it("takes partner_uid equal to the merchant's own uid as the merchant variant", async () => {
    const exchangeNumber = await created(lenient, { ...paymentForm(), partner_uid: DEMO.uid })
    const payment = await describePayment(lenient, exchangeNumber)
    expect(payment.partner_uid).toBeNull()
    expect(payment.warnings).toEqual(["partner_uid is the merchant's own API UID; treated as the merchant variant"])
  })

  it('takes partner_uid (the own uid) without a uid field, the merchant known by token', async () => {
    const { uid: _uid, ...form } = paymentForm()
    const exchangeNumber = await created(lenient, { ...form, partner_uid: DEMO.uid })
    const payment = await describePayment(lenient, exchangeNumber)
    expect(payment).toMatchObject({ partner_uid: null, interface_uid: DEMO.uid })
    expect(payment.warnings).toEqual([
      'partner_uid was sent without uid; the merchant is identified by token',
      "partner_uid is the merchant's own API UID; treated as the merchant variant",
    ])
  })

  it('keeps the 403 for a foreign partner_uid, with or without uid', async () => {
    const { uid: _uid, ...withoutUid } = paymentForm()
    for (const form of [{ ...paymentForm(), partner_uid: 'not-a-partner' }, { ...withoutUid, partner_uid: 'not-a-partner' }, { ...paymentForm(), partner_uid: PARTNER.uid }])
      expect(await refusal(await create(lenient, form))).toMatchObject({ status: 403, code: 'partner_not_authorized' })
  })

  it('strict mode: own uid as partner_uid is 403, partner_uid without uid is 422', async () => {
    expect(await refusal(await create(strict, { ...paymentForm(), partner_uid: DEMO.uid }))).toMatchObject({ status: 403 })
    const { uid: _uid, ...form } = paymentForm()
    expect(await refusal(await create(strict, { ...form, partner_uid: PARTNER.partnerUid }))).toMatchObject({ status: 422, fields: { uid: 'is required with partner_uid' } })
  })

  it('payment sessions take the own uid as partner_uid as the merchant variant', async () => {
    const response = await lenient.postForm('/apis/payments', { transaction_amount: '5.00', partner_uid: DEMO.uid })
    expect(response.status).toBe(200)
    expect(((await response.json()) as { data: { partner_uid: unknown } }).data.partner_uid).toBeNull()
    expect((await strict.postForm('/apis/payments', { transaction_amount: '5.00', partner_uid: DEMO.uid })).status).toBe(403)
  })
})

describe('strict mode', () => {
  it('warns about nothing and says it is strict', async () => {
    await created(strict, paymentForm())
    const body = (await (await strict.control('/warnings')).json()) as { strict: boolean; warnings: unknown[] }
    expect(body).toEqual({ strict: true, warnings: [] })
    expect(strictLogged).toEqual([])
    expect(((await (await lenient.control('/warnings')).json()) as { strict: boolean }).strict).toBe(false)
  })

  it('can be set in the configuration file, and the option overrides it', async () => {
    const fromConfig = await launch({ config: { strict: true } })
    const overridden = await launch({ config: { strict: true }, strict: false, log: () => {} })
    try {
      expect((await create(fromConfig, paymentForm({ transaction_amount: '200' }))).status).toBe(422)
      expect((await create(overridden, paymentForm({ transaction_amount: '200' }))).status).toBe(200)
    } finally {
      await fromConfig.stop()
      await overridden.stop()
    }
  })

  it('reset empties the warning log', async () => {
    const other = await launch({ log: () => {} })
    try {
      await created(other, paymentForm({ transaction_amount: '7' }))
      expect(((await (await other.control('/warnings')).json()) as { warnings: unknown[] }).warnings).toHaveLength(1)
      await other.control('/reset', {})
      expect(((await (await other.control('/warnings')).json()) as { warnings: unknown[] }).warnings).toEqual([])
    } finally {
      await other.stop()
    }
  })
})

describe('reference numbers as the service issues them', () => {
  it('exchange_number equals merchant_reference_number: five capitals and the Unix seconds, unique within one second', async () => {
    const instant = new Date('2022-07-01T07:41:17.250Z')
    const frozen = await launch({ now: () => instant })
    try {
      const numbers = new Set<string>()
      for (let i = 0; i < 40; i++) {
        const exchangeNumber = await created(frozen, paymentForm())
        expect(exchangeNumber).toMatch(REFERENCE_PATTERN)
        expect(exchangeNumber.slice(5)).toBe('1656661277')
        expect(frozen.state.payment(exchangeNumber)?.merchantReferenceNumber).toBe(exchangeNumber)
        numbers.add(exchangeNumber)
      }
      expect(numbers.size).toBe(40)
      const slugs = new Set<string>()
      for (let i = 0; i < 20; i++) {
        const response = await frozen.postForm('/apis/payments', { transaction_amount: '1.00' })
        slugs.add(((await response.json()) as { data: { slug: string } }).data.slug)
      }
      expect(slugs.size).toBe(20)
      for (const slug of slugs) expect(slug).toMatch(/^[A-Z]{5}1656661277$/)
    } finally {
      await frozen.stop()
    }
  })

  it('the signed result fields carry the same reference as exchange_number and merchant_reference_number', async () => {
    const exchangeNumber = await created(lenient, paymentForm())
    const { result } = (await lenient.complete(exchangeNumber, 'approve')) as { result: Record<string, string> }
    expect(result.merchant_reference_number).toBe(exchangeNumber)
    expect(result.exchange_number).toBe(exchangeNumber)
  })
})

describe('sandbox bank lists', () => {
  it.each(['/public/v1/banks/b2c', '/public/v1/banks/b2b'])('%s carries TEST0021, TEST0022 and TEST0023 in staging mode', async (path) => {
    const list = (await (await lenient.get(path, null)).json()) as { mode: string; fpx_bankList: { code: string; status_format2: boolean }[] }
    expect(list.mode).toBe('staging')
    const codes = list.fpx_bankList.filter((bank) => bank.code.startsWith('TEST')).map((bank) => bank.code)
    expect(codes).toEqual(['TEST0021', 'TEST0022', 'TEST0023'])
  })

  it('a production-mode emulator lists no test banks', async () => {
    const production = await launch({ config: { mode: 'production' } })
    try {
      const list = (await (await production.get('/public/v1/banks/b2c', null)).json()) as { fpx_bankList: { code: string }[] }
      expect(list.fpx_bankList.length).toBeGreaterThan(0)
      expect(list.fpx_bankList.some((bank) => bank.code.startsWith('TEST'))).toBe(false)
    } finally {
      await production.stop()
    }
  })

  it('a payment can go to a test bank', async () => {
    const exchangeNumber = await created(lenient, paymentForm({ buyer_bank_code: 'TEST0023' }))
    const { payment } = (await lenient.complete(exchangeNumber, 'approve')) as { payment: Record<string, unknown> }
    expect(payment.fpx_bank).toBe('SBI Bank C')
  })
})

describe('params keys other than referenceN / referenceN_label', () => {
  const form = () =>
    paymentForm({ 'params[selected_item]': 'Blue mug', 'params[reference1_label]': 'Table', 'params[reference1]': '12', 'params[reference19]': 'x' })
  const message = 'params keys "selected_item", "reference19" are not reference1..reference18 or their _label (the spec\'s); kept and sent back as given'

  it('are kept, signed and sent back in the result, with a warning', async () => {
    expect(await keptWithWarning(form(), message)).toEqual({ selected_item: 'Blue mug', reference1_label: 'Table', reference1: '12', reference19: 'x' })
  })

  it('are also taken by payment sessions, with a warning', async () => {
    const response = await lenient.postForm('/apis/payments', { transaction_amount: '10.00', 'params[selected_item]': 'Blue mug' })
    expect(response.status).toBe(200)
    const { data } = (await response.json()) as { data: Record<string, unknown> }
    expect(data.other_params).toEqual({ selected_item: 'Blue mug' })
  })

  it('strict mode refuses them with 422, naming each', async () => {
    expect(await refusal(await create(strict, form()))).toMatchObject({
      status: 422,
      fields: { 'params[selected_item]': 'params keys are reference1..reference18 and their _label', 'params[reference19]': expect.any(String) },
    })
  })

  it('a value over 255 characters is still refused', async () => {
    expect(await refusal(await create(lenient, paymentForm({ 'params[selected_item]': 'x'.repeat(256) })))).toMatchObject({
      status: 422,
      fields: { 'params[selected_item]': 'must be at most 255 characters' },
    })
  })
})

describe('control characters in params values (no evidence either way: docs/emulator.md)', () => {
  const note = 'Leave at the gate\nafter 6 pm\tthanks'
  const form = () => paymentForm({ 'params[reference1_label]': 'Delivery note', 'params[reference1]': note })
  const message =
    'params[reference1] holds a control character; kept and signed as sent, but a browser posting the redirect sends a lone CR or LF as CR LF, ' +
    'so that redirect will not verify (the callback will)'

  it('are kept and signed as sent, with a warning; the callback verifies', async () => {
    expect(await keptWithWarning(form(), message)).toEqual({ reference1_label: 'Delivery note', reference1: note })
  })

  it('are taken by payment sessions too, with a warning', async () => {
    const response = await lenient.postForm('/apis/payments', { transaction_amount: '10.00', 'params[reference1]': 'a\rb' })
    expect(response.status).toBe(200)
    const { data } = (await response.json()) as { data: Record<string, unknown> }
    expect(data.other_params).toEqual({ reference1: 'a\rb' })
    const { warnings } = (await (await lenient.control('/warnings')).json()) as { warnings: { message: string }[] }
    expect(warnings.at(-1)?.message).toMatch(/^params\[reference1\] holds a control character; .* \(payment session [A-Z]{5}\d{10}\)$/)
  })

  it('strict mode refuses them with 422, naming each', async () => {
    expect(await refusal(await create(strict, paymentForm({ 'params[reference1]': 'a\nb', 'params[reference2]': 'a\u0000b', 'params[reference3]': 'one line' })))).toMatchObject({
      status: 422,
      fields: { 'params[reference1]': 'must be one line of text without control characters', 'params[reference2]': 'must be one line of text without control characters' },
    })
  })

  it('address values keep the one-line rule in both modes', async () => {
    for (const emulator of [lenient, strict])
      expect(await refusal(await create(emulator, paymentForm({ 'billing_address[line1]': 'a\nb' })))).toMatchObject({
        status: 422,
        fields: { 'billing_address[line1]': 'must be one line of text without control characters' },
      })
  })
})
