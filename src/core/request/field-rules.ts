/*
 * The payment request's field rules, one table for the client (its zod schemas, client/field-rules.ts) and the
 * emulator (emulator/validation.ts), so the client never refuses what the emulator takes. The spec gives meanings
 * but no lengths or character sets ("Constraints on lengths and character sets of these fields: not shown"): the
 * limits are ours, chosen to catch what would break a bank page or a signed string. Where public evidence shows
 * the real service takes more than the spec's strict reading (docs/emulator.md), a rule has two readings: `strict`
 * (the spec's; the emulator's strict mode) and `lenient` (what the service takes; the emulator's default and
 * always the client's), and notes what it tolerated. The emulator turns notes into warnings; the client drops them.
 * transaction_amount's lenient reading is core/request/amount.ts.
 */

/** The spec's strict reading, or what the real service is seen to take. */
export type Reading = 'strict' | 'lenient'

/** What is wrong with a value, in the words field errors use; undefined when nothing is. */
export type Rule = (value: string) => string | undefined

export const IS_REQUIRED = 'is required'

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/
const NOT_ONE_LINE = 'must be one line of text without control characters'
const tooLong = (max: number): string => `must be at most ${max} characters`

/**
 * Text on one line of at most `max` characters. Empty text passes: whether a field may be empty is the caller's
 * (an empty optional field counts as not given, an empty required one is "is required").
 */
export function lineOf(max: number): Rule {
  return (value) => (value.length > max ? tooLong(max) : CONTROL.test(value) ? NOT_ONE_LINE : undefined)
}

const EMAIL_MAX = 254
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/

export const email: Rule = (value) => (value.length > EMAIL_MAX ? tooLong(EMAIL_MAX) : EMAIL.test(value) ? undefined : 'must be an e-mail address')

const URL_MAX = 2048

export const httpUrl: Rule = (value) => {
  if (value.length > URL_MAX) return tooLong(URL_MAX)
  let protocol: string
  try {
    protocol = new URL(value).protocol
  } catch {
    protocol = ''
  }
  return protocol === 'http:' || protocol === 'https:' ? undefined : 'must be an absolute http or https URL'
}

/** The closed lists of values; the client types its input from them. */
export const CHOICES = {
  redirect_post: ['true', 'false'],
  model: ['B2C', 'B2B1'],
  fpx_bank_selection: ['dropdown', 'grid'],
  currency: ['MYR', 'USD'],
} as const

const CHOICE_REASONS: Partial<Record<keyof typeof CHOICES, string>> = { currency: 'the only conversion the service offers' }

/** `must be B2C or B2B1`, with the reason the list is closed where there is one. */
export function choiceProblem(field: keyof typeof CHOICES): string {
  const values: readonly string[] = CHOICES[field]
  const reason = CHOICE_REASONS[field]
  return `must be ${values.slice(0, -1).join(', ')} or ${values.at(-1)}${reason === undefined ? '' : ` (${reason})`}`
}

function choice(field: keyof typeof CHOICES): Rule {
  const values: readonly string[] = CHOICES[field]
  return (value) => (values.includes(value) ? undefined : choiceProblem(field))
}

/**
 * Every text field of payment creation (POST /v1/payments) and payment sessions (POST /apis/payments) but the
 * two with readings of their own below (buyer_phone, transaction_amount). Which are required is each endpoint's.
 */
export const FIELD_RULES = {
  order_number: lineOf(50),
  buyer_name: lineOf(100),
  buyer_email: email,
  product_description: lineOf(255),
  buyer_bank_code: lineOf(20),
  uid: lineOf(64),
  partner_uid: lineOf(64),
  callback_url: httpUrl,
  redirect_url: httpUrl,
  cancel_url: httpUrl,
  timeout_url: httpUrl,
  redirect_post: choice('redirect_post'),
  model: choice('model'),
  fpx_bank_selection: choice('fpx_bank_selection'),
  currency: choice('currency'),
} satisfies Record<string, Rule>

