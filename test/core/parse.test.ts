import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { createHmac } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import {
  createReceiver,
  DEFAULT_MAX_BODY_BYTES,
  type Logger,
  type PaymentEvent,
  type RawDelivery,
  type ReceiverOptions,
  verifyDelivery,
} from '../../src/index.js'
import { byteCompare, rejectionOf } from './oracle.js'

const TOKEN = 'ab'.repeat(32)
const FORM = 'application/x-www-form-urlencoded'
const JSON_TYPE = 'application/json'

function hmac(text: string): string {
  return createHmac('sha256', TOKEN).update(text, 'utf8').digest('hex')
}

/** An independent signer for flat fields: values sorted by the UTF-8 bytes of their names, joined by |. */
function handChecksum(entries: readonly (readonly [string, string])[]): string {
  const sorted = [...entries].filter(([name]) => name !== 'checksum').sort(([a], [b]) => byteCompare(a, b))
  return hmac(sorted.map(([, value]) => value).join('|'))
}

/** `entries` as a form body, encoded by the platform's URLSearchParams (`+` for space). */
function formOf(entries: readonly (readonly [string, string])[]): string {
  return new URLSearchParams(entries.map(([name, value]): [string, string] => [name, value])).toString()
}

/** A form body of `entries` plus their checksum. */
function signedForm(entries: readonly (readonly [string, string])[]): string {
  return formOf([...entries, ['checksum', handChecksum(entries)]])
}

const BASE: readonly (readonly [string, string])[] = [
  ['exchange_number', 'EX0000000001'],
  ['order_number', 'ORD-1001'],
  ['payment_status', 'true'],
  ['transaction_amount', '100.20'],
]
const BASE_TEXT = 'EX0000000001|ORD-1001|true|100.20'

/**
 * A receiver keyed by TOKEN unless `options` brings its own way to find the token, with a handler for every state
 * (a state no handler listens to is answered 503 no_handler). These messages are built by hand to exercise
 * parsing, many with a field sorting before exchange_number and no status_url.
 */
function receiver(options: Partial<ReceiverOptions> = {}) {
  const keyed = options.credentials !== undefined || options.resolveChecksumToken !== undefined
  const created = createReceiver({ signatureOnly: true, logger: false, ...(keyed ? options : { checksumToken: TOKEN, ...options }) } as ReceiverOptions)
  created.onAny(() => {})
  return created
}

async function expectRefused(delivery: RawDelivery, code: string, status: number, options: Partial<ReceiverOptions> = {}) {
  const error = await rejectionOf(receiver(options).verify(delivery))
  expect(error.code).toBe(code)
  expect(error.status).toBe(status)
  const response = await receiver(options).handle({ kind: 'callback', ...delivery })
  expect(response.status).toBe(status)
  expect(response.outcome).toBe('rejected')
  expect(response.error?.code).toBe(code)
  return error
}

interface LogCall {
  level: keyof Logger
  details: object
  message: string
}

function logSpy(): Logger & { calls: LogCall[] } {
  const calls: LogCall[] = []
  const record = (level: keyof Logger) => (details: object, message: string) => {
    calls.push({ level, details, message })
  }
  return { calls, debug: record('debug'), info: record('info'), warn: record('warn'), error: record('error') }
}

