import { isUtf8 } from 'node:buffer'
import { ReceiverError } from './errors.js'
import type { ReceivedFields } from './received-fields.js'

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

/** Value of a hexadecimal digit by character code, -1 for anything else. */
const HEX_VALUE = new Int8Array(256).fill(-1)
for (let digit = 0; digit < 16; digit++) {
  HEX_VALUE[digit.toString(16).charCodeAt(0)] = digit
  HEX_VALUE[digit.toString(16).toUpperCase().charCodeAt(0)] = digit
}

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
  readonly names: string[] = []
  /** Some name contains `[`: a nested field such as `params[reference1]`. */
  readonly bracketed: boolean
  /** Per field: where its value starts, and where it ends, bitwise-negated when the value has escapes. */
  private readonly bounds: number[] = []
  private decoded: Array<string | undefined> | undefined

  /**
   * @param text the body as text
   * @param bytes the body's bytes when `text` is their latin1 (= ASCII) reading, so offsets agree
   */
  constructor(
    private readonly text: string,
    private readonly bytes?: Buffer,
  ) {
    this.bracketed = this.scan()
  }

  /**
   * One pass over the text that lets the engine's native indexOf find the few characters that matter, keeping
   * one look-ahead position per character so each is searched for about once per field.
   */
  private scan(): boolean {
    const { text, names } = this
    const length = text.length
    const nextFrom = (character: string, from: number): number => {
      const at = text.indexOf(character, from)
      return at < 0 ? length : at
    }
    let bracketed = false
    let equals = -1
    let percent = -1
    let plus = -1
    let bracket = -1
    let start = 0
    while (start < length) {
      const ampersand = nextFrom('&', start)
      if (ampersand > start) {
        if (equals < start) equals = nextFrom('=', start)
        if (percent < start) percent = nextFrom('%', start)
        if (plus < start) plus = nextFrom('+', start)
        if (bracket < start) bracket = nextFrom('[', start)
        const nameEnd = equals < ampersand ? equals : ampersand
        const rawName = text.slice(start, nameEnd)
        const nameEscaped = percent < nameEnd || plus < nameEnd
        const name = nameEscaped ? decodeComponent(rawName, () => `field #${names.length + 1}'s name`) : rawName
        if (name === '') throw new ReceiverError('invalid_field_name', `field #${names.length + 1} has an empty name`)
        // A name whose brackets were percent-encoded (`params%5Ba%5D`) is nested too.
        if (bracket < nameEnd || (nameEscaped && name.includes('['))) bracketed = true
        const valueStart = nameEnd < ampersand ? nameEnd + 1 : ampersand
        if (percent < valueStart) percent = nextFrom('%', valueStart)
        if (plus < valueStart) plus = nextFrom('+', valueStart)
        names.push(name)
        this.bounds.push(valueStart, percent < ampersand || plus < ampersand ? ~ampersand : ampersand)
      }
      start = ampersand + 1
    }
    return bracketed
  }

  /** The decoded value of field `i`; throws ReceiverError on bad encoding. */
  value(i: number): string {
    const decoded = (this.decoded ??= [])
    let value = decoded[i]
    if (value === undefined) {
      const end = this.bounds[2 * i + 1] as number
      const raw = this.text.slice(this.bounds[2 * i], end < 0 ? ~end : end)
      value = end < 0 ? decodeComponent(raw, () => `field "${this.names[i]}"`) : raw
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
    if (signing.length < source.length + order.length) signing = Buffer.allocUnsafeSlow(2 * (source.length + order.length))
    const out = signing
    let at = 0
    let highBytes = false
    for (let k = 0; k < order.length; k++) {
      const i = order[k] as number
      if (k > 0) out[at++] = PIPE
      let end = bounds[2 * i + 1] as number
      let p = bounds[2 * i] as number
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
    if (highBytes && !isUtf8(signed)) {
      for (const i of order) this.value(i) // throws for the field whose escapes are not UTF-8
      throw new ReceiverError('invalid_encoding', 'a field value is not valid UTF-8')
    }
    return signed
  }
}

export function decodeForm(text: string, bytes?: Buffer): FormFields {
  return new FormFields(text, bytes)
}