/** transaction_amount, strict: digits with exactly two decimals (the spec's "Decimal with two fraction digits"). */
export const strictAmount: Rule = (value) => {
  if (!/^\d{1,9}\.\d{2}$/.test(value)) return 'must be a decimal with two fraction digits, such as 100.20'
  return /^0+\.00$/.test(value) ? 'must be more than 0.00' : undefined
}

/** buyer_phone, strict: `+` and 7 to 15 digits (the spec's "international format with leading +"). */
export const internationalPhone: Rule = (value) =>
  /^\+\d{7,15}$/.test(value) ? undefined : 'must be in international format with a leading +, such as +60123456789'

/**
 * buyer_phone, lenient: any one line of at most 50 characters, as shops send the billing phone. The limit is the
 * emulator's own (no evidence puts it there), so the client leaves it to the service and sends any phone as given.
 */
export const localPhone: Rule = lineOf(50)

/** The seven keys of shipping_address and billing_address. */
export const ADDRESS_KEYS = ['contact_name', 'contact_phone_number', 'line1', 'line2', 'postcode', 'city', 'state'] as const

/** A value of params or an address: one line of at most 255 characters; empty values are taken. */
const nestedValue: Rule = lineOf(255)

export const addressValue: Rule = nestedValue

const PARAMS_KEY = /^reference(\d{1,2})(_label)?$/
/** A key a form field name `params[key]` can carry. */
const FORM_KEY = /^[^[\]]+$/

/** `referenceN` / `referenceN_label`, N from 1 to 18, as the spec documents them (`reference01` reads as 1). */
export function isDocumentedParamsKey(key: string): boolean {
  const found = PARAMS_KEY.exec(key)
  const index = found === null ? 0 : Number(found[1])
  return index >= 1 && index <= 18
}

export interface ParamsReading {
  /** By params key. */
  readonly problems: Record<string, string>
  readonly notes: string[]
}

/**
 * params (spec: "Object of up to 18 pairs referenceN_label / referenceN (N = 1..18)"). Keys must fit in a form
 * field name; values are at most 255 characters in both readings. Lenient keeps, with a note:
 * - other keys: a public Laravel library's README sends `params[selected_item]` (docs/emulator.md);
 * - control characters: no evidence either way. The values come back signed in the result, and the browser that
 *   posts the redirect sends a lone CR or LF as CR LF, so such a redirect no longer verifies (the callback does):
 *   worth a warning, not a refusal of a payment the service may well take (docs/emulator.md).
 * Strict refuses both.
 */
export function readParams(entries: Iterable<readonly [string, string]>, reading: Reading): ParamsReading {
  const problems: Record<string, string> = {}
  const notes: string[] = []
  const undocumented: string[] = []
  const multiline: string[] = []
  for (const [key, value] of entries) {
    if (!isDocumentedParamsKey(key)) {
      if (!FORM_KEY.test(key)) {
        problems[key] = 'must be a key a form can send as params[key]: not empty, without [ or ]'
        continue
      }
      if (reading === 'strict') {
        problems[key] = 'params keys are reference1..reference18 and their _label'
        continue
      }
      undocumented.push(key)
    }
    const problem = nestedValue(value)
    if (problem === NOT_ONE_LINE && reading === 'lenient') multiline.push(`params[${key}]`)
    else if (problem !== undefined) problems[key] = problem
  }
  if (undocumented.length > 0) {
    const one = undocumented.length === 1
    notes.push(
      `params key${one ? '' : 's'} ${undocumented.map((key) => JSON.stringify(key)).join(', ')} ${one ? 'is' : 'are'} not ` +
        "reference1..reference18 or their _label (the spec's); kept and sent back as given",
    )
  }
  if (multiline.length > 0)
    notes.push(
      `${multiline.join(', ')} ${multiline.length === 1 ? 'holds a control character' : 'hold control characters'}; kept and signed as sent, ` +
        'but a browser posting the redirect sends a lone CR or LF as CR LF, so that redirect will not verify (the callback will)',
    )
  return { problems, notes }
}
