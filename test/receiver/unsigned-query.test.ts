import { describe, expect, it } from 'vitest'
import {
  createReceiver,
  type FieldInput,
  type Logger,
  type PaymentEvent,
  type Receiver,
  type ReceiverOptions,
  verifyDelivery,
} from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { independentForm } from './independent-signer.js'

const TOKEN = 'ab'.repeat(32)
const OTHER_TOKEN = 'cd'.repeat(32)
const FORM = 'application/x-www-form-urlencoded'

function recorded(options: ReceiverOptions = { checksumToken: TOKEN }): { receiver: Receiver; events: PaymentEvent[] } {
  const receiver = createReceiver({ signatureOnly: true, ...options } as ReceiverOptions)
  const events: PaymentEvent[] = []
  for (const name of ['payment.succeeded', 'payment.failed', 'payment.pending'] as const) receiver.on(name, (event) => void events.push(event))
  return { receiver, events }
}

/** The service's fields as text, in the order it posts them. */
function textFields(overrides: Record<string, FieldInput> = {}): Record<string, string> {
  const fields = samplePaymentFields(overrides)
  const text: Record<string, string> = {}
  for (const [name, value] of Object.entries(fields)) if (value !== undefined) text[name] = String(value)
  return text
}

/** An empty POST whose query is the URL's own `own` followed by the service's signed fields. */
function queryDelivery(own: string, signed: string, kind: 'callback' | 'redirect' = 'callback') {
  return { kind, body: Buffer.alloc(0), contentType: FORM, query: `?${own}&${signed}` }
}

const signers = [
  ['the test helper', (fields: Record<string, string>, token = TOKEN) => signCallback(fields, token).body],
  ['an independent signer', (fields: Record<string, string>, token = TOKEN) => independentForm(fields, token)],
] as const

describe.each(signers)('the callback URL has its own query (signed by %s)', (_label, sign) => {
  it('verifies the fields the service appended and hands the own parameters over unsigned', async () => {
    const { receiver, events } = recorded()
    const fields = textFields()
    const response = await receiver.handle(queryDelivery('shop=42', sign(fields)))
    expect([response.status, response.outcome]).toEqual([200, 'processed'])
    expect(events).toHaveLength(1)
    const event = events[0]!
    expect({ ...event.unsignedQuery }).toEqual({ shop: '42' })
    expect(event.fields).not.toHaveProperty('shop')
    expect(Object.keys(event.fields).sort()).toEqual([...Object.keys(fields), 'checksum'].sort())
    expect(event.payment.orderNumber).toBe(fields.order_number)
    expect(Object.isFrozen(event.unsignedQuery)).toBe(true)
  })

  it('finds several own parameters, decoded, on a redirect', async () => {
    const { receiver, events } = recorded()
    const fields = textFields({ payment_status: 'false', fpx_debit_auth_code: '1C' })
    const response = await receiver.handle(queryDelivery('securepay_return=1&lang=ms&note=a+b%26c', sign(fields), 'redirect'))
    expect(response.status).toBe(200)
    expect(events.map((event) => [event.state, { ...event.unsignedQuery }])).toEqual([
      ['failed', { securepay_return: '1', lang: 'ms', note: 'a b&c' }],
    ])
  })

  it('refuses a forger who puts a service field before genuine fields that lack it', async () => {
    const { receiver, events } = recorded()
    // A genuine minimal message: no amount, no debit auth code, no params.
    const minimal = { exchange_number: 'EX1', order_number: 'ORD-1', payment_status: 'true' }
    const genuine = sign(minimal)
    expect((await receiver.verify({ body: '', query: genuine })).state).toBe('succeeded')
    for (const smuggled of ['transaction_amount=1.00', 'fpx_debit_auth_code=99', 'shop=1&transaction_amount=1.00', 'params%5Bx%5D=1', 'params[x]=1']) {
      const response = await receiver.handle(queryDelivery(smuggled, genuine))
      expect([smuggled, response.status, response.error?.code]).toEqual([smuggled, 401, 'checksum_mismatch'])
    }
    expect(events).toHaveLength(0)
  })

  it('refuses a name in both parts as a repeated field, saying why', async () => {
    const { receiver, events } = recorded()
    const known = await receiver.handle(queryDelivery('order_number=7', sign(textFields())))
    // A name the service may add one day (not in its known list) that the URL uses too.
    const added = await receiver.handle(queryDelivery('shop=7', sign(textFields({ shop: 'service' }))))
    for (const response of [known, added]) {
      expect([response.status, response.error?.code]).toEqual([400, 'duplicate_field'])
      expect(response.error?.message).toMatch(/query parameter of its own/)
    }
    expect(events).toHaveLength(0)
  })

  it('refuses a tampered service field after own parameters, naming what was tried', async () => {
    const { receiver, events } = recorded()
    const signed = new URLSearchParams(sign(textFields()))
    signed.set('transaction_amount', '1.00')
    const response = await receiver.handle(queryDelivery('shop=42', signed.toString()))
    expect([response.status, response.error?.code]).toEqual([401, 'checksum_mismatch'])
    expect(response.error?.message).toContain('first query parameter')
    expect(events).toHaveLength(0)
  })

  it('tries a bounded number of leading parameters', async () => {
    const { receiver } = recorded()
    const fields = textFields()
    const own = (count: number) => Array.from({ length: count }, (_, i) => `p${i}=${i}`).join('&')
    expect((await receiver.handle(queryDelivery(own(8), sign(fields)))).status).toBe(200)
    const tooMany = await receiver.handle(queryDelivery(own(9), sign(textFields())))
    expect([tooMany.status, tooMany.error?.code]).toEqual([401, 'checksum_mismatch'])
  })

  it('combines with a uid that names no credential set', async () => {
    const { receiver, events } = recorded({
      credentials: [
        { uid: '6f1c2a4e-8b3d-4f7a-9c2e-1d5b7a9e3f10', checksumToken: TOKEN },
        { uid: '0a9b8c7d-6e5f-4a3b-8c1d-2e3f4a5b6c7d', checksumToken: OTHER_TOKEN },
      ],
    })
    const fields = textFields({ uid: '1a2b3c4d5e6f7a8b9c0d' })
    const response = await receiver.handle(queryDelivery('shop=42', sign(fields, OTHER_TOKEN)))
    expect(response.status).toBe(200)
    expect(events.map((event) => [{ ...event.unsignedQuery }, event.credential])).toEqual([
      [{ shop: '42' }, { uid: '0a9b8c7d-6e5f-4a3b-8c1d-2e3f4a5b6c7d', index: 1, by: 'checksum' }],
    ])
  })
})