describe('form decoding', () => {
  // Hand-encoded: `+` is a space, %2B a plus; &, =, % and unicode are percent-encoded.
  const note = '1 + 1 = 2 & 100% \u20ac caf\u00e9 \u{1F600}'
  const encodedNote = '1+%2B+1+%3D+2+%26+100%25+%E2%82%AC+caf%C3%A9+%F0%9F%98%80'
  // Sorted: buyer+note, exchange_number, note, order_number, payment_status, transaction_amount, two words
  const text = `a+b|EX0000000001|${note}|ORD-1001|true|100.20|x y`
  const body =
    `exchange_number=EX0000000001&note=${encodedNote}&order_number=ORD-1001&payment_status=true` +
    `&transaction_amount=100.20&buyer%2Bnote=a%2Bb&two+words=x+y&checksum=${hmac(text)}`

  it('reads + as space and %2B as plus in values and names, and %-escapes as UTF-8', async () => {
    const verified = await receiver().verify({ body, contentType: FORM })
    expect(verified.fields.note).toBe(note)
    expect(verified.fields['buyer+note']).toBe('a+b')
    expect(verified.fields['two words']).toBe('x y')
    expect(verified.rendering).toBe('plain')
  })

  it('refuses the message when a %2B is read as a space (the signed text differs)', async () => {
    await expectRefused({ body: body.replace('buyer%2Bnote=a%2Bb', 'buyer%2Bnote=a+b'), contentType: FORM }, 'checksum_mismatch', 401)
  })

  it('accepts a content type with parameters and a UTF-8 charset in any case', async () => {
    for (const contentType of [`${FORM}; charset=UTF-8`, `${FORM};charset="utf-8"`, 'Application/X-WWW-Form-Urlencoded']) {
      const verified = await receiver().verify({ body, contentType })
      expect(verified.fields.note).toBe(note)
    }
  })

  it.each([
    ['%ZZ in a value', 'note=%ZZ'],
    ['a truncated escape', 'note=abc%2'],
    ['an incomplete UTF-8 sequence (%E2%82)', 'note=%E2%82'],
    ['a lone continuation byte', 'note=%80'],
    ['an encoded surrogate (%ED%A0%80)', 'note=%ED%A0%80'],
    ['%ZZ in a name', 'no%ZZte=1'],
  ])('refuses %s with 400 invalid_encoding and never echoes the value', async (_label, pair) => {
    const error = await expectRefused({ body: `${signedForm(BASE)}&${pair}`, contentType: FORM }, 'invalid_encoding', 400)
    expect(error.message).not.toContain('%ZZ')
  })

  it('refuses raw bytes that are not UTF-8 in a Uint8Array body with 400 invalid_encoding', async () => {
    const prefix = Buffer.from(`${signedForm(BASE)}&note=`)
    for (const bad of [[0xff], [0xc3, 0x28], [0xe2, 0x82], [0xed, 0xa0, 0x80]]) {
      const bytes = new Uint8Array(Buffer.concat([prefix, Buffer.from(bad)]))
      await expectRefused({ body: bytes, contentType: FORM }, 'invalid_encoding', 400)
    }
  })

  it('reads a pair without = as a field with an empty value', async () => {
    const entries = [...BASE, ['retry_url', ''] as const]
    const body = `${formOf(BASE)}&retry_url&checksum=${handChecksum(entries)}`
    const verified = await receiver().verify({ body, contentType: FORM })
    expect(verified.fields.retry_url).toBe('')
  })
})

