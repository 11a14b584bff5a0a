import { z } from 'zod'
import { readAmount } from '../core/request/amount.js'

/*
 * The rules for single input fields. The client refuses only what the service refuses (as the emulator models it,
 * docs/emulator.md): where real integrations send something the spec's strict reading would not allow (an amount
 * of `200`, a phone of `''` or `012-345 6789`), the client takes it too, so no payment the service would create
 * is stopped before the request.
 */

const CONTROL = /[\u0000-\u001f\u007f]/ // eslint-disable-line no-control-regex

export const required = { error: (issue: { input: unknown }) => (issue.input === undefined ? 'is required' : 'must be text') }

/** One line of text, required and not empty. */
export function line(max: number) {
  return z
    .string(required)
    .min(1, 'is required')
    .max(max, `must be at most ${max} characters`)
    .refine((value) => !CONTROL.test(value), 'must be one line of text without control characters')
}

/**
 * An optional line of text. `''` counts as not given, as the service reads an empty form field (shop plugins send
 * every field, empty or not); callers leave such values out of the request.
 */
export function optionalLine(max: number) {
  return z
    .string(required)
    .max(max, `must be at most ${max} characters`)
    .refine((value) => !CONTROL.test(value), 'must be one line of text without control characters')
    .optional()
}

/**
 * A positive amount with at most two decimals, as text or a number; sent (and signed) with exactly two, so
 * `200` travels as `200.00` and `'199.5'` as `199.50`. The rule is core/amount.ts `readAmount`, the emulator's.
 */
export const amount = z
  .union([z.string(), z.number()], {
    error: (issue) => (issue.input === undefined ? 'is required' : 'must be a number or a decimal as text, such as 100.20'),
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
 * recommendation the client does not enforce.
 */
export const phone = z.string({ error: 'must be text' })

export const email = z.string(required).max(254, 'must be at most 254 characters').regex(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, 'must be an e-mail address')

/** An optional e-mail address; `''` counts as not given. */
export const optionalEmail = z
  .string(required)
  .refine((value) => value === '' || (value.length <= 254 && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value)), 'must be an e-mail address')
  .optional()

/** An optional absolute http(s) URL; `''` counts as not given (its signed segment is empty either way). */
export const optionalUrl = z
  .string(required)
  .max(2048, 'must be at most 2048 characters')
  .refine((value) => value === '' || (URL.canParse(value) && /^https?:$/.test(new URL(value).protocol)), 'must be an absolute http or https URL')
  .optional()

/** `referenceN` / `referenceN_label`, N from 1 to 18 (`reference01` reads as 1, as the emulator reads it). */
function paramIndex(key: string): number {
  const found = /^reference(\d{1,2})(_label)?$/.exec(key)
  return found === null ? 0 : Number(found[1])
}

export const params = z
  .record(z.string(), z.string({ error: 'must be text' }).max(255, 'must be at most 255 characters'))
  .superRefine((values, context) => {
    for (const key of Object.keys(values)) {
      const index = paramIndex(key)
      if (index < 1 || index > 18) context.addIssue({ code: 'custom', path: [key], message: 'is not a params key: use referenceN or referenceN_label, N from 1 to 18' })
    }
  })

/** Address values: the service's one rule is one line of at most 255 characters; empty values are taken. */
const addressLine = z
  .string({ error: 'must be text' })
  .max(255, 'must be at most 255 characters')
  .refine((value) => !CONTROL.test(value), 'must be one line of text without control characters')
  .optional()

export const address = z.strictObject(
  {
    contact_name: addressLine,
    contact_phone_number: addressLine,
    line1: addressLine,
    line2: addressLine,
    postcode: addressLine,
    city: addressLine,
    state: addressLine,
  },
  { error: 'must be an object with contact_name, contact_phone_number, line1, line2, postcode, city, state' },
)

/** `true`/`false` as a boolean or as the text the form carries. */
export const formBoolean = z.union([z.boolean(), z.enum(['true', 'false'])], { error: 'must be true or false' })
