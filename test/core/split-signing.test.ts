/**
 * A query's splits hashed out of the whole message's signed bytes (core/result/split-signing.ts), checked against
 * the plain HMAC of each split's own signed string: the split's message signed on its own, and an oracle that
 * shares no code with the package (URLSearchParams, sort by UTF-8 bytes, join, createHmac).
 */
import { createHmac } from 'node:crypto'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { asciiBytes } from '../../src/core/result/body.js'
import { decodeForm, signedValueStarts } from '../../src/core/result/form.js'
import { type Message, toMessage } from '../../src/core/result/message.js'
import { ShapeCache } from '../../src/core/result/shape.js'
import { keptRanges, SplitSigner, splitSigner } from '../../src/core/result/split-signing.js'
import { signedSuffixes } from '../../src/core/result/unsigned-query.js'
import { hmacSha256Hex } from '../../src/core/hmac.js'

const TOKENS = ['ab'.repeat(32), 'another token', 'k'.repeat(131)]

const encode = (text: string) => encodeURIComponent(text).replace(/%20/g, '+')

/** The HMAC of the fields after the first `skip`, from the query text alone. */
function oracle(token: string, text: string, skip: number): string {
  const pairs = [...new URLSearchParams(text)].slice(skip).filter(([name]) => name !== 'checksum')
  pairs.sort(([a], [b]) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')))
  return createHmac('sha256', token).update(pairs.map(([, value]) => value).join('|'), 'utf8').digest('hex')
}

/** The whole query's message and its signed bytes with their value starts, as the plain check leaves them. */
function signedWhole(text: string): { whole: Message; signed: Buffer; starts: Int32Array } {
  const whole = toMessage(decodeForm(text, asciiBytes(text)), new ShapeCache())
  const [only] = whole.signedTexts()
  const signed = only?.data
  if (!Buffer.isBuffer(signed)) throw new Error('a flat query is signed from its bytes (it is ASCII once form-encoded)')
  return { whole, signed, starts: signedValueStarts(signed) as Int32Array }
}

// Names that sort before, between and after the service's, and values with escapes, `+`, `|` and non-ASCII text.
const name = fc.oneof(
  fc.constantFrom('0a', 'A', '_x', 'amount', 'lang', 'order_number', 'shop', 'zz', '~', 'exchange_number', 'checksum', 'id'),
  fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 6 }),
  fc.string({ minLength: 1, maxLength: 4 }),
).filter((field) => !field.includes('[')) // a bracket makes a nested message, which is never a view
const value = fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('', '|', 'a+b', '100.20', 'é', '\u{1F600}'), fc.string({ unit: 'grapheme', maxLength: 30 }))
const fields = fc.uniqueArray(fc.tuple(name, value), { minLength: 1, maxLength: 14, selector: ([field]) => field })
/** Fields cut into the URL's own leading ones and the service's. */
const cut = fields.chain((pairs) => fc.nat(pairs.length).map((at) => [pairs.slice(0, at), pairs.slice(at)] as const))
const queryOf = (pairs: readonly (readonly [string, string])[]) => pairs.map(([field, text]) => `${encode(field)}=${encode(text)}`).join('&')