describe('body types', () => {
  const body = signedForm([...BASE, ['buyer_name', 'Nur Aisyah \u00e9 \u{1F600}']])

  it('accepts a Uint8Array that is a view into a larger buffer', async () => {
    const encoded = new TextEncoder().encode(`GARBAGE&${body}&TRAILING=junk`)
    const length = Buffer.byteLength(body)
    const view = encoded.subarray(8, 8 + length)
    expect(view.byteOffset).toBe(8)
    const verified = await receiver().verify({ body: view, contentType: FORM })
    expect(verified.fields.buyer_name).toBe('Nur Aisyah \u00e9 \u{1F600}')
    expect(verified.fields.TRAILING).toBeUndefined()
  })

  it('accepts a Buffer', async () => {
    const verified = await receiver().verify({ body: Buffer.from(body), contentType: FORM })
    expect(verified.exchangeNumber).toBe('EX0000000001')
  })

  it('accepts an ArrayBuffer', async () => {
    const buffer = new TextEncoder().encode(body).buffer
    expect(buffer).toBeInstanceOf(ArrayBuffer)
    const verified = await receiver().verify({ body: buffer, contentType: FORM })
    expect(verified.fields.buyer_name).toBe('Nur Aisyah \u00e9 \u{1F600}')
  })

  it('accepts a string', async () => {
    const verified = await receiver().verify({ body, contentType: FORM })
    expect(verified.fields.buyer_name).toBe('Nur Aisyah \u00e9 \u{1F600}')
  })

  it('refuses an already-parsed object with 500 body_already_parsed and says how to fix it', async () => {
    const parsed = Object.fromEntries(new URLSearchParams(body))
    const error = await expectRefused({ body: parsed as unknown as string, contentType: FORM }, 'body_already_parsed', 500)
    expect(error.message).toMatch(/already.parsed/i)
    expect(error.message).toMatch(/before any body parser/i)
    expect(error.message).toMatch(/raw/i)
    expect(error.message).not.toContain(TOKEN)
  })

  it('runs no handler for an already-parsed body', async () => {
    const instance = receiver()
    let runs = 0
    instance.on('payment.succeeded', () => {
      runs++
    })
    const parsed = Object.fromEntries(new URLSearchParams(body))
    const response = await instance.handle({ kind: 'callback', body: parsed as unknown as string, contentType: FORM })
    expect(response.status).toBe(500)
    expect(response.error?.message).toMatch(/body parser/)
    expect(runs).toBe(0)
  })
})

describe('JSON bodies', () => {
  it('accepts a JSON object with nested params, booleans and null', async () => {
    const payload = {
      exchange_number: 'EX0000000002',
      order_number: 'ORD-1002',
      payment_status: 'false',
      transaction_amount: '0.00',
      redirect_post: true,
      retry_url: null,
      params: { reference1_label: 'Size', reference1: 'XL' },
    }
    // Sorted: exchange_number, order_number, params, payment_status, redirect_post, retry_url, transaction_amount
    const text = 'EX0000000002|ORD-1002|{"reference1_label"=>"Size", "reference1"=>"XL"}|false|true||0.00'
    const body = JSON.stringify({ ...payload, checksum: hmac(text) })
    const verified = await receiver().verify({ body, contentType: JSON_TYPE })
    expect(verified.rendering).toBe('ruby')
    expect(verified.state).toBe('failed')
    expect(verified.fields.redirect_post).toBe(true)
    expect(verified.fields.retry_url).toBeNull()
    expect({ ...(verified.fields.params as object) }).toEqual({ reference1_label: 'Size', reference1: 'XL' })
    expect(verified.payment.params).toEqual({ reference1_label: 'Size', reference1: 'XL' })

    // A hand-made shape like this one is not acted on without confirming it (docs/security.md): refused, not misread.
    const response = await receiver().handle({ kind: 'redirect', body, contentType: `${JSON_TYPE}; charset=utf-8` })
    expect([response.status, response.error?.code]).toEqual([400, 'needs_confirmation'])
    expect(response.payment?.orderNumber).toBe('ORD-1002')
  })

  it('accepts a flat JSON body', async () => {
    const body = JSON.stringify({ ...Object.fromEntries(BASE), checksum: hmac(BASE_TEXT) })
    const verified = await receiver().verify({ body, contentType: JSON_TYPE })
    expect(verified.rendering).toBe('plain')
    expect(verified.payment.amountSen).toBe(10020)
  })

  it.each([
    ['not JSON', '{"exchange_number": '],
    ['an array', '[1, 2]'],
    ['a string', '"text"'],
  ])('refuses a body that is %s with 400 malformed_body', async (_label, body) => {
    await expectRefused({ body, contentType: JSON_TYPE }, 'malformed_body', 400)
  })
})

