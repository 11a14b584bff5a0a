import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  classify,
  type FieldInput,
  isReceiverError,
  PAYMENT_FIELD_RULES,
  paymentResultSchema,
  toSen,
  verifyDelivery,
} from '../../src/index.js'
import { findFieldProblems } from '../../src/core/result/fields.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

const TOKEN = 'ab'.repeat(32)

type Fields = Record<string, FieldInput>

async function paymentOf(fields: Fields) {
  const signed = signCallback(fields, TOKEN)
  const verified = await verifyDelivery({ body: signed.body, contentType: signed.contentType }, { checksumToken: TOKEN })
  return verified.payment
}

/** The fields exactly as a form delivery carries them, checksum included. */
function signedFormFields(fields: Fields): Record<string, string> {
  return Object.fromEntries(new URLSearchParams(signCallback(fields, TOKEN).body))
}

describe('classify', () => {
  it.each([
    ['true', '00', 'succeeded'],
    ['true', undefined, 'succeeded'],
    ['false', '1C', 'failed'],
    ['false', '00', 'failed'],
    ['false', undefined, 'failed'],
    ['false', '', 'failed'],
    ['false', '99', 'pending'],
    ['true', '99', 'pending'],
    ['TRUE', '00', 'failed'],
  ] as const)('payment_status %s with fpx_debit_auth_code %s is %s', (status, code, state) => {
    expect(classify(status, code)).toBe(state)
  })
})

describe('toSen', () => {
  it.each([
    ['100.20', 10020],
    ['100.2', 10020],
    ['100', 10000],
    ['0.05', 5],
    ['0.5', 50],
    ['0', 0],
    ['0.00', 0],
    ['19.99', 1999],
    ['1.15', 115],
    ['1234567.89', 123456789],
  ])('%s ringgit is %i sen', (amount, sen) => {
    expect(toSen(amount)).toBe(sen)
  })

  it('is exact for every amount with up to two fraction digits', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000_000 }), fc.integer({ min: 0, max: 99 }), (ringgit, cents) => {
        const twoDigits = String(cents).padStart(2, '0')
        expect(toSen(`${ringgit}.${twoDigits}`)).toBe(ringgit * 100 + cents)
        if (cents % 10 === 0) expect(toSen(`${ringgit}.${cents / 10}`)).toBe(ringgit * 100 + cents)
        if (cents === 0) expect(toSen(String(ringgit))).toBe(ringgit * 100)
      }),
    )
  })
})

