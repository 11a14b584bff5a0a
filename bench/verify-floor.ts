/**
 * The floor for bench:verify: the least work JavaScript can do to authenticate a callback, hand-tuned and
 * with no validation at all. It finds the fields in the raw bytes, checks the names are the ones seen last time
 * (so it sorts once per shape, as any fast verifier would), writes the values in signing order into a reused
 * buffer decoding `+` and `%XX` on the way, and compares the HMAC with the received checksum. No strings are made
 * per delivery. It refuses nothing a real receiver must refuse (bad escapes, non-UTF-8, missing fields, bad
 * amounts): it is a lower bound on cost, not a verifier.
 */
import { createHash, createHmac, type Hash, timingSafeEqual } from 'node:crypto'

const AMPERSAND = 38
const EQUALS = 61
const PERCENT = 37
const PLUS = 43
const PIPE = 124
const SPACE = 32

const HEX = new Int8Array(256).fill(-1)
for (let digit = 0; digit < 16; digit++) {
  HEX[digit.toString(16).charCodeAt(0)] = digit
  HEX[digit.toString(16).toUpperCase().charCodeAt(0)] = digit
}

/** HMAC-SHA256 with the key's inner and outer pad states hashed once, copied per message. */
export class PadHmac {
  private readonly inner: Hash
  private readonly outer: Hash
  constructor(key: string) {
    let bytes = Buffer.from(key, 'utf8')
    if (bytes.length > 64) bytes = createHash('sha256').update(bytes).digest()
    const block = Buffer.alloc(64)
    bytes.copy(block)
    this.inner = createHash('sha256').update(block.map((byte) => byte ^ 0x36))
    this.outer = createHash('sha256').update(block.map((byte) => byte ^ 0x5c))
  }
  digest(data: Uint8Array): Buffer {
    return this.outer.copy().update(this.inner.copy().update(data).digest()).digest()
  }
}

export class FloorVerifier {
  private readonly starts = new Int32Array(256)
  private readonly ends = new Int32Array(256)
  private readonly valueStarts = new Int32Array(256)
  private names: Buffer[] = []
  private order: number[] = []
  private checksumAt = -1
  private scratch = Buffer.allocUnsafe(4096)
  private readonly expected = Buffer.allocUnsafe(32)
  private readonly hmac: { digest(data: Uint8Array): Buffer }

  constructor(key: string, useCreateHmac = false) {
    this.hmac = useCreateHmac ? { digest: (data) => createHmac('sha256', key).update(data).digest() } : new PadHmac(key)
  }

  verify(raw: Buffer): boolean {
    const { starts, ends, valueStarts } = this
    let count = 0
    let start = 0
    const length = raw.length
    while (start < length) {
      let end = raw.indexOf(AMPERSAND, start)
      if (end < 0) end = length
      let equals = start
      while (equals < end && raw[equals] !== EQUALS) equals++
      starts[count] = start
      valueStarts[count] = equals < end ? equals + 1 : end
      ends[count] = end
      count++
      start = end + 1
    }
    if (!this.sameNames(raw, count)) this.learn(raw, count)
    const { order, checksumAt } = this
    if (checksumAt < 0 || ends[checksumAt]! - valueStarts[checksumAt]! !== 64) return false
    if (this.scratch.length < length) this.scratch = Buffer.allocUnsafe(length * 2)
    const out = this.scratch
    let at = 0
    for (let k = 0; k < order.length; k++) {
      const i = order[k]!
      if (k > 0) out[at++] = PIPE
      let p = valueStarts[i]!
      const end = ends[i]!
      while (p < end) {
        const code = raw[p]!
        if (code === PERCENT) {
          out[at++] = (HEX[raw[p + 1]!]! << 4) | HEX[raw[p + 2]!]!
          p += 3
        } else {
          out[at++] = code === PLUS ? SPACE : code
          p++
        }
      }
    }
    const actual = this.hmac.digest(out.subarray(0, at))
    const expected = this.expected
    const from = valueStarts[checksumAt]!
    for (let j = 0; j < 32; j++) expected[j] = (HEX[raw[from + 2 * j]!]! << 4) | HEX[raw[from + 2 * j + 1]!]!
    return timingSafeEqual(actual, expected)
  }

  private sameNames(raw: Buffer, count: number): boolean {
    const names = this.names
    if (names.length !== count) return false
    for (let i = 0; i < count; i++) {
      const name = names[i]!
      const from = this.starts[i]!
      if (this.valueStarts[i]! - 1 - from !== name.length) return false
      for (let j = 0; j < name.length; j++) if (raw[from + j] !== name[j]) return false
    }
    return true
  }

  private learn(raw: Buffer, count: number): void {
    this.names = []
    for (let i = 0; i < count; i++) this.names.push(Buffer.from(raw.subarray(this.starts[i], this.valueStarts[i]! - 1)))
    const text = this.names.map((name) => name.toString('latin1'))
    this.checksumAt = text.indexOf('checksum')
    this.order = text
      .map((_, i) => i)
      .filter((i) => i !== this.checksumAt)
      .sort((a, b) => (text[a]! < text[b]! ? -1 : text[a]! > text[b]! ? 1 : 0))
  }
}