describe('content types', () => {
  const body = signedForm(BASE)

  it.each(['text/plain', 'multipart/form-data; boundary=x', 'application/xml', undefined, null, ''])(
    'refuses content type %s with 415',
    async (contentType) => {
      await expectRefused({ body, contentType }, 'unsupported_media_type', 415)
    },
  )

  it.each(['iso-8859-1', 'windows-1252', 'utf-16', 'Shift_JIS'])('refuses charset %s with 415', async (charset) => {
    const error = await expectRefused({ body, contentType: `${FORM}; charset=${charset}` }, 'unsupported_media_type', 415)
    expect(error.message.toLowerCase()).toContain(charset.toLowerCase())
  })
})

describe('empty bodies and the query string', () => {
  const query = signedForm(BASE)

  it.each([
    ['a string without ?', query],
    ['a string with ?', `?${query}`],
    ['URLSearchParams', new URLSearchParams(query)],
  ])('uses the query string (%s) when the body is empty', async (_label, given) => {
    for (const body of ['', undefined, null, new Uint8Array(0), new ArrayBuffer(0)]) {
      const verified = await receiver().verify({ body, contentType: FORM, query: given })
      expect(verified.exchangeNumber).toBe('EX0000000001')
    }
  })

  it('ignores the query string when the body is not empty', async () => {
    const other = signedForm([['exchange_number', 'EX-FROM-QUERY'], ...BASE.slice(1)])
    const body = signedForm(BASE)
    const verified = await receiver().verify({ body, contentType: FORM, query: other })
    expect(verified.exchangeNumber).toBe('EX0000000001')
    // A query that would not even parse is not read either.
    const again = await receiver().verify({ body, contentType: FORM, query: 'x=%ZZ&x=1' })
    expect(again.exchangeNumber).toBe('EX0000000001')
  })

  it.each([
    ['no query', undefined],
    ['a null query', null],
    ['an empty query', ''],
    ['a bare ?', '?'],
    ['empty URLSearchParams', new URLSearchParams()],
  ])('refuses an empty body with %s: 400 empty_body', async (_label, query) => {
    await expectRefused({ body: '', contentType: FORM, query }, 'empty_body', 400)
    await expectRefused({ body: new Uint8Array(0), contentType: FORM, query }, 'empty_body', 400)
  })
})

describe('size limit', () => {
  it('refuses a string body over maxBodyBytes with 413', async () => {
    await expectRefused({ body: 'a'.repeat(101), contentType: FORM }, 'body_too_large', 413, { maxBodyBytes: 100 })
  })

  it('counts the bytes of a string body, not its characters', async () => {
    const body = `note=${'\u00e9'.repeat(60)}` // 65 characters, 125 bytes
    expect(body.length).toBeLessThan(100)
    await expectRefused({ body, contentType: FORM }, 'body_too_large', 413, { maxBodyBytes: 100 })
  })

  it('refuses a Buffer, Uint8Array or ArrayBuffer body over maxBodyBytes with 413', async () => {
    const bytes = Buffer.alloc(101, 0x61)
    await expectRefused({ body: bytes, contentType: FORM }, 'body_too_large', 413, { maxBodyBytes: 100 })
    await expectRefused({ body: new Uint8Array(bytes), contentType: FORM }, 'body_too_large', 413, { maxBodyBytes: 100 })
    await expectRefused({ body: new Uint8Array(bytes).buffer, contentType: FORM }, 'body_too_large', 413, {
      maxBodyBytes: 100,
    })
  })

  it('accepts a body of exactly maxBodyBytes', async () => {
    const body = signedForm(BASE)
    const limit = Buffer.byteLength(body)
    const verified = await receiver({ maxBodyBytes: limit }).verify({ body, contentType: FORM })
    expect(verified.exchangeNumber).toBe('EX0000000001')
    await expectRefused({ body: `${body}&`, contentType: FORM }, 'body_too_large', 413, { maxBodyBytes: limit })
  })

  it('defaults to 16 KiB: exactly 16384 bytes is read, one byte more gets 413', async () => {
    expect(DEFAULT_MAX_BODY_BYTES).toBe(16 * 1024)
    const withPadding = (padding: string) => signedForm([...BASE, ['padding', padding]])
    const room = 16384 - Buffer.byteLength(withPadding(''))
    const exact = withPadding('p'.repeat(room))
    expect(Buffer.byteLength(exact)).toBe(16384)
    const verified = await receiver().verify({ body: Buffer.from(exact), contentType: FORM })
    expect((verified.fields.padding as string).length).toBe(room)
    const string = await receiver().verify({ body: exact, contentType: FORM })
    expect(string.exchangeNumber).toBe('EX0000000001')

    const over = withPadding('p'.repeat(room + 1))
    expect(Buffer.byteLength(over)).toBe(16385)
    await expectRefused({ body: over, contentType: FORM }, 'body_too_large', 413)
    await expectRefused({ body: Buffer.from(over), contentType: FORM }, 'body_too_large', 413)
  })
})