describe("an own parameter whose value does not decode (the URL's, not the service's)", () => {
  // A raw `%` and a Latin-1 escape: new URL() and the client take such a callback_url, the service appends its
  // fields after it, and it signs none of it.
  const owns = ['next=50%', 'q=caf%E9', 'shop=1&next=50%', 'next=50%&shop=1', 'a=%ZZ&b=%E9']

  it('costs nothing of the signed fields after it: they verify, and the parameter is left out of unsignedQuery', async () => {
    for (const own of owns) {
      const { receiver, events } = recorded()
      const fields = textFields()
      const response = await receiver.handle(queryDelivery(own, independentForm(fields, TOKEN)))
      expect([own, response.status, response.outcome]).toEqual([own, 200, 'processed'])
      expect(Object.keys(events[0]?.fields ?? {}).sort()).toEqual([...Object.keys(fields), 'checksum'].sort())
      expect(Object.values(events[0]?.unsignedQuery ?? {})).not.toContain('50%')
    }
  })

  it('costs nothing of nested fields after it either (params[...], grouped before any split is tried)', async () => {
    const { receiver } = recorded()
    const signed = signCallback({ ...samplePaymentFields(), params: { reference1_label: 'Note', reference1: 'a|b' } }, TOKEN).body
    const verified = await receiver.verify(queryDelivery('shop=1&next=50%&lang=ms', signed))
    expect([verified.fields.params, { ...verified.unsignedQuery }]).toEqual([{ reference1_label: 'Note', reference1: 'a|b' }, { shop: '1' }])
  })

  it('does so under whichever credential set signed them when the uid names none, and with a token looked up', async () => {
    const sets = {
      credentials: [
        { uid: '6f1c2a4e-8b3d-4f7a-9c2e-1d5b7a9e3f10', checksumToken: TOKEN },
        { uid: '0a9b8c7d-6e5f-4a3b-8c1d-2e3f4a5b6c7d', checksumToken: OTHER_TOKEN },
      ],
    }
    const unnamed = await verifyDelivery({ body: '', query: `next=50%&${independentForm(textFields({ uid: '1a2b3c4d5e6f7a8b9c0d' }), OTHER_TOKEN)}` }, sets)
    expect(unnamed.credential).toEqual({ uid: '0a9b8c7d-6e5f-4a3b-8c1d-2e3f4a5b6c7d', index: 1, by: 'checksum' })
    const resolved = await verifyDelivery({ body: '', query: `next=50%&${independentForm(textFields(), TOKEN)}` }, { resolveChecksumToken: async () => TOKEN })
    expect(resolved.state).toBe('succeeded')
  })

  it('still refuses with invalid_encoding when no split verifies, or when a signed value is what does not decode', async () => {
    const forged = new URLSearchParams(independentForm(textFields(), TOKEN))
    forged.set('checksum', '0'.repeat(64))
    const signedBad = independentForm(textFields(), TOKEN).replace(/buyer_name=[^&]*/, 'buyer_name=50%')
    for (const query of [`next=50%&${forged.toString()}`, `shop=1&${signedBad}`, signedBad]) {
      const { receiver, events } = recorded()
      const response = await receiver.handle({ kind: 'callback' as const, body: Buffer.alloc(0), contentType: FORM, query })
      expect([response.status, response.error?.code]).toEqual([400, 'invalid_encoding'])
      expect(events).toHaveLength(0)
    }
  })
})