describe('the typed payment view of a verified delivery', () => {
  it('parses amounts into sen, booleans, dates, numbers and params', async () => {
    const fields = samplePaymentFields({
      transaction_amount: '1234.5',
      transaction_amount_received: '1234.50',
      transaction_fee: '1.05',
      payment_id: '4242',
      fpx_transaction_time: '20250102030405',
      params: { reference1_label: 'Size', reference1: 'XL' },
    })
    const payment = await paymentOf(fields)

    expect(payment.state).toBe('succeeded')
    expect(payment.exchangeNumber).toBe(fields.exchange_number)
    expect(payment.orderNumber).toBe(fields.order_number)
    expect(payment.merchantReferenceNumber).toBe(fields.merchant_reference_number)
    expect(payment.amountSen).toBe(123450)
    expect(payment.amountReceivedSen).toBe(123450)
    expect(payment.feeSen).toBe(105)
    expect(payment.paid).toBe(true)
    expect(payment.paymentId).toBe(4242)
    expect(payment.currency).toBe('MYR')
    expect(payment.source).toBe('FPX')
    expect(payment.model).toBe('B2C')
    expect(payment.paymentMode).toBe('merchant')
    expect(payment.paymentMethod).toBe('fpx_online_banking')
    expect(payment.debitAuthCode).toBe('00')
    expect(payment.failureCode).toBeNull()
    expect(payment.failureMessage).toBeNull()
    expect(payment.buyer).toEqual({ name: fields.buyer_name, email: fields.buyer_email, phone: fields.buyer_phone })
    expect(payment.fpx).toEqual({
      bank: 'Maybank2U',
      name: 'NUR AISYAH BINTI AHMAD',
      transactionId: fields.fpx_transaction_id,
      status: true,
      statusMessage: 'Approved',
      transactionTime: '20250102030405',
    })
    expect(payment.createdAt).toBeInstanceOf(Date)
    expect(payment.createdAt?.getTime()).toBe(Date.parse(fields.created_at as string))
    expect(payment.uid).toBe(fields.uid)
    expect(payment.statusUrl).toBe(fields.status_url)
    expect(payment.receiptUrl).toBe(fields.receipt_url)
    expect({ ...payment.params }).toEqual({ reference1_label: 'Size', reference1: 'XL' })
  })

  it('gives null for empty and absent optional fields', async () => {
    const payment = await paymentOf(
      samplePaymentFields({
        retry_url: '',
        merchant_reference_number: '',
        transaction_fee: '',
        fpx_status: '',
        payment_id: '',
        currency: undefined,
        fpx_model: undefined,
        transaction_amount_received: undefined,
      }),
    )
    expect(payment.retryUrl).toBeNull()
    expect(payment.merchantReferenceNumber).toBeNull()
    expect(payment.feeSen).toBeNull()
    expect(payment.fpx.status).toBeNull()
    expect(payment.paymentId).toBeNull()
    expect(payment.currency).toBeNull()
    expect(payment.model).toBeNull()
    expect(payment.amountReceivedSen).toBeNull()
    expect(payment.params).toBeNull()
  })

  it('keeps the bank code and message as the reason of a failed payment', async () => {
    const payment = await paymentOf(
      samplePaymentFields({
        payment_status: 'false',
        transaction_amount_received: '0.00',
        fpx_debit_auth_code: '1C',
        fpx_status: 'false',
        fpx_status_message: 'Buyer cancelled',
        retry_url: 'https://sandbox.example.test/retry/1',
      }),
    )
    expect(payment.state).toBe('failed')
    expect(payment.paid).toBe(false)
    expect(payment.failureCode).toBe('1C')
    expect(payment.failureMessage).toBe('Buyer cancelled')
    expect(payment.fpx.status).toBe(false)
    expect(payment.amountReceivedSen).toBe(0)
    expect(payment.amountSen).toBe(10020)
    expect(payment.retryUrl).toBe('https://sandbox.example.test/retry/1')
  })

  it('has no failure code while pending (99)', async () => {
    const payment = await paymentOf(samplePaymentFields({ fpx_model: 'B2B1', fpx_debit_auth_code: '99', payment_status: 'false' }))
    expect(payment.state).toBe('pending')
    expect(payment.model).toBe('B2B1')
    expect(payment.debitAuthCode).toBe('99')
    expect(payment.failureCode).toBeNull()
  })

  it('falls back to created_at_unixtime when created_at is empty', async () => {
    const payment = await paymentOf(samplePaymentFields({ created_at: '', created_at_unixtime: '1700000000' }))
    expect(payment.createdAt).toEqual(new Date(1_700_000_000_000))
    const none = await paymentOf(samplePaymentFields({ created_at: undefined, created_at_unixtime: undefined }))
    expect(none.createdAt).toBeNull()
  })
})