describe('prototype-pollution names', () => {
  const special = [
    ['__proto__', 'polluted'],
    ['constructor', 'ctor'],
    ['prototype', 'proto'],
  ] as const

  function expectOwnFields(fields: Readonly<Record<string, unknown>>) {
    for (const [name, value] of special) {
      expect(Object.hasOwn(fields, name)).toBe(true)
      expect(Object.getOwnPropertyDescriptor(fields, name)?.value).toBe(value)
    }
  }

  function expectNoPollution(before: string[]) {
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(before)
    const probe: Record<string, unknown> = {}
    expect(probe.polluted).toBeUndefined()
    expect(Object.getPrototypeOf(probe)).toBe(Object.prototype)
    expect(typeof Object.prototype.constructor).toBe('function')
  }

  it('verifies a signed form with __proto__, constructor and prototype as ordinary own fields', async () => {
    const before = Object.getOwnPropertyNames(Object.prototype).sort()
    const body = signedForm([...special, ...BASE])
    const verified = await receiver().verify({ body, contentType: FORM })
    expectOwnFields(verified.fields)
    expectNoPollution(before)
  })

  it('never hands them to handlers: without confirmation a name the service does not send is refused', async () => {
    const before = Object.getOwnPropertyNames(Object.prototype).sort()
    const instance = receiver()
    const events: PaymentEvent[] = []
    instance.on('payment.succeeded', (event) => {
      events.push(event)
    })
    const response = await instance.handle({ kind: 'callback', body: signedForm([...special, ...BASE]), contentType: FORM })
    expect([response.status, response.error?.code]).toEqual([400, 'needs_confirmation'])
    expect(events).toHaveLength(0)
    expectNoPollution(before)
  })

  it('keeps a nested __proto__ object from JSON and from bracket names as data', async () => {
    const before = Object.getOwnPropertyNames(Object.prototype).sort()
    // Sorted: __proto__, exchange_number, order_number, params, payment_status, transaction_amount
    const text = '{"polluted"=>"yes"}|EX0000000001|ORD-1001|{"__proto__"=>{"polluted"=>"yes"}}|true|100.20'
    const json =
      '{"__proto__":{"polluted":"yes"},"params":{"__proto__":{"polluted":"yes"}},' +
      `"exchange_number":"EX0000000001","order_number":"ORD-1001","payment_status":"true","transaction_amount":"100.20",` +
      `"checksum":"${hmac(text)}"}`
    const fromJson = await receiver().verify({ body: json, contentType: JSON_TYPE })
    const form =
      `__proto__[polluted]=yes&params[__proto__][polluted]=yes&${formOf(BASE)}` +
      `&checksum=${hmac(text)}`
    const fromForm = await receiver().verify({ body: form, contentType: FORM })
    for (const verified of [fromJson, fromForm]) {
      expect(verified.rendering).toBe('ruby')
      const own = Object.getOwnPropertyDescriptor(verified.fields, '__proto__')?.value as Record<string, unknown>
      expect(own.polluted).toBe('yes')
      const params = verified.fields.params as Record<string, unknown>
      expect(Object.hasOwn(params, '__proto__')).toBe(true)
      expect((Object.getOwnPropertyDescriptor(params, '__proto__')?.value as Record<string, unknown>).polluted).toBe('yes')
    }
    expectNoPollution(before)
  })
})