describe('unsigned query beside the fields', () => {
  it('is empty when the whole query is signed', async () => {
    const { receiver, events } = recorded()
    const signed = signCallback(samplePaymentFields(), TOKEN).body
    expect((await receiver.handle({ kind: 'callback', body: '', query: signed })).status).toBe(200)
    expect((await receiver.handle({ kind: 'callback', body: '', query: new URLSearchParams(`shop=1&${signCallback(samplePaymentFields(), TOKEN).body}`) })).status).toBe(200)
    expect(events.map((event) => ({ ...event.unsignedQuery }))).toEqual([{}, { shop: '1' }])
  })

  it("is the URL's query when the fields came in the body, up to the first service field", async () => {
    const { receiver, events } = recorded()
    const body = signCallback(samplePaymentFields(), TOKEN).body
    const own = await receiver.handle({ kind: 'callback', body, contentType: FORM, query: '?shop=42&wc-api=securepay' })
    // Fields in the body and a copy in the query (the emulator's `both`): the copy is not the merchant's.
    const both = await receiver.handle({ kind: 'callback', body: signCallback(samplePaymentFields(), TOKEN).body, contentType: FORM, query: `shop=7&${body}` })
    // Signed field names never appear as unsigned ones, whatever their place.
    const shadow = await receiver.handle({ kind: 'callback', body: signCallback(samplePaymentFields(), TOKEN).body, contentType: FORM, query: 'lang=ms&order_number=X&after=1' })
    const none = await receiver.handle({ kind: 'callback', body: signCallback(samplePaymentFields(), TOKEN).body, contentType: FORM })
    expect([own, both, shadow, none].map((response) => response.status)).toEqual([200, 200, 200, 200])
    expect(events.map((event) => ({ ...event.unsignedQuery }))).toEqual([{ shop: '42', 'wc-api': 'securepay' }, { shop: '7' }, { lang: 'ms' }, {}])
  })

  it('is there for verifyDelivery too, and the payment is unaffected', async () => {
    const fields = textFields()
    const verified = await verifyDelivery({ body: null, query: `shop=42&${independentForm(fields, TOKEN)}` }, { checksumToken: TOKEN })
    expect({ ...verified.unsignedQuery }).toEqual({ shop: '42' })
    expect(verified.fields).not.toHaveProperty('shop')
    expect(verified.payment.exchangeNumber).toBe(fields.exchange_number)
  })

  it('logs the split at debug level without values', async () => {
    const lines: string[] = []
    const logger: Logger = { debug: (_d, m) => void lines.push(m), info: () => {}, warn: () => {}, error: () => {} }
    const { receiver } = recorded({ checksumToken: TOKEN, logger })
    expect((await receiver.handle(queryDelivery('shop=secret-shop', signCallback(samplePaymentFields(), TOKEN).body))).status).toBe(200)
    expect(lines.some((line) => line.includes('own leading query parameters'))).toBe(true)
    expect(lines.join('\n')).not.toContain('secret-shop')
  })
})

describe('query separators written as HTML (`&amp;`), as the vendor plugins repair them', () => {
  const fields = textFields({ buyer_name: 'Tan & Sons &amp; Co' })
  const signed = signCallback(fields, TOKEN).body
  const escaped = (separator: string) => `?securepay_return=1${separator}${signed.split('&').join(separator)}`

  it.each(['&amp;', '&amp%3B'])('verifies a genuine result whose separators arrive as %s, callback and redirect', async (separator) => {
    for (const kind of ['callback', 'redirect'] as const) {
      const { receiver, events } = recorded()
      const response = await receiver.handle({ kind, body: Buffer.alloc(0), contentType: FORM, query: escaped(separator) })
      expect([response.status, response.outcome, response.error?.code]).toEqual([200, 'processed', undefined])
      expect(events.map((event) => [event.payment.exchangeNumber, event.fields.buyer_name, event.unsignedQuery])).toEqual([
        [fields.exchange_number, 'Tan & Sons &amp; Co', { securepay_return: '1' }],
      ])
    }
  })

  it('still refuses an altered one, with the refusal of the query as sent', async () => {
    const { receiver, events } = recorded()
    const altered = escaped('&amp;').replace(`transaction_amount=${fields.transaction_amount}`, 'transaction_amount=1.00')
    expect(altered).not.toBe(escaped('&amp;'))
    const response = await receiver.handle({ kind: 'callback', body: Buffer.alloc(0), contentType: FORM, query: altered })
    expect([response.status, response.error?.code]).toEqual([401, 'checksum_missing'])
    expect(events).toEqual([])
  })
})
