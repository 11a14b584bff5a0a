import { z } from 'zod'

/**
 * The rules for the fields of a redirect or callback (spec "Events"), kept in one table so the exported zod
 * schema and the receiver's own check (which runs on every delivery, before deduplication) cannot drift.
 * Only what the receiver needs to act on a payment is required (exchange_number and order_number identify it and
 * key deduplication, payment_status classifies it, checksum authenticates it); everything else is checked when
 * present and non-empty, because the service adds and omits fields over time and a refused genuine message is a
 * lost payment.
 */
// At most 13 integer digits (leading zeros aside): any amount in sen is then a safe integer (< 2^53), so
// amountSen is exact. The service's own ceiling is 999,999,999.99.
const decimal = /^0*\d{1,13}(\.\d{1,2})?$/
const booleanText = /^(true|false)$/
const digits = /^\d+$/

interface FieldRule {
  readonly required: boolean
  readonly pattern?: RegExp
  readonly expected: string
}

export const PAYMENT_FIELD_RULES = {
  exchange_number: { required: true, pattern: /\S/, expected: 'a non-empty reference' },
  order_number: { required: true, pattern: /\S/, expected: 'a non-empty order number' },
  payment_status: { required: true, pattern: booleanText, expected: 'true or false' },
  // Not required: real results may come without it, and nothing the receiver decides depends on it.
  transaction_amount: { required: false, pattern: decimal, expected: 'a decimal amount such as 100.20, below 10^13' },
  transaction_amount_received: { required: false, pattern: decimal, expected: 'a decimal amount below 10^13' },
  transaction_fee: { required: false, pattern: decimal, expected: 'a decimal amount below 10^13' },
  amount: { required: false, pattern: decimal, expected: 'a decimal amount below 10^13' },
  payment_id: { required: false, pattern: digits, expected: 'an integer' },
  created_at_unixtime: { required: false, pattern: digits, expected: 'Unix epoch seconds' },
  fpx_status: { required: false, pattern: booleanText, expected: 'true or false' },
  fpx_debit_auth_code: { required: false, expected: 'text' },
  source: { required: false, expected: 'text' },
  currency: { required: false, expected: 'text' },
  merchant_reference_number: { required: false, expected: 'text' },
  buyer_name: { required: false, expected: 'text' },
  buyer_phone: { required: false, expected: 'text' },
  buyer_email: { required: false, expected: 'text' },
  client_ip: { required: false, expected: 'text' },
  status_url: { required: false, expected: 'text' },
  retry_url: { required: false, expected: 'text' },
  receipt_url: { required: false, expected: 'text' },
  payment_mode: { required: false, expected: 'text' },
  payment_method: { required: false, expected: 'text' },
  fpx_model: { required: false, expected: 'text' },
  fpx_name: { required: false, expected: 'text' },
  fpx_bank: { required: false, expected: 'text' },
  fpx_transaction_id: { required: false, expected: 'text' },
  fpx_status_message: { required: false, expected: 'text' },
  fpx_transaction_time: { required: false, expected: 'text' },
  payment_stage: { required: false, expected: 'text' },
  merchant_name: { required: false, expected: 'text' },
  merchant_co_number: { required: false, expected: 'text' },
  uid: { required: false, expected: 'text' },
  created_at: { required: false, expected: 'text' },
  token: { required: false, expected: 'text' },
  checksum: { required: true, pattern: /^[0-9a-fA-F]{64}$/, expected: '64 hexadecimal characters' },
} as const satisfies Record<string, FieldRule>

type Rules = typeof PAYMENT_FIELD_RULES
type RequiredName = { [K in keyof Rules]: Rules[K]['required'] extends true ? K : never }[keyof Rules]
type OptionalName = Exclude<keyof Rules, RequiredName>

function textSchema(rule: FieldRule): z.ZodType<string> {
  const text = z.string()
  if (rule.pattern === undefined) return text
  const pattern = rule.pattern
  // Empty optional text stands for null (the service writes null as empty), so it passes.
  return rule.required
    ? text.regex(pattern, `expected ${rule.expected}`)
    : text.refine((value) => value === '' || pattern.test(value), `expected ${rule.expected}`)
}

const shape = Object.fromEntries(
  Object.entries(PAYMENT_FIELD_RULES as Record<string, FieldRule>).map(([name, rule]) => {
    const schema = textSchema(rule)
    return [name, rule.required ? schema : schema.optional()]
  }),
) as { [K in RequiredName]: z.ZodType<string> } & { [K in OptionalName]: z.ZodOptional<z.ZodType<string>> }

/**
 * The fields of a redirect or callback as the service sends them: text, with unknown extra fields kept.
 * Nested fields (`params`, `shipping_address`, `billing_address`) and any new ones pass through untouched.
 */
export const paymentResultSchema = z.looseObject(shape)

export type PaymentResultFields = z.infer<typeof paymentResultSchema>

export interface FieldProblem {
  readonly field: string
  readonly expected: string
}

// `checksum` is left to the verifier, which checks it before anything else.
const CHECKED_RULES = Object.entries(PAYMENT_FIELD_RULES as Record<string, FieldRule>).filter(
  ([name]) => name !== 'checksum',
)

/**
 * The receiver's check, equivalent to `paymentResultSchema` on the fields with rules (but `checksum`).
 * `text(name)` gives a field's text, or undefined when it is absent or not text.
 */
export function findFieldProblems(has: (name: string) => boolean, text: (name: string) => string | undefined): FieldProblem[] {
  let problems: FieldProblem[] | undefined
  for (const [field, rule] of CHECKED_RULES) {
    const value = text(field)
    const ok =
      value === undefined
        ? !rule.required && !has(field)
        : (value === '' && !rule.required) || rule.pattern === undefined || rule.pattern.test(value)
    if (!ok) (problems ??= []).push({ field, expected: rule.expected })
  }
  return problems ?? []
}