describe('duplicate fields', () => {
  const signed = signedForm(BASE)

  it.each([
    ['a repeated name', 'note=1&note=2', 'note'],
    ['a name repeated after decoding', 'note=1&n%6Fte=2', 'note'],
    ['a repeated checksum', `checksum=${'0'.repeat(64)}`, 'checksum'],
    ['a repeated base field', 'exchange_number=EX0000000001', 'exchange_number'],
    ['a repeated bracket name', 'params[a]=1&params[a]=2', 'params[a]'],
    ['a scalar then a nested field of the same name', 'params=x&params[a]=y', 'params[a]'],
    ['a nested field then a scalar of the same name', 'params[a]=y&params=x', 'params'],
  ])('refuses %s in a form body with 400 duplicate_field', async (_label, pairs, name) => {
    const error = await expectRefused({ body: `${signed}&${pairs}`, contentType: FORM }, 'duplicate_field', 400)
    expect(error.fields).toEqual([name])
    expect(error.message).toContain(name)
  })

  it.each([
    ['a repeated top-level key', '"note":"1","note":"2"', 'note'],
    ['a repeated key written with an escape', '"note":"1","n\\u006fte":"2"', 'note'],
    ['a repeated key inside params', '"params":{"a":"1","a":"2"}', 'a'],
  ])('refuses %s in a JSON body with 400 duplicate_field', async (_label, members, name) => {
    const body = `{${members},"exchange_number":"EX0000000001","order_number":"ORD-1001","payment_status":"true","transaction_amount":"100.20","checksum":"${hmac(BASE_TEXT)}"}`
    const error = await expectRefused({ body, contentType: JSON_TYPE }, 'duplicate_field', 400)
    expect(error.fields).toEqual([name])
  })

  it('does not mistake equal keys in different objects for duplicates', async () => {
    // Sorted: a, exchange_number, order_number, params, payment_status, transaction_amount
    const text = '{"a"=>"inner"}|EX0000000001|ORD-1001|{"a"=>"inner"}|true|100.20'
    const body = JSON.stringify({ a: { a: 'inner' }, params: { a: 'inner' }, ...Object.fromEntries(BASE), checksum: hmac(text) })
    const verified = await receiver().verify({ body, contentType: JSON_TYPE })
    expect(verified.rendering).toBe('ruby')
  })
})

