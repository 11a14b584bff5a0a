import { isUtf8 } from 'node:buffer'
import { quotedName, ReceiverError } from './errors.js'
import type { ReceivedFields } from './received-fields.js'
import { HEX_VALUE } from '../hex.js'

const PLUS = 43
const PERCENT = 37
const SPACE = 32
const PIPE = 124

function decodeComponent(raw: string, what: () => string): string {
  const spaced = raw.includes('+') ? raw.replaceAll('+', ' ') : raw
  if (!spaced.includes('%')) return spaced
  try {
    return decodeURIComponent(spaced)
  } catch {
    // Never echo the value: the service signs the Auth Token into some messages (field `token`).
    throw new ReceiverError('invalid_encoding', `${what()} has invalid percent-encoding or is not valid UTF-8`)
  }
}

/**
 * Where signed bytes are written, reused from delivery to delivery: a fresh buffer each time was most of what
 * verification left for the GC. What signedBytes returns is a view of it, valid until the next call, which is
 * why its only reader (the HMAC) consumes it at once.
 */
let signing = Buffer.allocUnsafeSlow(8192)
/** Where each value starts in the last signed bytes, by signed position; see signedValueStarts. */
let starts = new Int32Array(64)
let lastSigned: Buffer | undefined

/**
 * Where each value starts in `signed`, by its position in the signed order, if `signed` is what signedBytes
 * returned last (the same lifetime as the bytes). Undefined otherwise.
 */
export function signedValueStarts(signed: Buffer): Int32Array | undefined {
  return signed === lastSigned ? starts : undefined
}

/** The names a body is expected to carry (the previous message's), as one run of bytes: each name then `=`. */
export interface ExpectedNames {
  readonly names: readonly string[]
  /** Per name, where in the run it ends: just past its `=`. */
  readonly ends: Int32Array
  /** The run of bytes, read four at a time. */
  readonly view: DataView
}

/**
 * A DataView of the last body's whole ArrayBuffer: bodies are often views of one shared slab (Node's pooled small
 * Buffers), and making a view per delivery cost as much as the names it compared.
 */
let viewed: ArrayBufferLike | undefined
let wholeView: DataView | undefined

function viewOf(buffer: ArrayBufferLike): DataView {
  if (buffer !== viewed) {
    wholeView = new DataView(buffer)
    viewed = buffer
  }
  return wholeView as DataView
}

/** Whether `length` bytes of `source` from `at` equal those of `expected` from `from`, compared four at a time. */
function sameBytes(source: DataView, at: number, expected: DataView, from: number, length: number): boolean {
  let i = 0
  for (; i + 4 <= length; i += 4) if (source.getUint32(at + i) !== expected.getUint32(from + i)) return false
  for (; i < length; i++) if (source.getUint8(at + i) !== expected.getUint8(from + i)) return false
  return true
}

const EQUALS = 61
const AMPERSAND = 38
const BRACKET = 91

/**
 * An application/x-www-form-urlencoded body, split into fields: `+` is a space, `%2B` a plus, percent-escapes
 * must form UTF-8, and a pair without `=` is a name with an empty value. Names may repeat here; repetition is
 * judged once they are sorted.
 *
 * Values are decoded lazily. For an ASCII body (what the service sends) the signed string is written straight
 * from the body's bytes into one buffer, decoding escapes on the way: on a realistic callback that costs less
 * than decoding each value into a JavaScript string and encoding the joined string back to UTF-8 for the HMAC.
 */
export class FormFields implements ReceivedFields {
  readonly names: readonly string[]
  /** Some name contains `[`: a nested field such as `params[reference1]`. */
  readonly bracketed: boolean
  /**
   * Per field: where its name starts and ends, where its value starts and ends (bitwise-negated when the value has
   * escapes). Made to the size of the expected names: pushing four numbers per field, growing the array as it went,
   * was a tenth of a verification (and an Int32Array of that size, allocated outside the heap, cost as much).
   */
  private readonly bounds: number[]
  private decoded: Array<string | undefined> | undefined
  private count = 0

  /**
   * @param text the body as text
   * @param bytes the body's bytes when `text` is their latin1 (= ASCII) reading, so offsets agree
   * @param expected the names the sender used last time: when the body has exactly these, they are shared
   *   instead of each being cut out of the text (and compared again) per delivery
   */
  constructor(
    private readonly text: string,
    private readonly bytes?: Buffer,
    expected?: ExpectedNames,
  ) {
    const escapedNames: string[] = []
    this.bounds = expected === undefined ? [] : new Array<number>(4 * expected.names.length)
    const { bracketed, same } = this.scan(escapedNames, expected)
    this.bracketed = bracketed
    this.names = same && expected !== undefined ? expected.names : this.cutNames(escapedNames)
  }

