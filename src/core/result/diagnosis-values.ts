import { type DiagnosisKind } from './diagnosis.js'
import { quotedName } from './errors.js'
import { type Family, nameList, type Subject, type Trial } from './diagnosis-trial.js'
import { bodyIsEmpty, decodeForm, queryText, type RawDelivery } from './body.js'
import type { FieldValue } from '../values.js'

/**
 * The diagnosis's families that change values: how a framework or a hand-made sender alters text between the
 * signing and the receiver (`+` and spaces, whitespace, null written as text, amounts and booleans reformatted).
 */

interface ValueCandidate {
  readonly change: (value: FieldValue, name: string) => FieldValue | undefined
  readonly describe: (fields: string) => string
}

/**
 * Tries each value change on every field it applies to at once, then (when that is more than one) on each of
 * them alone: a framework may have changed one amount and not the other. Counts into `tally.tried`.
 */
function tryValueChanges(trial: Trial, subject: Subject, kind: DiagnosisKind, candidates: readonly ValueCandidate[], tally: { tried: number }): boolean {
  for (const candidate of candidates) {
    const all = subject.mapped(candidate.change)
    if (all === undefined) continue
    tally.tried++
    if (trial.matches(all.data, subject.tokens)) {
      trial.record(kind, candidate.describe(nameList(all.fields)), tally.tried, true, all.fields.length === 1 ? all.fields[0] : undefined)
      return true
    }
    for (const field of all.fields.length > 1 ? all.fields : []) {
      if (trial.over) return false
      const one = subject.mapped(candidate.change, field)
      if (one === undefined) continue
      tally.tried++
      if (trial.matches(one.data, subject.tokens)) {
        trial.record(kind, candidate.describe(quotedName(field)), tally.tried, true, field)
        return true
      }
    }
    if (trial.over) return false
  }
  return false
}

/** A family of value changes, recorded as one row whether or not it applied. */
function valueFamily(kind: DiagnosisKind, what: string, candidates: readonly ValueCandidate[]): Family {
  return (trial, subject) => {
    const tally = { tried: 0 }
    if (!tryValueChanges(trial, subject, kind, candidates, tally))
      trial.record(kind, tally.tried === 0 ? `${what}: not applicable to this message` : what, tally.tried)
  }
}

const text = (value: FieldValue): string | undefined => (typeof value === 'string' ? value : undefined)

/** The form text the fields were decoded from (a form body, or the query string), or undefined for JSON. */
function formText(delivery: RawDelivery): string | undefined {
  const { body } = delivery
  if (bodyIsEmpty(body)) return queryText(delivery.query)
  if (!/^application\/x-www-form-urlencoded\b/i.test(delivery.contentType ?? '')) return undefined
  if (typeof body === 'string') return body
  if (body instanceof ArrayBuffer || body instanceof Uint8Array) return new TextDecoder().decode(body)
  return undefined
}

/** A form pair with the `+` of its value written as %2B (its name untouched). */
function keepPlus(pair: string): string {
  const equals = pair.indexOf('=')
  return equals < 0 ? pair : `${pair.slice(0, equals + 1)}${pair.slice(equals + 1).replaceAll('+', '%2B')}`
}

function decodeName(pair: string): string {
  const equals = pair.indexOf('=')
  const raw = (equals < 0 ? pair : pair.slice(0, equals)).replaceAll('+', ' ')
  try {
    return decodeURIComponent(raw)
  } catch {
    return raw
  }
}

/**
 * `+` in a form means a space, but senders that build the body by hand write a `+` of the value as is: the raw
 * text decoded with its `+` kept says so exactly. The other way round (a value signed with spaces that arrived
 * with `+`) is tried on the values.
 */