describe('nested params renderings', () => {
  const nestedPairs = 'params%5Breference1_label%5D=Size&params%5Breference1%5D=XL'
  const form = (checksum: string) => `${formOf(BASE)}&${nestedPairs}&checksum=${checksum}`
  const cases = [
    ['ruby', 'EX0000000001|ORD-1001|{"reference1_label"=>"Size", "reference1"=>"XL"}|true|100.20'],
    ['ruby34', 'EX0000000001|ORD-1001|{"reference1_label" => "Size", "reference1" => "XL"}|true|100.20'],
    // Flat bracket names are ordinary fields: params[reference1] (]) sorts before params[reference1_label] (_).
    ['flat', 'EX0000000001|ORD-1001|XL|Size|true|100.20'],
  ] as const

  it.each(cases)('accepts a form body signed with the %s rendering and says so in a debug log', async (rendering, text) => {
    const logger = logSpy()
    const instance = receiver({ logger })
    const verified = await instance.verify({ body: form(hmac(text)), contentType: FORM })
    expect(verified.rendering).toBe(rendering)
    expect({ ...(verified.fields.params as object) }).toEqual({ reference1_label: 'Size', reference1: 'XL' })
    const debug = logger.calls.filter((call) => call.level === 'debug')
    expect(debug).toHaveLength(1)
    expect(debug[0]!.details).toMatchObject({ rendering })
    expect(debug[0]!.message).toContain(rendering)
  })

  it('verifies with verifyDelivery() when the logger throws on that debug line', async () => {
    const broken = () => {
      throw new Error('log sink down')
    }
    const logger = { debug: broken, info: broken, warn: broken, error: broken }
    const [rendering, text] = cases[0]
    const verified = await verifyDelivery({ body: form(hmac(text)), contentType: FORM }, { checksumToken: TOKEN, logger })
    expect(verified.rendering).toBe(rendering)
  })

  it.each(cases)('dispatches a %s-signed result of the service’s shape with event.rendering set, or refuses it unpinned', async (rendering) => {
    const logger = logSpy()
    const instance = receiver({ logger })
    const events: PaymentEvent[] = []
    instance.on('payment.succeeded', (event) => {
      events.push(event)
    })
    const { body } = signCallback(samplePaymentFields({ params: { reference1_label: 'Size', reference1: 'XL' } }), TOKEN, { rendering })
    const response = await instance.handle({ kind: 'callback', body, contentType: FORM })
    expect(logger.calls.some((call) => call.level === 'debug' && call.message.includes(rendering))).toBe(true)
    if (rendering === 'flat') {
      // Signed one bracket name at a time, params' parts could stand under other names: not acted on unconfirmed.
      expect([response.status, response.error?.code]).toEqual([400, 'needs_confirmation'])
      return
    }
    expect(response.status).toBe(200)
    expect(events.map((event) => event.rendering)).toEqual([rendering])
  })

  it.each(cases)('accepts a JSON body with a params object signed with the %s rendering', async (rendering, text) => {
    const body = JSON.stringify({
      ...Object.fromEntries(BASE),
      params: { reference1_label: 'Size', reference1: 'XL' },
      checksum: hmac(text),
    })
    const verified = await receiver().verify({ body, contentType: JSON_TYPE })
    expect(verified.rendering).toBe(rendering)
  })

  it('accepts shipping_address signed with the Ruby 3.4 rendering', async () => {
    // Sorted: exchange_number, order_number, payment_status, shipping_address, transaction_amount
    const text = 'EX0000000001|ORD-1001|true|{"line1" => "1 Jalan Ampang", "city" => "Kuala Lumpur"}|100.20'
    const body =
      `${formOf(BASE)}&shipping_address[line1]=1+Jalan+Ampang` +
      `&shipping_address[city]=Kuala+Lumpur&checksum=${hmac(text)}`
    const verified = await receiver().verify({ body, contentType: FORM })
    expect(verified.rendering).toBe('ruby34')
    expect((verified.fields.shipping_address as Record<string, unknown>).city).toBe('Kuala Lumpur')
  })

  it('logs no rendering for a message without nested fields', async () => {
    const logger = logSpy()
    const verified = await receiver({ logger }).verify({ body: signedForm(BASE), contentType: FORM })
    expect(verified.rendering).toBe('plain')
    expect(logger.calls.filter((call) => call.level === 'debug')).toHaveLength(0)
  })

  it('refuses a hash rendered with its keys sorted instead of in received order', async () => {
    const sorted = 'EX0000000001|ORD-1001|{"reference1"=>"XL", "reference1_label"=>"Size"}|true|100.20'
    await expectRefused({ body: form(hmac(sorted)), contentType: FORM }, 'checksum_mismatch', 401)
  })
})

