import { createHmac } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { type FieldInput, messageChecksum, type PaymentRequestChecksumFields, requestChecksum } from '../../src/index.js'
import { rubyInspectString } from '../../src/core/result/ruby-inspect.js'

const TOKEN = 'ab'.repeat(32)

/** The oracle: HMAC-SHA256 of a signed string written out by hand in each test, keyed by the token's text. */
function hmac(text: string, token: string = TOKEN): string {
  return createHmac('sha256', token).update(text, 'utf8').digest('hex')
}

/** Runs `fn` and returns what it threw (failing the test if it did not throw). */
function thrownBy(fn: () => unknown): Error {
  try {
    fn()
  } catch (error) {
    if (error instanceof Error) return error
    throw new Error(`threw a non-Error: ${String(error)}`, { cause: error })
  }
  throw new Error('expected the call to throw')
}

describe('requestChecksum (spec, Authentication 5)', () => {
  const request: PaymentRequestChecksumFields = {
    buyer_email: 'aisyah@example.com',
    buyer_name: 'Nur Aisyah binti Ahmad',
    buyer_phone: '+60123456789',
    callback_url: 'https://shop.example/fpx/callback',
    order_number: 'ORD-1001',
    product_description: 'Batik shirt, size XL',
    redirect_url: 'https://shop.example/fpx/return',
    transaction_amount: '100.20',
    uid: '6f1c2a4e-8b3d-4f7a-9c2e-1d5b7a9e3f10',
  }
  const required = [
    'buyer_email',
    'buyer_name',
    'buyer_phone',
    'order_number',
    'product_description',
    'transaction_amount',
    'uid',
  ] as const

  it('signs the nine values in the fixed order, joined by |', () => {
    const text =
      'aisyah@example.com|Nur Aisyah binti Ahmad|+60123456789|https://shop.example/fpx/callback|ORD-1001|' +
      'Batik shirt, size XL|https://shop.example/fpx/return|100.20|6f1c2a4e-8b3d-4f7a-9c2e-1d5b7a9e3f10'
    expect(requestChecksum(request, TOKEN)).toBe(hmac(text))
  })

  it('uses the fixed order, not the order of the object keys', () => {
    const reversed = Object.fromEntries(Object.entries(request).reverse()) as unknown as PaymentRequestChecksumFields
    expect(Object.keys(reversed)[0]).toBe('uid')
    expect(requestChecksum(reversed, TOKEN)).toBe(requestChecksum(request, TOKEN))
  })

  it('writes absent callback_url and redirect_url as empty segments (omitted, undefined, null or empty)', () => {
    const text =
      'aisyah@example.com|Nur Aisyah binti Ahmad|+60123456789||ORD-1001|Batik shirt, size XL||100.20|' +
      '6f1c2a4e-8b3d-4f7a-9c2e-1d5b7a9e3f10'
    const { callback_url: _callback, redirect_url: _redirect, ...withoutUrls } = request
    expect(requestChecksum(withoutUrls, TOKEN)).toBe(hmac(text))
    expect(requestChecksum({ ...request, callback_url: undefined, redirect_url: undefined }, TOKEN)).toBe(hmac(text))
    expect(requestChecksum({ ...request, callback_url: null, redirect_url: null }, TOKEN)).toBe(hmac(text))
    expect(requestChecksum({ ...request, callback_url: '', redirect_url: '' }, TOKEN)).toBe(hmac(text))
  })

  it('keeps the position of each URL when only one is absent', () => {
    const noCallback =
      'aisyah@example.com|Nur Aisyah binti Ahmad|+60123456789||ORD-1001|Batik shirt, size XL|' +
      'https://shop.example/fpx/return|100.20|6f1c2a4e-8b3d-4f7a-9c2e-1d5b7a9e3f10'
    const noRedirect =
      'aisyah@example.com|Nur Aisyah binti Ahmad|+60123456789|https://shop.example/fpx/callback|ORD-1001|' +
      'Batik shirt, size XL||100.20|6f1c2a4e-8b3d-4f7a-9c2e-1d5b7a9e3f10'
    expect(requestChecksum({ ...request, callback_url: undefined }, TOKEN)).toBe(hmac(noCallback))
    expect(requestChecksum({ ...request, redirect_url: undefined }, TOKEN)).toBe(hmac(noRedirect))
    expect(hmac(noCallback)).not.toBe(hmac(noRedirect))
  })

  it('does not sign partner_uid (nor any other extra field such as token)', () => {
    const partnerRequest = { ...request, partner_uid: 'partner-0042', token: 'AUTHTOKEN1234567890a' }
    expect(requestChecksum(partnerRequest, TOKEN)).toBe(requestChecksum(request, TOKEN))
  })

  it('returns 64 lowercase hexadecimal characters', () => {
    const checksum = requestChecksum(request, TOKEN)
    expect(checksum).toMatch(/^[0-9a-f]{64}$/)
  })

  it('depends on the Checksum Token', () => {
    expect(requestChecksum(request, 'cd'.repeat(32))).toBe(
      hmac(
        'aisyah@example.com|Nur Aisyah binti Ahmad|+60123456789|https://shop.example/fpx/callback|ORD-1001|' +
          'Batik shirt, size XL|https://shop.example/fpx/return|100.20|6f1c2a4e-8b3d-4f7a-9c2e-1d5b7a9e3f10',
        'cd'.repeat(32),
      ),
    )
    expect(requestChecksum(request, 'cd'.repeat(32))).not.toBe(requestChecksum(request, TOKEN))
  })

  it.each(required)('throws a TypeError naming %s when it is missing, and never shows the token', (name) => {
    const missing = Object.fromEntries(Object.entries(request).filter(([key]) => key !== name))
    const error = thrownBy(() => requestChecksum(missing as unknown as PaymentRequestChecksumFields, TOKEN))
    expect(error).toBeInstanceOf(TypeError)
    expect(error.message).toContain(name)
    expect(error.message).not.toContain(TOKEN)
    expect(String(error.stack)).not.toContain(TOKEN)

    const nulled = { ...request, [name]: null } as unknown as PaymentRequestChecksumFields
    const nullError = thrownBy(() => requestChecksum(nulled, TOKEN))
    expect(nullError).toBeInstanceOf(TypeError)
    expect(nullError.message).toContain(name)
    expect(nullError.message).not.toContain(TOKEN)
  })

  it('throws a TypeError for a value that is not text, without the token in the message', () => {
    const numeric = { ...request, transaction_amount: 100.2 } as unknown as PaymentRequestChecksumFields
    const error = thrownBy(() => requestChecksum(numeric, TOKEN))
    expect(error).toBeInstanceOf(TypeError)
    expect(error.message).toContain('transaction_amount')
    expect(error.message).not.toContain(TOKEN)
  })

  it('throws a TypeError for an empty or missing token', () => {
    for (const token of ['', undefined, null, 42]) {
      const error = thrownBy(() => requestChecksum(request, token as unknown as string))
      expect(error).toBeInstanceOf(TypeError)
      expect(error.message).toMatch(/checksumToken/)
    }
  })
})

