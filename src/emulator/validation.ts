import type { FieldErrors } from './errors.js'

/**
 * Rules for the payment request's fields. The spec gives meanings but no lengths or character sets ("not
 * shown"); these limits are the emulator's, chosen to catch what would break a bank page or a signed string.
 */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/

export function oneLine(max: number): (value: string) => string | undefined {
  return (value) => {
    if (value === '') return 'is required'
    if (value.length > max) return `must be at most ${max} characters`
    if (CONTROL.test(value)) return 'must be one line of text without control characters'
    return undefined
  }
}

export const email = (value: string): string | undefined =>
  /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value) && value.length <= 254 ? undefined : 'must be an e-mail address'

export const phone = (value: string): string | undefined =>
  /^\+\d{7,15}$/.test(value) ? undefined : 'must be in international format with a leading +, such as +60123456789'

export const amount = (value: string): string | undefined => {
  if (!/^\d{1,9}\.\d{2}$/.test(value)) return 'must be a decimal with two fraction digits, such as 100.20'
  return /^0+\.00$/.test(value) ? 'must be more than 0.00' : undefined
}

export const httpUrl = (value: string): string | undefined => {
  if (value.length > 2048) return 'must be at most 2048 characters'
  try {
    const url = new URL(value)
    return url.protocol === 'http:' || url.protocol === 'https:' ? undefined : 'must be an http or https URL'
  } catch {
    return 'must be an absolute URL'
  }
}

export const oneOf =
  (...allowed: string[]) =>
  (value: string): string | undefined =>
    allowed.includes(value) ? undefined : `must be one of ${allowed.join(', ')}`

export type Rule = (value: string) => string | undefined

/** Checks the fields that are present (and required ones), collecting one problem per field. */
export function check(
  fields: ReadonlyMap<string, string>,
  required: Readonly<Record<string, Rule>>,
  optional: Readonly<Record<string, Rule>>,
): FieldErrors {
  const problems: FieldErrors = {}
  for (const [name, rule] of Object.entries(required)) {
    const value = fields.get(name)
    const problem = value === undefined || value === '' ? 'is required' : rule(value)
    if (problem !== undefined) problems[name] = problem
  }
  for (const [name, rule] of Object.entries(optional)) {
    const value = fields.get(name)
    if (value === undefined || value === '') continue
    const problem = rule(value)
    if (problem !== undefined) problems[name] = problem
  }
  return problems
}

const ADDRESS_KEYS = new Set(['contact_name', 'contact_phone_number', 'line1', 'line2', 'postcode', 'city', 'state'])

const PARAMS_KEY = /^reference(\d{1,2})(_label)?$/

function isDocumentedParamsKey(key: string): boolean {
  const found = PARAMS_KEY.exec(key)
  const index = found === null ? 0 : Number(found[1])
  return index >= 1 && index <= 18
}

/**
 * params: the spec documents up to 18 pairs referenceN_label / referenceN (N = 1..18), but shops send other keys
 * (a public Laravel library's README example sends `params[selected_item]`; docs/emulator.md): outside strict
 * mode such a key is kept, signed and sent back like the others, with a note; strict mode refuses it.
 * addresses: the seven documented keys. Every value is one line of at most 255 characters.
 */
export function checkNested(nested: ReadonlyMap<string, ReadonlyMap<string, string>>, problems: FieldErrors, strict: boolean, notes: string[]): void {
  for (const [name, values] of nested) {
    if (name === 'params') {
      const undocumented: string[] = []
      for (const [key, value] of values) {
        if (!isDocumentedParamsKey(key)) {
          if (strict) {
            problems[`params[${key}]`] = 'params keys are reference1..reference18 and their _label'
            continue
          }
          undocumented.push(key)
        }
        if (value.length > 255 || CONTROL.test(value)) problems[`params[${key}]`] = 'must be one line of at most 255 characters'
      }
      if (undocumented.length > 0)
        notes.push(
          `params key${undocumented.length === 1 ? '' : 's'} ${undocumented.map((key) => JSON.stringify(key)).join(', ')} ` +
            `${undocumented.length === 1 ? 'is' : 'are'} not reference1..reference18 or their _label (the spec's); kept and sent back as given`,
        )
    } else if (name === 'shipping_address' || name === 'billing_address') {
      for (const [key, value] of values) {
        if (!ADDRESS_KEYS.has(key)) problems[`${name}[${key}]`] = `unknown key; expected one of ${[...ADDRESS_KEYS].join(', ')}`
        else if (value.length > 255 || CONTROL.test(value)) problems[`${name}[${key}]`] = 'must be one line of at most 255 characters'
      }
    } else {
      problems[name] = 'unknown object field'
    }
  }
}
