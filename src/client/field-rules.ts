import { z } from 'zod'
import { readAmount } from '../core/request/amount.js'
import { ADDRESS_KEYS, addressValue, CHOICES, choiceProblem, FIELD_RULES, IS_REQUIRED, readParams, type Rule } from '../core/request/field-rules.js'

/*
 * The payment request's field rules as zod schemas. The rules are core/request/field-rules.ts, which the emulator
 * reads too, taken in their lenient reading (what the real service takes): where real integrations send something
 * the spec's strict reading would not allow (an amount of `200`, a phone of `''` or `012-345 6789`, a params key
 * `selected_item`), the client takes it too, so no payment the service would create is stopped before the request.
 */

export const required = { error: (issue: { input: unknown }) => (issue.input === undefined ? IS_REQUIRED : 'must be text') }

type TextField = Exclude<keyof typeof FIELD_RULES, keyof typeof CHOICES>

/** Text that must pass `rule`. `''` is left to the caller: "is required", or not given. */
function ruled(schema: z.ZodString, rule: Rule): z.ZodString {
  return schema.superRefine((value, context) => {
    const problem = value === '' ? undefined : rule(value)
    if (problem !== undefined) context.addIssue({ code: 'custom', message: problem, input: value })
  })
}

/** A required text field, not empty. */
export function requiredText(field: TextField) {
  return ruled(z.string(required).min(1, IS_REQUIRED), FIELD_RULES[field])
}

/**
 * An optional text field. `''` counts as not given, as the service reads an empty form field (shop plugins send
 * every field, empty or not); callers leave such values out of the request.
 */
export function optionalText(field: TextField) {
  return ruled(z.string(required), FIELD_RULES[field]).optional()
}

/** One of a closed list of values (model, fpx_bank_selection, currency). */
export function choiceOf<F extends Exclude<keyof typeof CHOICES, 'redirect_post'>>(field: F) {
  return z.enum(CHOICES[field], { error: choiceProblem(field) })
}

/** `true`/`false` as a boolean or as the text the form carries. */
export const formBoolean = z.union([z.boolean(), z.enum(CHOICES.redirect_post)], { error: choiceProblem('redirect_post') })

/**
 * A positive amount with at most two decimals, as text or a number; sent (and signed) with exactly two, so
 * `200` travels as `200.00` and `'199.5'` as `199.50`. The rule is core/request/amount.ts `readAmount`, the emulator's.
 */
export const amount = z
  .union([z.string(), z.number()], {
    error: (issue) => (issue.input === undefined ? IS_REQUIRED : 'must be a number or a decimal as text, such as 100.20'),
  })
  .transform((value, context) => {
    const reading = readAmount(value)
    if (reading.ok) return reading.text
    context.addIssue({ code: 'custom', message: reading.problem, input: value })
    return z.NEVER
  })

/**
 * Any text, empty included, sent unchanged: the vendor's own shop plugins send `''` or the billing phone as the
 * buyer typed it (`0123456789`, `012-345 6789`), and the service takes them. The spec's "+ and digits" is a
 * recommendation the client does not enforce, and the emulator's own length limit (`localPhone`) is left to it.
 */
export const phone = z.string({ error: 'must be text' })

/** params, read as readParams reads them leniently: any key a form carries, values of at most 255 characters. */
export const params = z.record(z.string(), z.string({ error: 'must be text' })).superRefine((values, context) => {
  for (const [key, problem] of Object.entries(readParams(Object.entries(values), 'lenient').problems))
    context.addIssue({ code: 'custom', path: [key], message: problem, input: values[key] })
})

const addressLine = ruled(z.string({ error: 'must be text' }), addressValue).optional()
const addressShape = Object.fromEntries(ADDRESS_KEYS.map((key) => [key, addressLine])) as Record<(typeof ADDRESS_KEYS)[number], typeof addressLine>

/** The seven keys, each optional; values one line of at most 255 characters, empty taken. */
export const address = z.strictObject(addressShape, { error: `must be an object with ${ADDRESS_KEYS.join(', ')}` })