export const plusAndSpace: Family = (trial, subject, delivery) => {
  const raw = formText(delivery)
  const tally = { tried: 0 }
  if (raw !== undefined && raw.includes('+')) {
    // Every `+` kept, then (a form may mix a literal `+` with spaces written as `+`) each field's alone.
    const pairs = raw.split('&')
    const withPlus = pairs.flatMap((pair, i) => (pair.includes('+', pair.indexOf('=') + 1) ? [i] : []))
    const keeping = [undefined, ...(withPlus.length > 1 ? withPlus : [])]
    for (const only of keeping) {
      if (trial.over) return
      const form = pairs.map((pair, i) => (only === undefined || i === only ? keepPlus(pair) : pair)).join('&')
      const data = subject.dataOfFields(() => decodeForm(form))
      if (data === undefined) continue
      tally.tried++
      if (trial.matches(data, subject.tokens)) {
        const where = only === undefined ? 'of the form text' : `in ${quotedName(decodeName(pairs[only] as string))}`
        return trial.record('plus_and_space', `every "+" ${where} read as "+", not as a space: the sender wrote a literal "+" into the form instead of %2B`, tally.tried, true)
      }
    }
  }
  if (trial.over) return
  const reverse: ValueCandidate = {
    change: (value) => text(value)?.replaceAll('+', ' '),
    describe: (fields) => `every "+" in ${fields} read as a space: the value was signed with spaces and arrived with "+" (form encoding applied twice, or JSON)`,
  }
  if (!tryValueChanges(trial, subject, 'plus_and_space', [reverse], tally))
    trial.record('plus_and_space', tally.tried === 0 ? '"+" and spaces swapped: no "+" in the message' : '"+" read as "+" in the form text, and "+" in values read as spaces', tally.tried)
}

export const valuesTrimmed = valueFamily('values_trimmed', 'values trimmed of the whitespace around them', [
  {
    change: (value) => text(value)?.trim(),
    describe: (fields) => `the values of ${fields} trimmed: whitespace around them was added after signing`,
  },
])

const NULL_TEXTS = new Set(['null', 'NULL', 'undefined', 'None', 'nil'])
export const nullText = valueFamily('null_text', 'the text "null" (or undefined, None, nil) read as empty', [
  {
    change: (value) => (typeof value === 'string' && NULL_TEXTS.has(value) ? '' : undefined),
    describe: (fields) => `${fields} empty instead of the text "null": a framework wrote an empty (null) value as text`,
  },
])

const AMOUNT_FIELDS = new Set(['transaction_amount', 'transaction_amount_received', 'transaction_fee', 'amount'])
export const amountFormat = valueFamily('amount_format', 'amounts with two decimals, and without trailing zeros', [
  {
    change: (value, name) => {
      const amount = AMOUNT_FIELDS.has(name)
      if (typeof value === 'number')
        return Number.isFinite(value) && (amount || !Number.isInteger(value)) && Number(value.toFixed(2)) === value ? value.toFixed(2) : undefined
      if (!amount || typeof value !== 'string' || !/^\d+(\.\d)?$/.test(value)) return undefined
      return value.includes('.') ? `${value}0` : `${value}.00`
    },
    describe: (fields) => `${fields} written with two decimals (100.20, not 100.2): a framework turned the amounts into numbers`,
  },
  {
    change: (value, name) => (AMOUNT_FIELDS.has(name) && typeof value === 'string' && /^\d+\.\d*0$/.test(value) ? value.replace(/\.?0+$/, '') : undefined),
    describe: (fields) => `${fields} without trailing zeros (100.2): the signer signed the amounts as numbers`,
  },
])

const BOOLEAN_FIELDS = new Set(['payment_status', 'fpx_status'])
export const booleanFormat = valueFamily('boolean_format', 'booleans written as true and false', [
  {
    change: (value, name) => {
      if (typeof value !== 'string') return undefined
      const lower = value.toLowerCase()
      if (value !== lower && (lower === 'true' || lower === 'false')) return lower
      if (!BOOLEAN_FIELDS.has(name)) return undefined
      return value === '1' ? 'true' : value === '0' ? 'false' : undefined
    },
    describe: (fields) => `${fields} written as true/false: a framework reformatted the booleans (1/0, True/False)`,
  },
])
