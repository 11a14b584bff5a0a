import { bodyIsEmpty, decodeForm, queryText, type RawDelivery } from './body.js'
import type { CandidateKey } from './credentials.js'
import { type Diagnosis, diagnosisOf, MAX_DIAGNOSIS_HMACS } from './diagnosis.js'
import { quotedName } from './errors.js'
import { cleanToken } from './diagnosis-token.js'
import { type Family, nameList, Subject, Trial } from './diagnosis-trial.js'
import { amountFormat, booleanFormat, nullText, plusAndSpace, valuesTrimmed } from './diagnosis-values.js'
import { PAYMENT_FIELD_RULES } from './fields.js'
import { compareCodePoints, type Message } from './message.js'
import { type FieldValue, isNested, type NestedFields, toFieldValue, toPlain, type FieldInput } from '../values.js'

/**
 * The diagnosis of a refused checksum: each family of transformations below is tried in turn, most likely and
 * cheapest first, until one makes the checksum verify or MAX_DIAGNOSIS_HMACS are spent. Runs only after the
 * ordinary verification (and its fallbacks) failed; the verifier rations it (DiagnosisBudget).
 */
export interface MismatchToDiagnose {
  readonly delivery: RawDelivery
  readonly message: Message
  readonly checksum: string
  /** The Checksum Tokens the message was checked against. */
  readonly keys: readonly CandidateKey[]
  /** The other configured sets' tokens, which it was not checked against. */
  readonly others: readonly CandidateKey[]
}

export function diagnoseMismatch(mismatch: MismatchToDiagnose, maxHmacs = MAX_DIAGNOSIS_HMACS): Diagnosis {
  const trial = new Trial(mismatch.checksum, maxHmacs)
  const subject = new Subject(mismatch.message, mismatch.keys, mismatch.others)
  for (const family of FAMILIES) {
    if (trial.over) break
    family(trial, subject, mismatch.delivery)
  }
  return diagnosisOf(trial.tried, trial.hmacs, trial.capped)
}

function setName(key: CandidateKey): string {
  return key.credential === undefined ? '' : ` of credential set ${quotedName(key.credential.uid)} (credentials[${key.credential.index}])`
}

const checksumToken: Family = (trial, subject) => {
  const cleaned = [...subject.keys, ...subject.others].flatMap((key) => {
    const cleanup = cleanToken(key.token)
    return cleanup === undefined ? [] : [{ key, cleanup }]
  })
  if (cleaned.length === 0) return trial.record('checksum_token', 'the configured Checksum Token: no whitespace, quotes or invisible characters in it', 0)
  const data = subject.signedData()
  for (const { key, cleanup } of cleaned) {
    if (trial.matches(data, [cleanup.token]))
      return trial.record('checksum_token', `the configured Checksum Token${setName(key)} without its ${cleanup.found.join(' and ')}: remove them from the configuration`, cleaned.length, true)
  }
  trial.record('checksum_token', `the configured Checksum Token without its ${cleaned.flatMap((item) => item.cleanup.found).join(' and ')}`, cleaned.length)
}

const otherCredential: Family = (trial, subject) => {
  if (subject.others.length === 0) return trial.record('other_credential', 'another credential set: none other is configured', 0)
  const data = subject.signedData()
  for (const key of subject.others) {
    if (trial.matches(data, [key.token]))
      return trial.record('other_credential', `the Checksum Token${setName(key)}: the message's uid names another set, so check which uid each token belongs to`, subject.others.length, true)
  }
  trial.record('other_credential', `the Checksum Tokens of the ${subject.others.length} other configured credential sets`, subject.others.length)
}