describe('paymentResultSchema', () => {
  // exchange_number and order_number identify the payment and key deduplication, payment_status classifies it,
  // checksum authenticates it. transaction_amount is not among them: real redirects come without it.
  const REQUIRED = ['exchange_number', 'order_number', 'payment_status', 'checksum']

  it('requires exactly the fields the receiver needs', () => {
    const required = Object.entries(PAYMENT_FIELD_RULES)
      .filter(([, rule]) => rule.required)
      .map(([name]) => name)
    expect(required.sort()).toEqual([...REQUIRED].sort())
  })

  it('accepts the signed fields of samplePaymentFields() and keeps their text as sent', () => {
    for (const overrides of [{}, { payment_status: 'false', fpx_debit_auth_code: '1C' }, { fpx_debit_auth_code: '99' }]) {
      const fields = signedFormFields(samplePaymentFields(overrides))
      const result = paymentResultSchema.safeParse(fields)
      expect(result.success).toBe(true)
      expect(result.data).toEqual(fields)
    }
  })

  it('keeps unknown extra fields, nested ones included', () => {
    const fields = {
      ...signedFormFields(samplePaymentFields()),
      interface_name: 'Shop',
      a_field_added_in_2030: '42',
      params: { reference1_label: 'Size', reference1: 'XL' },
    }
    const result = paymentResultSchema.parse(fields)
    expect(result.interface_name).toBe('Shop')
    expect(result.a_field_added_in_2030).toBe('42')
    expect(result.params).toEqual({ reference1_label: 'Size', reference1: 'XL' })
  })

  it.each(REQUIRED)('rejects a message without %s and names it', (name) => {
    const { [name]: _removed, ...fields } = signedFormFields(samplePaymentFields())
    const result = paymentResultSchema.safeParse(fields)
    expect(result.success).toBe(false)
    expect(result.error?.issues.map((issue) => issue.path)).toEqual([[name]])
  })

  it.each([
    ['transaction_amount', 'abc'],
    ['transaction_amount', '100.205'],
    ['payment_status', 'yes'],
    ['exchange_number', ''],
    ['checksum', 'ab'.repeat(31)],
    ['transaction_fee', '1,00'],
    ['payment_id', '12a'],
    ['fpx_status', 'TRUE'],
  ])('rejects %s %j', (name, value) => {
    const result = paymentResultSchema.safeParse({ ...signedFormFields(samplePaymentFields()), [name]: value })
    expect(result.success).toBe(false)
    expect(result.error?.issues.map((issue) => issue.path)).toEqual([[name]])
  })

  it('accepts empty optional fields (the service writes null as empty text)', () => {
    const fields = { ...signedFormFields(samplePaymentFields()), transaction_fee: '', payment_id: '', fpx_status: '', retry_url: '' }
    expect(paymentResultSchema.safeParse(fields).success).toBe(true)
  })
})

