import { describe, expect, it } from 'vitest'
import { createClient, ENVIRONMENTS, FpxValidationError, type PaymentInput, reconcile, type TransactionsQuery } from '../../src/client/index.js'
import { createReceiver } from '../../src/receiver/receiver.js'
import { DEMO, paymentInput } from './helpers.js'

// Every check here must fail before the network: this fetch fails the test if it is ever called.
const calls: string[] = []
const client = createClient({
  environment: { baseUrl: 'http://127.0.0.1:9/api' },
  ...DEMO,
  retryDelayMs: 1,
  fetch: (input) => {
    calls.push(String(input))
    throw new Error('no request may be sent for invalid input')
  },
})

async function fieldsOf(action: () => unknown): Promise<Record<string, string>> {
  let error: unknown
  try {
    await action()
  } catch (caught) {
    error = caught
  }
  expect(error).toBeInstanceOf(FpxValidationError)
  expect((error as FpxValidationError).status).toBeUndefined()
  expect(calls).toEqual([])
  return { ...(error as FpxValidationError).fields }
}

const withoutField = (name: keyof PaymentInput): PaymentInput =>
  Object.fromEntries(Object.entries(paymentInput()).filter(([key]) => key !== name)) as unknown as PaymentInput

describe('payment input', () => {
  it.each(['order_number', 'buyer_name', 'buyer_email', 'transaction_amount', 'product_description'] as const)('requires %s', async (name) => {
    expect(await fieldsOf(() => client.buildPaymentForm(withoutField(name), { exposeAuthToken: true }))).toEqual({ [name]: 'is required' })
    expect(await fieldsOf(() => client.createPayment(withoutField(name)))).toHaveProperty(name)
  })

  it.each<[string | number, RegExp]>([
    ['1,000.00', /decimal number/],
    ['0.00', /more than 0\.00/],
    ['0', /more than 0\.00/],
    [0, /more than 0\.00/],
    ['-1.00', /more than 0\.00/],
    [-5, /more than 0\.00/],
    ['100.205', /at most two fraction digits/],
    [100.205, /at most two fraction digits/],
    ['abc', /decimal number/],
    ['', /decimal number/],
    ['1000000000.00', /at most 999999999.99/],
    [Number.NaN, /must be a number or a decimal as text/],
    [Number.POSITIVE_INFINITY, /must be a number or a decimal as text/],
  ])('refuses the amount %j, naming the field', async (amount, problem) => {
    const fields = await fieldsOf(() => client.buildPaymentForm(paymentInput({ transaction_amount: amount }), { exposeAuthToken: true }))
    expect(Object.keys(fields)).toEqual(['transaction_amount'])
    expect(fields.transaction_amount).toMatch(problem)
    expect(Object.keys(await fieldsOf(() => client.createPaymentSession({ transaction_amount: amount })))).toEqual(['transaction_amount'])
  })

  it('refuses an amount that is neither text nor a number', async () => {
    expect(await fieldsOf(() => client.buildPaymentForm(paymentInput({ transaction_amount: true as unknown as string }), { exposeAuthToken: true }))).toEqual({
      transaction_amount: 'must be a number or a decimal as text, such as 100.20',
    })
  })

  it('keeps the buyer_email and buyer_name checks', async () => {
    const fields = await fieldsOf(() => client.buildPaymentForm(paymentInput({ buyer_email: 'aisyah@', buyer_name: 'Nur\nAisyah' }), { exposeAuthToken: true }))
    expect(fields).toEqual({ buyer_email: 'must be an e-mail address', buyer_name: 'must be one line of text without control characters' })
  })

  it('allows 18 params pairs, and other keys as the service takes them; names a key a form cannot send', async () => {
    const params: Record<string, string> = {}
    for (let n = 1; n <= 18; n++) Object.assign(params, { [`reference${n}_label`]: `Label ${n}`, [`reference${n}`]: `Value ${n}` })
    expect(client.buildPaymentForm(paymentInput({ params }), { exposeAuthToken: true }).fields['params[reference18]']).toBe('Value 18')
    // The emulator keeps these with a warning (docs/emulator.md: a public Laravel library sends params[selected_item]).
    const more = client.buildPaymentForm(paymentInput({ params: { ...params, reference19: 'x', selected_item: 'Blue mug' } }), { exposeAuthToken: true }).fields
    expect([more['params[reference19]'], more['params[selected_item]']]).toEqual(['x', 'Blue mug'])
    const fields = await fieldsOf(() => client.buildPaymentForm(paymentInput({ params: { 'a]b': 'x', '': 'y' } }), { exposeAuthToken: true }))
    expect(Object.keys(fields).sort()).toEqual(['params[]', 'params[a]b]'])
  })

  it('takes what the emulator takes in the loosely specified fields', () => {
    const form = client.buildPaymentForm(
      paymentInput({
        redirect_post: 'true',
        params: { reference01: 'first' },
        shipping_address: { contact_phone_number: '+60 12-345 6789 ext. 1234', line2: '', postcode: '50450' },
      }),
      { exposeAuthToken: true },
    )
    expect(form.fields).toMatchObject({ redirect_post: 'true', 'params[reference01]': 'first', 'shipping_address[line2]': '', 'shipping_address[contact_phone_number]': '+60 12-345 6789 ext. 1234' })
    expect(calls).toEqual([])
  })

  it('still names a wrong redirect_post, address value or params value', async () => {
    const fields = await fieldsOf(() =>
      client.buildPaymentForm(paymentInput({ redirect_post: 'yes' as 'true', billing_address: { line1: 'a\nb' }, params: { reference1: 'x'.repeat(256) } }), { exposeAuthToken: true }),
    )
    expect(fields).toEqual({
      redirect_post: 'must be true or false',
      'billing_address[line1]': 'must be one line of text without control characters',
      'params[reference1]': 'must be at most 255 characters',
    })
  })

  it('names each wrong optional field at once', async () => {
    const input = paymentInput({
      model: 'B2B' as 'B2C',
      fpx_bank_selection: 'list' as 'grid',
      callback_url: 'ftp://shop.example/cb',
      redirect_url: 'not a url',
      buyer_email: 'aisyah.example.com',
      shipping_address: { line1: 'Jalan 1', country: 'MY' } as never,
    })
    const fields = await fieldsOf(() => client.buildPaymentForm(input, { exposeAuthToken: true }))
    expect(Object.keys(fields).sort()).toEqual(['buyer_email', 'callback_url', 'fpx_bank_selection', 'model', 'redirect_url', 'shipping_address'])
    expect(fields.model).toBe('must be B2C or B2B1')
    expect(fields.fpx_bank_selection).toBe('must be dropdown or grid')
  })
})