const queryAndBody: Family = (trial, subject, delivery) => {
  const query = queryText(delivery.query)
  if (bodyIsEmpty(delivery.body) || query === '') return trial.record('query_and_body', 'the query string signed with the body: no query string beside the body', 0)
  const names = [...subject.names]
  const values = [...subject.values]
  const added: string[] = []
  try {
    const fields = decodeForm(query)
    fields.names.forEach((name, i) => {
      if (names.includes(name)) return
      names.push(name)
      values.push(fields.values[i] as FieldValue)
      added.push(name)
    })
  } catch {
    // A query that does not decode was not signed with the body either.
  }
  const data = added.length === 0 ? undefined : subject.dataOf(names, values)
  if (data === undefined) return trial.record('query_and_body', 'the query string signed with the body: the query adds no field', 0)
  const matched = trial.matches(data, subject.tokens)
  trial.record(
    'query_and_body',
    matched
      ? `the query string's ${nameList(added)} signed together with the body's fields: the sender split the fields between the query string and the body`
      : `the query string's ${nameList(added)} signed together with the body's fields`,
    1,
    matched,
  )
}

function sortedKeys(value: FieldValue): FieldValue {
  if (Array.isArray(value)) return value.map(sortedKeys)
  if (!(value instanceof Map)) return value
  const sorted: NestedFields = new Map()
  for (const key of [...value.keys()].sort(compareCodePoints)) sorted.set(key, sortedKeys(value.get(key) as FieldValue))
  return sorted
}

const nestedKeyOrder: Family = (trial, subject) => {
  const nested = subject.names.filter((_, i) => isNested(subject.values[i] as FieldValue))
  const data = nested.length === 0 ? undefined : subject.dataOf(subject.names, subject.values.map(sortedKeys))
  if (data === undefined) return trial.record('nested_key_order', 'nested keys in name order: no nested fields', 0)
  const matched = trial.matches(data, subject.tokens)
  trial.record('nested_key_order', `the keys of ${nameList(nested)} in name order${matched ? ': a framework re-serialised the body and changed their order' : ''}`, 1, matched)
}

