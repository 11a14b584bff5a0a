import { ADDRESS_KEYS, addressValue, FIELD_RULES, IS_REQUIRED, readParams, type Rule } from '../core/request/field-rules.js'
import type { FieldErrors } from './errors.js'

/*
 * The emulator's reading of a request's fields by the rules in core/request/field-rules.ts, which the client's
 * schemas share: a form's fields, required and optional per endpoint, and its nested fields.
 */

/** The rules of the named fields, from the one table. */
export function rulesOf<F extends keyof typeof FIELD_RULES>(...names: F[]): Record<F, Rule> {
  return Object.fromEntries(names.map((name) => [name, FIELD_RULES[name]])) as Record<F, Rule>
}

/** Checks the fields that are present (and required ones), collecting one problem per field. */
export function check(
  fields: ReadonlyMap<string, string>,
  required: Readonly<Record<string, Rule>>,
  optional: Readonly<Record<string, Rule>>,
): FieldErrors {
  const problems: FieldErrors = {}
  for (const [name, rule] of Object.entries(required)) {
    const value = fields.get(name)
    const problem = value === undefined || value === '' ? IS_REQUIRED : rule(value)
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

const ADDRESS_KEY_SET: ReadonlySet<string> = new Set(ADDRESS_KEYS)

/**
 * The nested fields: params as readParams reads them (strict mode refuses what the default keeps with a note),
 * addresses with the seven documented keys. Any other nested field is refused.
 */
export function checkNested(nested: ReadonlyMap<string, ReadonlyMap<string, string>>, problems: FieldErrors, strict: boolean, notes: string[]): void {
  for (const [name, values] of nested) {
    if (name === 'params') {
      const reading = readParams(values, strict ? 'strict' : 'lenient')
      for (const [key, problem] of Object.entries(reading.problems)) problems[`params[${key}]`] = problem
      notes.push(...reading.notes)
    } else if (name === 'shipping_address' || name === 'billing_address') {
      for (const [key, value] of values) {
        const problem = ADDRESS_KEY_SET.has(key) ? addressValue(value) : `unknown key; expected one of ${ADDRESS_KEYS.join(', ')}`
        if (problem !== undefined) problems[`${name}[${key}]`] = problem
      }
    } else {
      problems[name] = 'unknown object field'
    }
  }
}