describe('paymentResultSchema and findFieldProblems agree', () => {
  const anyText = fc.oneof(fc.string(), fc.string({ unit: 'grapheme', maxLength: 6 }))
  /** Mostly valid values, so that accepted and refused sets both come up often. */
  const mostly = (valid: fc.Arbitrary<string>, ...others: fc.Arbitrary<string>[]) =>
    fc.oneof(
      { arbitrary: valid, weight: 12 },
      ...others.map((arbitrary) => ({ arbitrary, weight: 1 })),
      // A checked field posted as `name[key]=...`: present, but not text.
      { arbitrary: fc.constant<Record<string, string>>({ key: '1' }), weight: 1 },
    )
  const decimal = mostly(
    fc.tuple(fc.nat({ max: 100_000 }), fc.constantFrom('', '.5', '.05', '.50')).map(([whole, fraction]) => `${whole}${fraction}`),
    fc.constantFrom('abc', '1.', '.5', '1.234', '-1', ' 1', '1,00', '１', '100.20\n', '1e3', ''),
    anyText,
  )
  const booleanText = mostly(fc.constantFrom('true', 'false'), fc.constantFrom('TRUE', 'True', '1', '0', 'true ', ''), anyText)
  const integerText = mostly(fc.nat().map(String), fc.constantFrom('-1', '1.0', '١', '0x1', ''), anyText)
  const reference = mostly(fc.stringMatching(/^[A-Z]{2}\d{1,10}$/), fc.constantFrom('', ' ', '\t', '\n', ' x '), anyText)
  // Always present and well-formed: the receiver checks the other fields only after the checksum matched.
  const checksum = fc.oneof(fc.stringMatching(/^[0-9a-f]{64}$/), fc.stringMatching(/^[0-9A-F]{64}$/))
  // Non-empty: signCallback signs an empty object as `{}` but posts no field for it (reported separately).
  const nested = fc.dictionary(fc.constantFrom('reference1_label', 'reference1', 'line1', 'city'), fc.string(), {
    minKeys: 1,
    maxKeys: 3,
  })
  /** Present nine times in ten: absent fields are a case of their own. */
  const field = <T,>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { nil: undefined, freq: 10 })

  const fieldSets = fc
    .record({
      exchange_number: field(reference),
      order_number: field(reference),
      payment_status: field(booleanText),
      transaction_amount: field(decimal),
      transaction_amount_received: field(decimal),
      transaction_fee: field(decimal),
      amount: field(decimal),
      payment_id: field(integerText),
      created_at_unixtime: field(integerText),
      fpx_status: field(booleanText),
      checksum,
      fpx_debit_auth_code: field(fc.constantFrom('00', '99', '1C', '')),
      buyer_name: field(anyText),
      merchant_name: field(anyText),
      token: field(anyText),
      // Fields the schema does not know: kept, never checked.
      interface_name: field(anyText),
      interface_uid: field(anyText),
      params: field(nested),
      shipping_address: field(nested),
    })
    .map((generated) => {
      const fields: Record<string, string | Record<string, string>> = {}
      for (const [name, value] of Object.entries(generated)) if (value !== undefined) fields[name] = value
      return fields
    })

  /** The receiver's view of a field: text, or undefined when absent or nested. */
  const problemsOf = (fields: Record<string, unknown>) =>
    findFieldProblems(
      (name) => Object.hasOwn(fields, name),
      (name) => {
        const value = fields[name]
        return typeof value === 'string' ? value : undefined
      },
    )

  it('on generated field sets: the schema accepts exactly when findFieldProblems finds nothing', () => {
    fc.assert(
      fc.property(fieldSets, (fields) => {
        const result = paymentResultSchema.safeParse(fields)
        const problems = problemsOf(fields)
        expect(result.success).toBe(problems.length === 0)
        if (!result.success) {
          const schemaFields = new Set(result.error.issues.map((issue) => String(issue.path[0])))
          expect(schemaFields).toEqual(new Set(problems.map((problem) => problem.field)))
        }
      }),
      { numRuns: 2000 },
    )
  })

  it('finds both accepting and rejecting cases among the generated sets', () => {
    // Guards the property above against a generator that only ever produces one kind of set.
    const samples = fc.sample(fieldSets, { numRuns: 500, seed: 42 })
    const accepted = samples.filter((fields) => paymentResultSchema.safeParse(fields).success).length
    expect(accepted).toBeGreaterThan(samples.length / 10)
    expect(samples.length - accepted).toBeGreaterThan(samples.length / 10)
  })

  it('on signed deliveries: the receiver refuses with invalid_fields exactly when the schema rejects', async () => {
    await fc.assert(
      fc.asyncProperty(fieldSets, async (generated) => {
        const { checksum: _ignored, ...fields } = generated
        const signed = signCallback(fields, TOKEN)
        const signedChecksum = new URLSearchParams(signed.body).get('checksum')
        const schemaAccepts = paymentResultSchema.safeParse({ ...fields, checksum: signedChecksum }).success
        const verified = await verifyDelivery({ body: signed.body, contentType: signed.contentType }, { checksumToken: TOKEN }).then(
          () => 'accepted',
          (error: unknown) => (isReceiverError(error) ? error.code : 'threw'),
        )
        // A field set the schema takes may still have values that contradict each other (payment_status true with
        // code 1C): that is the separate inconsistent_result check of docs/security.md, never invalid_fields.
        if (schemaAccepts) expect(['accepted', 'inconsistent_result']).toContain(verified)
        else expect(verified).toBe('invalid_fields')
      }),
      { numRuns: 300 },
    )
  })
})
