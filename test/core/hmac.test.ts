import { createHmac, randomBytes } from 'node:crypto'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { hexDigestsEqual, hmacSha256Hex, hmacSha256HexOfRanges } from '../../src/core/hmac.js'

const oracle = (key: string, data: string | Uint8Array) => createHmac('sha256', key).update(data).digest('hex')

describe('hmacSha256Hex', () => {
  it('matches RFC 4231 test case 2 (short key)', () => {
    expect(hmacSha256Hex('Jefe', 'what do ya want for nothing?')).toBe(
      '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
    )
  })

  it('matches RFC 4231 test case 6 (a key longer than one block is hashed first)', () => {
    const key = '\xaa'.repeat(131)
    // The RFC's key is 131 bytes of 0xaa; as a UTF-8 string of U+00AA it is 262 bytes, so compare with the oracle.
    expect(hmacSha256Hex(key, 'Test Using Larger Than Block-Size Key - Hash Key First')).toBe(
      oracle(key, 'Test Using Larger Than Block-Size Key - Hash Key First'),
    )
    expect(hmacSha256Hex('k'.repeat(131), 'Test Using Larger Than Block-Size Key - Hash Key First')).toBe(
      oracle('k'.repeat(131), 'Test Using Larger Than Block-Size Key - Hash Key First'),
    )
  })

  it('agrees with createHmac for any key, text or bytes, including keys that alternate and data that outgrows the buffer', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 100 }), fc.string({ maxLength: 3000 }), fc.uint8Array({ maxLength: 9000 }), (key, text, bytes) => {
        expect(hmacSha256Hex(key, text)).toBe(oracle(key, text))
        expect(hmacSha256Hex('another key', text)).toBe(oracle('another key', text))
        expect(hmacSha256Hex(key, bytes)).toBe(oracle(key, bytes))
      }),
      { numRuns: 200 },
    )
  })

  it('stays right with more keys than it keeps padded', () => {
    const keys = Array.from({ length: 40 }, () => randomBytes(20).toString('hex'))
    for (let round = 0; round < 2; round++)
      for (const key of keys) expect(hmacSha256Hex(key, `message for ${key}`)).toBe(oracle(key, `message for ${key}`))
  })
})

describe('hmacSha256Hex beyond the reused buffer', () => {
  it('agrees with createHmac for messages past 64 KiB, and for non-ASCII keys and text of any length', () => {
    const long = 'é'.repeat(40_000)
    expect(hmacSha256Hex('token', long)).toBe(oracle('token', long))
    expect(hmacSha256Hex('token', Buffer.alloc(70_000, 7))).toBe(oracle('token', Buffer.alloc(70_000, 7)))
    // and the short path still works after a long message went around it
    expect(hmacSha256Hex('token', 'short')).toBe(oracle('token', 'short'))
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 100 }), fc.string({ unit: 'binary', maxLength: 300 }), (key, text) => {
        expect(hmacSha256Hex(key, text)).toBe(oracle(key, text))
      }),
    )
  })
})