describe('SplitSigner', () => {
  it('gives the HMAC of the fields after any number of leading ones, for any names, values and keys', () => {
    fc.assert(
      fc.property(fields, fc.constantFrom(...TOKENS), (pairs, token) => {
        const text = queryOf(pairs)
        const { whole, signed, starts } = signedWhole(text)
        const skips = Array.from({ length: pairs.length + 1 }, (_, skip) => skip)
        const signer = new SplitSigner(signed, starts, whole.shape.signedOrder, skips)
        // Skip 0 is the whole message, which the plain check signs.
        expect(signer.hmacHex(token, 0)).toBe(hmacSha256Hex(token, signed))
        for (const skip of skips) expect([skip, signer.hmacHex(token, skip)]).toEqual([skip, oracle(token, text, skip)])
        expect(signer.current).toBe(true)
      }),
      { numRuns: 300 },
    )
  })

  it('agrees with each planned split signed on its own, and its match with the plain comparison, with several keys', () => {
    let views = 0
    fc.assert(
      fc.property(cut, fc.boolean(), ([own, service], genuine) => {
        const text = [queryOf(own), queryOf(service)].filter((part) => part !== '').join('&')
        const { whole } = signedWhole(text)
        const texts = whole.signedTexts()
        const suffixes = signedSuffixes(text, whole)
        const skips = suffixes.flatMap((suffix) => (suffix.skip === undefined ? [] : [suffix.skip]))
        const signer = splitSigner(whole, texts, skips)
        if (skips.length === 0) {
          expect(signer).toBeUndefined()
          return
        }
        views += skips.length
        const keys = TOKENS.map((token, index) => ({ token, credential: { uid: `u${index}`, index, by: 'checksum' as const } }))
        // The last planned split's genuine checksum under the last key, or one nobody made.
        const last = skips[skips.length - 1] as number
        const checksum = genuine ? oracle(TOKENS[2] as string, text, last) : '0'.repeat(64)
        const fromWhole = skips.map((skip) => [skip, TOKENS.map((token) => (signer as SplitSigner).hmacHex(token, skip)), signer?.match(skip, checksum, keys)])
        // Signing a split on its own overwrites the whole's bytes: the signer says so.
        const plain = suffixes.flatMap((suffix) => {
          if (suffix.skip === undefined) return []
          const [data] = suffix.message().signedTexts().map((candidate) => candidate.data)
          const match = TOKENS.findIndex((token) => hmacSha256Hex(token, data as Buffer) === checksum)
          return [[suffix.skip, TOKENS.map((token) => hmacSha256Hex(token, data as Buffer)), match < 0 ? undefined : { rendering: 'plain', credential: keys[match]?.credential }]]
        })
        expect(signer?.current).toBe(false)
        expect(fromWhole).toEqual(plain)
        if (genuine) expect(fromWhole.at(-1)?.[2]).toEqual({ rendering: 'plain', credential: keys[2]?.credential })
      }),
      { numRuns: 300 },
    )
    expect(views).toBeGreaterThan(100)
  })

  it('cuts each left-out value out with one separator, wherever it sorts', () => {
    // shop and lang sort among the service names; 0a and 0b before them all.
    for (const [text, expected] of [
      ['shop=42&lang=ms&amount=100.20&buyer_name=Aisyah&checksum=00&uid=u1', ['100.20|Aisyah|ms|u1', '100.20|Aisyah|u1']],
      ['0a=1&0b=2&amount=100.20&checksum=00&uid=u1', ['2|100.20|u1', '100.20|u1']],
      ['zz=1&yy=2&amount=100.20&checksum=00', ['100.20|2', '100.20']],
      ['a=&b=&c=', ['|', '']],
    ] as const) {
      const { whole, signed, starts } = signedWhole(text)
      const order = whole.shape.signedOrder
      const spelled = [1, 2].map((skip) => {
        const ranges = keptRanges(order.flatMap((position, rank) => (position < skip ? [rank] : [])), starts, order.length, signed.length)
        return ranges.map((_, i) => (i % 2 === 0 ? signed.toString('utf8', ranges[i], ranges[i + 1]) : '')).join('')
      })
      expect([text, spelled]).toEqual([text, expected])
    }
  })

  it('is not current once another message was signed, even by a signing that failed half-way', () => {
    const { whole, signed, starts } = signedWhole('shop=1&amount=2&uid=3&checksum=00')
    const signer = new SplitSigner(signed, starts, whole.shape.signedOrder, [1])
    expect(signer.current).toBe(true)
    const broken = toMessage(decodeForm('a=xxxxxxxx&b=%zz', asciiBytes('a=xxxxxxxx&b=%zz')), new ShapeCache())
    expect(() => broken.signedTexts()).toThrow(/percent-encoding/)
    expect(signer.current).toBe(false)
  })

  it('is not made for a nested message, a non-ASCII query or no split that is a view', () => {
    const nested = 'shop=1&params[a]=1&amount=2&checksum=00'
    const { whole: message } = { whole: toMessage(decodeForm(nested, asciiBytes(nested)), new ShapeCache()) }
    expect(splitSigner(message, message.signedTexts(), [1])).toBeUndefined()
    const wide = 'shop=é&amount=2&checksum=00'
    const plain = toMessage(decodeForm(wide, asciiBytes(wide)), new ShapeCache())
    expect(splitSigner(plain, plain.signedTexts(), [1])).toBeUndefined()
    const ascii = signedWhole('shop=1&amount=2&checksum=00').whole
    expect(splitSigner(ascii, ascii.signedTexts(), [])).toBeUndefined()
    expect(splitSigner(ascii, ascii.signedTexts(), [1])).toBeInstanceOf(SplitSigner)
  })
})