describe('the checksum field', () => {
  const withChecksum = (checksum: string) => `${formOf(BASE)}&checksum=${checksum}`

  it('accepts an uppercase hexadecimal checksum', async () => {
    const verified = await receiver().verify({ body: withChecksum(hmac(BASE_TEXT).toUpperCase()), contentType: FORM })
    expect(verified.exchangeNumber).toBe('EX0000000001')
  })

  it('refuses a message without a checksum with 401 checksum_missing', async () => {
    const body = formOf(BASE)
    await expectRefused({ body, contentType: FORM }, 'checksum_missing', 401)
  })

  it('refuses a wrong checksum with 401 checksum_mismatch', async () => {
    await expectRefused({ body: withChecksum(hmac(`${BASE_TEXT}|x`)), contentType: FORM }, 'checksum_mismatch', 401)
  })

  it.each([
    ['63 hex characters', 'a'.repeat(63)],
    ['65 hex characters', 'a'.repeat(65)],
    ['a non-hex character', `${'a'.repeat(63)}g`],
    ['an empty value', ''],
    ['surrounding spaces', `+${'a'.repeat(64)}+`],
    ['a 0x prefix', `0x${'a'.repeat(62)}`],
  ])('refuses a checksum with %s with 401 checksum_malformed, before looking up any token', async (_label, checksum) => {
    const lookups: string[] = []
    const options = {
      resolveChecksumToken: (uid: string) => {
        lookups.push(uid)
        return TOKEN
      },
    }
    const body = `${withChecksum(checksum)}&uid=u-1`
    await expectRefused({ body, contentType: FORM }, 'checksum_malformed', 401, options)
    expect(lookups).toEqual([])
  })

  it('does look the token up for a well-formed checksum (the spy above can observe lookups)', async () => {
    const lookups: string[] = []
    const instance = createReceiver({ signatureOnly: true,
      resolveChecksumToken: (uid) => {
        lookups.push(uid)
        return TOKEN
      },
    })
    // Sorted: exchange_number, order_number, payment_status, transaction_amount, uid
    const body = `${withChecksum(hmac(`${BASE_TEXT}|u-1`))}&uid=u-1`
    const verified = await instance.verify({ body, contentType: FORM })
    expect(verified.exchangeNumber).toBe('EX0000000001')
    expect(lookups).toEqual(['u-1'])
  })
})

describe('form and JSON bodies follow the same naming rules', () => {
  it('refuses a JSON body whose nested object clashes with a bracket name, as a form body is refused', async () => {
    const body = JSON.stringify({ ...Object.fromEntries(BASE), params: { a: '1' }, 'params[a]': '2', checksum: hmac(BASE_TEXT) })
    const error = await expectRefused({ body, contentType: JSON_TYPE }, 'duplicate_field', 400)
    expect(error.fields).toEqual(['params[a]'])
  })

  it('refuses an empty field name in a JSON body, as in a form body', async () => {
    const body = JSON.stringify({ ...Object.fromEntries(BASE), '': 'x', checksum: hmac(BASE_TEXT) })
    await expectRefused({ body, contentType: JSON_TYPE }, 'invalid_field_name', 400)
    await expectRefused({ body: `${signedForm(BASE)}&=x`, contentType: FORM }, 'invalid_field_name', 400)
  })

  it('treats bracket names in a JSON body as nested fields, so signCallback round-trips them', async () => {
    // Signed as a Ruby hash: the same as params: { a: 'x' }.
    const text = 'EX0000000001|ORD-1001|{"a"=>"x"}|true|100.20'
    const body = JSON.stringify({ ...Object.fromEntries(BASE), 'params[a]': 'x', checksum: hmac(text) })
    const verified = await receiver().verify({ body, contentType: JSON_TYPE })
    expect(verified.rendering).toBe('ruby')
    expect({ ...(verified.fields.params as object) }).toEqual({ a: 'x' })
  })

  it('signs a stray bracket in a name (nothing nested) as a plain message and logs no rendering', async () => {
    const logger = logSpy()
    const entries: (readonly [string, string])[] = [...BASE, ['a[b', 'x']]
    const verified = await receiver({ logger }).verify({ body: signedForm(entries), contentType: FORM })
    expect(verified.rendering).toBe('plain')
    expect(verified.fields['a[b']).toBe('x')
    expect(logger.calls.filter((call) => call.level === 'debug')).toHaveLength(0)
  })
})