  /**
   * One pass. Names are read character by character (they are short, and this is where `%`, `+` and `[` are
   * noticed); while they are the expected ones, in an ASCII body, each name and its `=` is only compared with the
   * expected ones, four bytes at a time. Values are skipped by the engine's native indexOf of `&`, and whether they hold escapes is
   * told by look-ahead positions of `%` and `+` that are searched again only once passed.
   */
  private scan(escapedNames: string[], hint: ExpectedNames | undefined): { bracketed: boolean; same: boolean } {
    const { text, bytes } = this
    const bounds = this.bounds
    const length = text.length
    let bracketed = false
    let same = hint !== undefined && bytes !== undefined
    const source = same ? viewOf((bytes as Buffer).buffer) : undefined
    const offset = same ? (bytes as Buffer).byteOffset : 0
    let q = 0
    let count = 0
    let start = 0
    let percent = -1
    let plus = -1
    const nextFrom = (character: string, from: number): number => {
      const at = text.indexOf(character, from)
      return at < 0 ? length : at
    }
    while (start < length) {
      let p = start
      let escaped = false
      let code = 0
      if (same) {
        // Expected names hold none of `=&%+[`, so a name that equals one, `=` included, is plain. Anything else
        // (another name, a name without `=`, more fields than expected) is read again below, as by a fresh scan.
        const expected = hint as ExpectedNames
        const next = count < expected.names.length ? (expected.ends[count] as number) : -1
        if (next > 0 && start + next - q <= length && sameBytes(source as DataView, offset + start, expected.view, q, next - q)) {
          p = start + next - q - 1
          code = EQUALS
          q = next
        } else same = false
      }
      if (!same) {
        for (; p < length; p++) {
          code = bytes === undefined ? text.charCodeAt(p) : (bytes[p] as number)
          // Every character that matters sorts below `_` (95); names are mostly lowercase letters and `_`.
          if (code < 96) {
            if (code === EQUALS || code === AMPERSAND) break
            if (code === PERCENT || code === PLUS) escaped = true
            else if (code === BRACKET) bracketed = true
          }
        }
      }
      const nameEnd = p
      let end = p
      if (code === EQUALS && p < length) {
        end = text.indexOf('&', p + 1)
        if (end < 0) end = length
      }
      if (end === start) {
        start = end + 1 // `&&`: no field
        continue
      }
      if (nameEnd === start) throw new ReceiverError('invalid_field_name', `field #${count + 1} has an empty name`)
      if (escaped) {
        const number = count + 1
        const name = decodeComponent(text.slice(start, nameEnd), () => `field #${number}'s name`)
        // A name whose brackets were percent-encoded (`params%5Ba%5D`) is nested too.
        if (name.includes('[')) bracketed = true
        escapedNames[count] = name
      }
      if (percent <= nameEnd) percent = nextFrom('%', nameEnd)
      if (plus <= nameEnd) plus = nextFrom('+', nameEnd)
      bounds[4 * count] = start
      bounds[4 * count + 1] = nameEnd
      bounds[4 * count + 2] = nameEnd < end ? nameEnd + 1 : end
      bounds[4 * count + 3] = percent < end || plus < end ? ~end : end
      count++
      start = end + 1
    }
    this.count = count
    return { bracketed, same: same && q === (hint as ExpectedNames).view.byteLength }
  }

  private cutNames(escapedNames: readonly string[]): string[] {
    const { bounds, text } = this
    const names = new Array<string>(this.count)
    for (let i = 0; i < names.length; i++) names[i] = escapedNames[i] ?? text.slice(bounds[4 * i], bounds[4 * i + 1])
    return names
  }

  /** The decoded value of field `i`; throws ReceiverError on bad encoding. */
  value(i: number): string {
    const decoded = (this.decoded ??= [])
    let value = decoded[i]
    if (value === undefined) {
      const end = this.bounds[4 * i + 3] as number
      const raw = this.text.slice(this.bounds[4 * i + 2], end < 0 ? ~end : end)
      value = end < 0 ? decodeComponent(raw, () => `field ${quotedName(this.names[i] as string)}`) : raw
      decoded[i] = value
    }
    return value
  }

  get layout(): 'flat' | 'nested' {
    return this.bracketed ? 'nested' : 'flat'
  }

  /**
   * The UTF-8 bytes of the values at `order` joined by `|`, or undefined when the body was not ASCII.
   * Throws ReceiverError when an escape is malformed or the decoded bytes are not UTF-8. The bytes live in a
   * buffer that the next call overwrites: hash them (or copy them) before verifying another delivery.
   */
  signedBytes(order: readonly number[]): Buffer | undefined {
    const source = this.bytes
    if (source === undefined) return undefined
    const { bounds } = this
    // The bytes of the last signed string are about to change (even if this call throws half-way): no one may
    // take them for that string any longer (signedValueStarts, split-signing.ts).
    lastSigned = undefined
    if (signing.length < source.length + order.length) signing = Buffer.allocUnsafeSlow(2 * (source.length + order.length))
    const out = signing
    if (starts.length < order.length) starts = new Int32Array(2 * order.length)
    let at = 0
    let highBytes = false
    for (let k = 0; k < order.length; k++) {
      const i = order[k] as number
      if (k > 0) out[at++] = PIPE
      starts[k] = at
      let end = bounds[4 * i + 3] as number
      let p = bounds[4 * i + 2] as number
      if (end >= 0) {
        // Short values: a plain loop beats Buffer#copy's per-call checks; long ones (URLs) go faster by copy.
        if (end - p > 24) at += source.copy(out, at, p, end)
        else while (p < end) out[at++] = source[p++] as number
        continue
      }
      end = ~end
      while (p < end) {
        const code = source[p] as number
        if (code === PERCENT) {
          const high = p + 2 < end ? (HEX_VALUE[source[p + 1] as number] as number) : -1
          const low = HEX_VALUE[source[p + 2] as number] as number
          if (high < 0 || low < 0) this.value(i) // throws the field's encoding error
          const byte = (high << 4) | low
          if (byte >= 0x80) highBytes = true
          out[at++] = byte
          p += 3
        } else {
          out[at++] = code === PLUS ? SPACE : code
          p++
        }
      }
    }
    const signed = out.subarray(0, at)
    lastSigned = signed
    if (highBytes && !isUtf8(signed)) {
      for (const i of order) this.value(i) // throws for the field whose escapes are not UTF-8
      throw new ReceiverError('invalid_encoding', 'a field value is not valid UTF-8')
    }
    return signed
  }
}

export function decodeForm(text: string, bytes?: Buffer, expected?: ExpectedNames): FormFields {
  return new FormFields(text, bytes, expected)
}