describe('messageChecksum (spec, Authentication 6)', () => {
  const base = {
    payment_status: 'true',
    exchange_number: 'EX0000000001',
    transaction_amount: '100.20',
    order_number: 'ORD-1001',
  }
  const baseText = 'EX0000000001|ORD-1001|true|100.20'

  it('signs every field but checksum, sorted by name, values joined by |', () => {
    expect(messageChecksum(base, TOKEN)).toBe(hmac(baseText))
    expect(messageChecksum({ ...base, checksum: 'f'.repeat(64) }, TOKEN)).toBe(hmac(baseText))
    expect(messageChecksum(base, TOKEN)).toMatch(/^[0-9a-f]{64}$/)
  })

  it('sorts names in byte order, not with localeCompare (capitals, underscores, digits)', () => {
    const names = ['b', 'a_b', 'B', 'ab', '_z', 'aB', '9', 'Z_', 'a1', 'A']
    const byteOrder = ['9', 'A', 'B', 'Z_', '_z', 'a1', 'aB', 'a_b', 'ab', 'b']
    // The test data must discriminate: localeCompare orders these names differently.
    expect(names.slice().sort((a, b) => a.localeCompare(b))).not.toEqual(byteOrder)
    const fields = Object.fromEntries(names.map((name) => [name, `v${name}`]))
    expect(messageChecksum(fields, TOKEN)).toBe(hmac('v9|vA|vB|vZ_|v_z|va1|vaB|va_b|vab|vb'))
  })

  it('sorts unicode names by UTF-8 bytes, where UTF-16 code unit order differs (U+1F600 vs U+FF21)', () => {
    const emoji = '\u{1F600}'
    const fullwidthA = '\uFF21'
    // In UTF-16 the emoji (a surrogate pair starting 0xD83D) sorts below U+FF21; in UTF-8 (F0 ... vs EF ...) above.
    expect([fullwidthA, emoji].sort()).toEqual([emoji, fullwidthA])
    expect(Buffer.compare(Buffer.from(fullwidthA), Buffer.from(emoji))).toBe(-1)

    const fields = {
      [emoji]: 'emoji',
      z: 'z',
      [`a${emoji}`]: 'a-emoji',
      '\u00e9': 'e-acute',
      [fullwidthA]: 'fullwidth-A',
      [`a${fullwidthA}`]: 'a-fullwidth-A',
    }
    // Byte order: aＡ (61 EF..) < a😀 (61 F0..) < z (7A) < é (C3 A9) < Ａ (EF BC A1) < 😀 (F0 9F 98 80)
    const text = 'a-fullwidth-A|a-emoji|z|e-acute|fullwidth-A|emoji'
    expect(messageChecksum(fields, TOKEN)).toBe(hmac(text))
  })

  it('signs unicode values as UTF-8', () => {
    const fields = { ...base, buyer_name: 'Siti Nurhaliza \u00e9\u4e2d\u{1F600}' }
    expect(messageChecksum(fields, TOKEN)).toBe(hmac('Siti Nurhaliza \u00e9\u4e2d\u{1F600}|EX0000000001|ORD-1001|true|100.20'))
  })

  it('includes a new, unknown field at its sorted position, which changes the checksum', () => {
    const withNew = { ...base, fpx_new_field: 'added-later' }
    const withCapital = { ...base, Zeta: 'first' }
    expect(messageChecksum(withNew, TOKEN)).toBe(hmac('EX0000000001|added-later|ORD-1001|true|100.20'))
    expect(messageChecksum(withCapital, TOKEN)).toBe(hmac('first|EX0000000001|ORD-1001|true|100.20'))
    expect(messageChecksum(withNew, TOKEN)).not.toBe(messageChecksum(base, TOKEN))
  })

  it('writes booleans as true/false and null as empty text; undefined fields are left out', () => {
    const fields = { exchange_number: 'EX1', flag_true: true, flag_false: false, nothing: null, skipped: undefined }
    expect(messageChecksum(fields, TOKEN)).toBe(hmac('EX1|false|true|'))
  })

  it('accepts a Map of fields', () => {
    const fields = new Map<string, FieldInput>(Object.entries(base))
    expect(messageChecksum(fields, TOKEN)).toBe(hmac(baseText))
  })

  it('throws a TypeError for an empty token', () => {
    const error = thrownBy(() => messageChecksum(base, ''))
    expect(error).toBeInstanceOf(TypeError)
  })

  describe('nested params', () => {
    const nested = { ...base, params: { reference1_label: 'Size', reference1: 'XL' } }
    const classic = 'EX0000000001|ORD-1001|{"reference1_label"=>"Size", "reference1"=>"XL"}|true|100.20'
    const ruby34 = 'EX0000000001|ORD-1001|{"reference1_label" => "Size", "reference1" => "XL"}|true|100.20'
    // params[reference1] sorts before params[reference1_label]: "]" is 0x5D, "_" is 0x5F.
    const flat = 'EX0000000001|ORD-1001|XL|Size|true|100.20'

    it('renders classic Ruby Hash#inspect by default, keys in received order', () => {
      expect(messageChecksum(nested, TOKEN)).toBe(hmac(classic))
      expect(messageChecksum(nested, TOKEN, { rendering: 'ruby' })).toBe(hmac(classic))
    })

    it('renders Ruby 3.4 Hash#inspect with spaces around =>', () => {
      expect(messageChecksum(nested, TOKEN, { rendering: 'ruby34' })).toBe(hmac(ruby34))
    })

    it('renders flat bracket names as ordinary fields', () => {
      expect(messageChecksum(nested, TOKEN, { rendering: 'flat' })).toBe(hmac(flat))
    })

    it('treats bracket-named fields (params[reference1]) as the same message as the nested object', () => {
      const bracketed = { ...base, 'params[reference1_label]': 'Size', 'params[reference1]': 'XL' }
      expect(messageChecksum(bracketed, TOKEN, { rendering: 'flat' })).toBe(hmac(flat))
      expect(messageChecksum(bracketed, TOKEN, { rendering: 'ruby' })).toBe(hmac(classic))
      expect(messageChecksum(bracketed, TOKEN, { rendering: 'ruby34' })).toBe(hmac(ruby34))
    })

    it('gives three different checksums for the three renderings', () => {
      const all = new Set(
        (['ruby', 'ruby34', 'flat'] as const).map((rendering) => messageChecksum(nested, TOKEN, { rendering })),
      )
      expect(all.size).toBe(3)
    })

    it('keeps received key order inside the hash rather than sorting it', () => {
      const fields = { exchange_number: 'EX1', params: { b: '2', a: '1' } }
      expect(messageChecksum(fields, TOKEN)).toBe(hmac('EX1|{"b"=>"2", "a"=>"1"}'))
      const asMap = { exchange_number: 'EX1', params: new Map([['b', '2'], ['a', '1']]) }
      expect(messageChecksum(asMap, TOKEN)).toBe(hmac('EX1|{"b"=>"2", "a"=>"1"}'))
    })

    it('escapes strings inside the hash and writes true/false/nil for JSON scalars', () => {
      const fields = { exchange_number: 'EX1', params: { note: 'say "hi" #{x}', gift: true, extra: null } }
      expect(messageChecksum(fields, TOKEN)).toBe(hmac('EX1|{"note"=>"say \\"hi\\" \\#{x}", "gift"=>true, "extra"=>nil}'))
      expect(messageChecksum(fields, TOKEN, { rendering: 'ruby34' })).toBe(
        hmac('EX1|{"note" => "say \\"hi\\" \\#{x}", "gift" => true, "extra" => nil}'),
      )
    })

    it('renders shipping_address and billing_address the same way', () => {
      const fields = {
        exchange_number: 'EX1',
        shipping_address: { line1: '1 Jalan Ampang', city: 'Kuala Lumpur' },
        billing_address: { postcode: '50450' },
      }
      expect(messageChecksum(fields, TOKEN)).toBe(
        hmac('{"postcode"=>"50450"}|EX1|{"line1"=>"1 Jalan Ampang", "city"=>"Kuala Lumpur"}'),
      )
      // flat: billing_address[postcode] | exchange_number | shipping_address[city] | shipping_address[line1]
      expect(messageChecksum(fields, TOKEN, { rendering: 'flat' })).toBe(hmac('50450|EX1|Kuala Lumpur|1 Jalan Ampang'))
    })

    it('ignores the rendering option when nothing is nested', () => {
      for (const rendering of ['ruby', 'ruby34', 'flat'] as const)
        expect(messageChecksum(base, TOKEN, { rendering })).toBe(hmac(baseText))
    })
  })
})