describe('hmacSha256HexOfRanges', () => {
  /** Pieces of `source` as [from, to) pairs, in any order, overlapping or empty. */
  const pieces = (length: number) => fc.array(fc.tuple(fc.nat(length), fc.nat(length)).map(([a, b]) => [Math.min(a, b), Math.max(a, b)] as const), { maxLength: 6 })
  const joined = (source: Buffer, ranges: readonly (readonly [number, number])[]) => Buffer.concat(ranges.map(([from, to]) => source.subarray(from, to)))

  it('agrees with createHmac over the pieces joined, for any key, and beside the one-shot HMAC of other keys', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 100 }), fc.uint8Array({ maxLength: 3000 }).chain((bytes) => fc.tuple(fc.constant(Buffer.from(bytes)), pieces(bytes.length))), (key, [source, ranges]) => {
        expect(hmacSha256HexOfRanges(key, source, ranges.flat())).toBe(oracle(key, joined(source, ranges)))
        expect(hmacSha256Hex('another key', source)).toBe(oracle('another key', source))
        expect(hmacSha256HexOfRanges(key, source, ranges.flat())).toBe(oracle(key, joined(source, ranges)))
      }),
      { numRuns: 200 },
    )
  })

  it('agrees with createHmac for pieces that outgrow the reused buffer, and a key longer than a block', () => {
    const source = Buffer.from(Array.from({ length: 50_000 }, (_, i) => i % 251))
    const ranges = [0, 50_000, 10, 40_000] as const
    const whole = Buffer.concat([source, source.subarray(10, 40_000)])
    for (const key of ['token', 'k'.repeat(131)]) expect(hmacSha256HexOfRanges(key, source, ranges)).toBe(oracle(key, whole))
    expect(hmacSha256HexOfRanges('token', source, [])).toBe(oracle('token', ''))
  })
})

describe('hexDigestsEqual', () => {
  it('refuses characters that are not hex digits even where | 0x20 would map them onto one', () => {
    const digest = oracle('k', 'm')
    // U+0010..U+0019 | 0x20 gives '0'..'9'
    const disguised = [...digest].map((c) => (c >= '0' && c <= '9' ? String.fromCharCode(c.charCodeAt(0) - 0x20) : c)).join('')
    expect(disguised).not.toBe(digest)
    expect(hexDigestsEqual(digest, disguised)).toBe(false)
  })

  const digest = oracle('key', 'message')

  it('refuses a digest with any one character that is not a hex digit, wherever it is', () => {
    const strangers = ['g', 'G', 'z', ' ', '`', '@', '/', ':', '\u0000', '\u0010', '\u0019', '\u007f', '\u0080', '\u0130', '\uff10', '\ud83d']
    for (let i = 0; i < digest.length; i++)
      for (const stranger of strangers) expect(hexDigestsEqual(digest, digest.slice(0, i) + stranger + digest.slice(i + 1))).toBe(false)
  })

  it('accepts the same digest, in lower or upper case', () => {
    expect(hexDigestsEqual(digest, digest)).toBe(true)
    expect(hexDigestsEqual(digest, digest.toUpperCase())).toBe(true)
  })

  it('refuses a digest that differs in any one position, by any hex digit', () => {
    for (let i = 0; i < digest.length; i++) {
      for (const digit of '0123456789abcdefABCDEF') {
        if (digit.toLowerCase() === digest[i]) continue
        const altered = digest.slice(0, i) + digit + digest.slice(i + 1)
        expect(hexDigestsEqual(digest, altered)).toBe(false)
      }
    }
  })

  it('refuses another length', () => {
    expect(hexDigestsEqual(digest, digest.slice(1))).toBe(false)
    expect(hexDigestsEqual(digest, `${digest}0`)).toBe(false)
    expect(hexDigestsEqual(digest, '')).toBe(false)
  })

  it('does the same work wherever the strings differ: no early exit', () => {
    // Not a timing measurement (those belong in bench/): the comparison reads every character of both strings,
    // counted through a proxy string object, whether the first or the last character differs.
    const reads = (received: string): number => {
      let count = 0
      const counting = new Proxy(new String(received), {
        get(target, property) {
          if (property === 'charCodeAt')
            return (i: number) => {
              count++
              return target.charCodeAt(i)
            }
          if (property === 'length') return target.length
          // toString / valueOf (the hex-digit check reads the string as a whole) run on the real string object
          const value: unknown = Reflect.get(target, property)
          return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
        },
      }) as unknown as string
      hexDigestsEqual(digest, counting)
      return count
    }
    const flip = (i: number) => digest.slice(0, i) + (digest[i] === '0' ? '1' : '0') + digest.slice(i + 1)
    expect(reads(digest)).toBe(64)
    expect(reads(flip(0))).toBe(64)
    expect(reads(flip(63))).toBe(64)
  })
})