function parsedJson(value: FieldValue): FieldValue | undefined {
  if (typeof value !== 'string' || !/^\s*[[{]/.test(value)) return undefined
  try {
    const parsed = toFieldValue(JSON.parse(value) as FieldInput)
    return parsed !== undefined && isNested(parsed) ? parsed : undefined
  } catch {
    return undefined
  }
}

const rendering: Family = (trial, subject) => {
  const nested = subject.names.filter((_, i) => isNested(subject.values[i] as FieldValue))
  const asText = subject.values.map((value) => (isNested(value) ? JSON.stringify(toPlain(value)) : value))
  const asNested = subject.values.map((value) => parsedJson(value) ?? value)
  const fromText = subject.names.filter((_, i) => asNested[i] !== subject.values[i])
  let tried = 0
  if (nested.length > 0) {
    tried++
    const data = subject.dataOf(subject.names, asText)
    if (data !== undefined && trial.matches(data, subject.tokens))
      return trial.record('rendering', `${nameList(nested)} signed as JSON text rather than Ruby's Hash#inspect`, tried, true)
  }
  if (fromText.length > 0 && !trial.over) {
    tried++
    const data = subject.dataOf(subject.names, asNested)
    if (data !== undefined && trial.matches(data, subject.tokens))
      return trial.record('rendering', `${nameList(fromText)} signed as nested fields, though they arrived as JSON text: a framework serialised them into one field`, tried, true)
  }
  trial.record('rendering', tried === 0 ? 'other renderings of nested fields: no nested fields or JSON text' : 'nested fields as JSON text, and JSON text as nested fields', tried)
}

/**
 * The signed string of a flat message and where each value starts in it: a candidate with one value left out or
 * one empty value put in is two slices of it, not a new join of every value (most of a diagnosis's time, else).
 */
class SignedParts {
  private constructor(
    private readonly text: string,
    private readonly starts: readonly number[],
  ) {}

  static of(parts: readonly string[]): SignedParts {
    const starts: number[] = []
    let at = 0
    for (const part of parts) {
      starts.push(at)
      at += part.length + 1
    }
    return new SignedParts(parts.join('|'), starts)
  }

  /** The signed string without the value at `index`. */
  without(index: number): string {
    const { text, starts } = this
    const next = starts[index + 1]
    if (index === 0) return next === undefined ? '' : text.slice(next)
    return next === undefined ? text.slice(0, (starts[index] as number) - 1) : text.slice(0, starts[index]) + text.slice(next)
  }

  /** The signed string with an empty value before the one at `gap` (after the last one for gap = count). */
  withEmptyAt(gap: number): string {
    const { text, starts } = this
    if (gap === 0) return starts.length === 0 ? '' : `|${text}`
    const start = starts[gap]
    return start === undefined ? `${text}|` : `${text.slice(0, start)}|${text.slice(start)}`
  }
}

/** Each field left out in turn: one that was added after signing (a proxy's, a framework's) is then named. */
const fieldAdded: Family = (trial, subject) => {
  const { message } = subject
  const flat = !message.nested
  const signedFields = flat ? message.signedFields('plain') : []
  const parts = signedFields.map((field) => field.text)
  const signed = SignedParts.of(parts)
  let tried = 0
  for (const [position, name] of subject.names.entries()) {
    if (name === 'checksum') continue
    let data: string[] | undefined
    if (flat) {
      const at = signedFields.findIndex((field) => field.name === name)
      // Leaving out either of two equal neighbours gives the same string: tried once.
      if (at > 0 && parts[at - 1] === parts[at]) continue
      data = [signed.without(at)]
    } else {
      data = subject.dataOf(subject.names.filter((_, i) => i !== position), subject.values.filter((_, i) => i !== position))
    }
    if (data === undefined) continue
    tried++
    if (trial.matches(data, subject.tokens))
      return trial.record('field_added', `field ${quotedName(name)} left out: it was not signed, so something added it after signing (a proxy, a framework, the merchant's own code)`, tried, true, name)
    if (trial.over) break
  }
  trial.record('field_added', 'each field left out in turn', tried)
}

const SERVICE_NAMES = Object.keys(PAYMENT_FIELD_RULES).filter((name) => name !== 'checksum')

/** An empty field put back at each place in name order (flat messages): one signed empty and dropped since. */
const fieldDropped: Family = (trial, subject) => {
  const { message } = subject
  if (message.nested) return trial.record('field_dropped', 'an empty field put back at each place in name order: not tried for nested messages', 0)
  const signedFields = message.signedFields('plain')
  const parts = signedFields.map((field) => field.text)
  const signed = SignedParts.of(parts)
  const names = signedFields.map((field) => field.name)
  let tried = 0
  for (let gap = 0; gap <= parts.length; gap++) {
    // An empty value beside an empty one gives the same string at either side of it.
    if (gap > 0 && parts[gap - 1] === '') continue
    tried++
    const data = [signed.withEmptyAt(gap)]
    if (trial.matches(data, subject.tokens)) {
      const before = names[gap - 1]
      const after = names[gap]
      const fits = SERVICE_NAMES.filter(
        (name) => !message.has(name) && (before === undefined || compareCodePoints(before, name) < 0) && (after === undefined || compareCodePoints(name, after) < 0),
      )
      const place = before === undefined ? `before ${quotedName(after as string)}` : after === undefined ? `after ${quotedName(before)}` : `between ${quotedName(before)} and ${quotedName(after)}`
      const guess = fits.length === 0 ? '' : `, probably ${fits.length === 1 ? quotedName(fits[0] as string) : `one of ${nameList(fits)}`}`
      return trial.record(
        'field_dropped',
        `an empty field ${place} in name order put back${guess}: it was signed empty and dropped on the way (frameworks drop empty or null fields)`,
        tried,
        true,
        fits.length === 1 ? fits[0] : undefined,
      )
    }
    if (trial.over) break
  }
  trial.record('field_dropped', 'an empty field put back at each place in name order', tried)
}

const FAMILIES: readonly Family[] = [
  checksumToken,
  otherCredential,
  queryAndBody,
  plusAndSpace,
  valuesTrimmed,
  nullText,
  amountFormat,
  booleanFormat,
  nestedKeyOrder,
  rendering,
  fieldAdded,
  fieldDropped,
]