describe('rubyInspectString (String#inspect)', () => {
  it.each([
    ['plain text', 'abc', '"abc"'],
    ['empty', '', '""'],
    ['double quotes', 'say "hi"', '"say \\"hi\\""'],
    ['backslash', 'a\\b', '"a\\\\b"'],
    ['newline', 'a\nb', '"a\\nb"'],
    ['tab', 'a\tb', '"a\\tb"'],
    ['carriage return', 'a\rb', '"a\\rb"'],
    ['escape', '\u001b[0m', '"\\e[0m"'],
    ['bell, backspace, vertical tab, form feed', '\u0007\b\u000b\f', '"\\a\\b\\v\\f"'],
    ['#{ (interpolation)', 'a#{b}', '"a\\#{b}"'],
    ['#$ (global interpolation)', '#$x', '"\\#$x"'],
    ['#@ (ivar interpolation)', '#@x', '"\\#@x"'],
    ['# not followed by { $ @', '#1 # #', '"#1 # #"'],
    ['# at the end', 'tag#', '"tag#"'],
    ['control character U+0001', 'a\u0001b', '"a\\u0001b"'],
    ['NUL', '\u0000', '"\\u0000"'],
    ['DEL', '\u007f', '"\\u007F"'],
    ['C1 control U+0085', '\u0085', '"\\u0085"'],
    ['line separator U+2028', '\u2028', '"\\u2028"'],
    ['non-ASCII printable kept', 'caf\u00e9 \u4e2d\u6587 \uFF21 \u{1F600}', '"caf\u00e9 \u4e2d\u6587 \uFF21 \u{1F600}"'],
    ['no-break space kept', 'a\u00a0b', '"a\u00a0b"'],
    ['mixed', 'x"\\\n#{', '"x\\"\\\\\\n\\#{"'],
  ])('%s', (_label, input, expected) => {
    expect(rubyInspectString(input)).toBe(expected)
  })
})