describe('payment session input', () => {
  it('requires transaction_amount and allows only MYR or USD', async () => {
    expect(await fieldsOf(() => client.createPaymentSession({} as never))).toEqual({ transaction_amount: 'is required' })
    const fields = await fieldsOf(() => client.createPaymentSession({ transaction_amount: '1.00', currency: 'EUR' as 'USD', buyer_email: 'nobody' }))
    expect(Object.keys(fields).sort()).toEqual(['buyer_email', 'currency'])
  })
})

describe('transactions query', () => {
  const cases: Array<[string, TransactionsQuery, string]> = [
    ['start_date alone', { start_date: '2026-03-01' }, 'end_date'],
    ['end_date alone', { end_date: '2026-03-01' }, 'start_date'],
    ['91 days', { start_date: '2026-01-01', end_date: '2026-04-01' }, 'end_date'],
    ['end before start', { start_date: '2026-03-02', end_date: '2026-03-01' }, 'end_date'],
    ['an impossible date', { start_date: '2026-02-30', end_date: '2026-03-01' }, 'start_date'],
    ['another date format', { start_date: '01/03/2026', end_date: '2026-03-01' }, 'start_date'],
    ['per_page 0', { per_page: 0 }, 'per_page'],
    ['per_page 101', { per_page: 101 }, 'per_page'],
    ['per_page 2.5', { per_page: 2.5 }, 'per_page'],
    ['page 0', { page: 0 }, 'page'],
    ['payment_status maybe', { payment_status: 'maybe' as 'all' }, 'payment_status'],
  ]
  it.each(cases)('refuses %s', async (_name, query, field) => {
    expect(Object.keys(await fieldsOf(() => client.transactions(query)))).toEqual([field])
    expect(Object.keys(await fieldsOf(() => client.transactions.all(query).next()))).toEqual([field])
  })

  it('accepts exactly 90 days, both included', async () => {
    // Valid input reaches the network, which this client refuses: the error is then not a validation error.
    const error = await client.transactions({ start_date: '2026-01-01', end_date: '2026-03-31', per_page: 100 }).catch((caught: unknown) => caught)
    expect(error).not.toBeInstanceOf(FpxValidationError)
    // A read that fails on the network is tried 1 + maxRetries (default 2) times.
    expect(calls.splice(0)).toHaveLength(3)
  })
})

describe('other inputs', () => {
  it('checks search, status and reconcile inputs', async () => {
    expect(await fieldsOf(() => client.searchTransactions('payment_id' as 'order_number', '1'))).toHaveProperty('search_reference')
    expect(await fieldsOf(() => client.searchTransactions('order_number', ''))).toEqual({ reference_number: 'is required' })
    expect(await fieldsOf(() => client.paymentStatus(''))).toEqual({ order_number: 'is required' })
    expect(await fieldsOf(() => client.paymentStatusByReference(''))).toEqual({ merchant_reference_number: 'is required' })
    // URL parsing resolves dot segments: `.../merchant_reference_number/..` would ask for another resource.
    expect(await fieldsOf(() => client.paymentStatusByReference('..'))).toHaveProperty('merchant_reference_number')
    expect(await fieldsOf(() => client.paymentStatus('.'))).toHaveProperty('order_number')
    const receiver = createReceiver({ signatureOnly: true, checksumToken: DEMO.checksumToken })
    expect(await fieldsOf(() => reconcile({ client, receiver, from: '2026-13-01', to: '2026-03-01' }))).toHaveProperty('from')
    expect(await fieldsOf(() => reconcile({ client, receiver, from: '2026-03-02', to: '2026-03-01' }))).toHaveProperty('to')
  })
})

describe('createClient options', () => {
  it('maps the named environments to the configured base URLs and checks the options', () => {
    expect(createClient({ environment: 'sandbox', ...DEMO }).baseUrl).toBe(ENVIRONMENTS.sandbox)
    expect(createClient({ environment: 'production', ...DEMO }).baseUrl).toBe(ENVIRONMENTS.production)
    expect(createClient({ environment: { baseUrl: 'http://127.0.0.1:4010/api/' }, ...DEMO }).baseUrl).toBe('http://127.0.0.1:4010/api')
    expect(() => createClient({ environment: 'staging' as 'sandbox', ...DEMO })).toThrow(/environment/)
    expect(() => createClient({ environment: { baseUrl: 'ftp://x' }, ...DEMO })).toThrow(/baseUrl/)
    expect(() => createClient({ environment: 'sandbox', ...DEMO, authToken: '' })).toThrow(/authToken must be a non-empty string/)
    expect(() => createClient({ environment: 'sandbox', ...DEMO, timeoutMs: 0 })).toThrow(/timeoutMs/)
    expect(() => createClient({ environment: 'sandbox', ...DEMO, maxRetries: -1 })).toThrow(/maxRetries/)
  })
})
