import type { RawDelivery } from './body.js'
import type { CandidateKey } from './credentials.js'
import { type DiagnosisAttempt, type DiagnosisKind } from './diagnosis.js'
import { quotedName } from './errors.js'
import { hmacSha256HexSync } from '../crypto.js'
import type { ReceivedFields } from './body.js'
import { type Message, toMessage } from './message.js'
import type { FieldValue } from '../values.js'

/** Whether two strings of equal length are equal, looking at every character whatever differs first. */
function sameText(a: string, b: string): boolean {
  let differences = a.length ^ b.length
  for (let i = 0; i < a.length && i < b.length; i++) differences |= a.charCodeAt(i) ^ b.charCodeAt(i)
  return differences === 0
}

/** One family of candidates: it tries them and records one row. */
export type Family = (trial: Trial, subject: Subject, delivery: RawDelivery) => void

/**
 * One diagnosis under way: the candidates it checks against the received checksum, the HMACs spent (never more
 * than the cap) and the families tried. It only ever compares HMACs with the checksum; none leaves it.
 */
export class Trial {
  hmacs = 0
  capped = false
  matched = false
  readonly tried: DiagnosisAttempt[] = []

  constructor(
    private readonly checksum: string,
    private readonly maxHmacs: number,
  ) {}

  /** Stop trying: a family matched, or the cap was reached. */
  get over(): boolean {
    return this.matched || this.capped
  }

  /** Whether one of the signed strings, keyed by one of the tokens, gives the checksum. */
  matches(data: readonly string[], tokens: readonly string[]): boolean {
    for (const token of tokens) {
      for (const item of data) {
        if (this.hmacs >= this.maxHmacs) {
          this.capped = true
          return false
        }
        this.hmacs++
        if (sameText(hmacSha256HexSync(token, item), this.checksum.toLowerCase())) return true
      }
    }
    return false
  }

  record(kind: DiagnosisKind, description: string, candidates: number, matched = false, field?: string): void {
    this.tried.push(field === undefined ? { kind, description, candidates, matched } : { kind, description, candidates, matched, field })
    if (matched) this.matched = true
  }
}

/** The message under diagnosis, taken apart so that candidates can be built from it. */
export class Subject {
  readonly names: readonly string[]
  readonly values: readonly FieldValue[]
  /** The tokens the message was checked against. */
  readonly tokens: readonly string[]

  constructor(
    readonly message: Message,
    readonly keys: readonly CandidateKey[],
    readonly others: readonly CandidateKey[],
  ) {
    this.names = message.names
    this.values = message.values
    this.tokens = keys.map((key) => key.token)
  }

  /** The signed strings of the message as received. */
  signedData(message: Message = this.message): string[] {
    return message.signedTexts().map((text) => text.data)
  }

  /** The signed strings of a message of these names and values (undefined when they do not make a message). */
  dataOf(names: readonly string[], values: readonly FieldValue[]): string[] | undefined {
    try {
      return this.signedData(toMessage(names, values))
    } catch {
      return undefined
    }
  }

  /** The signed strings of fields decoded afresh (same names, other values), or undefined. */
  dataOfFields(read: () => ReceivedFields): string[] | undefined {
    try {
      const fields = read()
      return this.signedData(toMessage(fields.names, fields.values))
    } catch {
      return undefined
    }
  }

  /**
   * The message with `change` applied to every scalar value (nested ones too) of every field, or of `only`, and
   * the top-level fields it changed; undefined when it changed none.
   */
  mapped(change: (value: FieldValue, name: string) => FieldValue | undefined, only?: string): { data: string[]; fields: string[] } | undefined {
    const fields: string[] = []
    const values = this.values.map((value, i) => {
      const name = this.names[i] as string
      if (name === 'checksum' || (only !== undefined && name !== only)) return value
      const next = mapScalars(value, (scalar) => change(scalar, name))
      if (next !== value) fields.push(name)
      return next
    })
    if (fields.length === 0) return undefined
    const data = this.dataOf(this.names, values)
    return data === undefined ? undefined : { data, fields }
  }
}

/** `value` with `change` applied to its scalars; the same object when nothing changed. */
export function mapScalars(value: FieldValue, change: (scalar: FieldValue) => FieldValue | undefined): FieldValue {
  if (value instanceof Map) {
    let changed = false
    const next = new Map<string, FieldValue>()
    for (const [key, item] of value) {
      const mapped = mapScalars(item, change)
      if (mapped !== item) changed = true
      next.set(key, mapped)
    }
    return changed ? next : value
  }
  if (Array.isArray(value)) {
    const next = value.map((item) => mapScalars(item, change))
    return next.some((item, i) => item !== value[i]) ? next : value
  }
  const mapped = change(value)
  return mapped === undefined || mapped === value ? value : mapped
}

/** Up to four field names, quoted, for a description. */
export function nameList(names: readonly string[]): string {
  const shown = names.slice(0, 4).map(quotedName).join(', ')
  return names.length > 4 ? `${shown} and ${names.length - 4} more` : shown
}
