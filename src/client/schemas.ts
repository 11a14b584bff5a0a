import { z } from 'zod'
import { FpxApiError, FpxValidationError } from './errors.js'
import { address, amount, choiceOf, formBoolean, optionalText, params, phone, required, requiredText } from './field-rules.js'

/*
 * Inputs are checked before any request, with the spec's field names in the errors. The client refuses only what
 * the service refuses (the emulator's model of it, docs/emulator.md): the payment request's field rules are
 * core/request/field-rules.ts, the emulator's too, as zod schemas in field-rules.ts. In optional text fields `''`
 * counts as not given and is left out of the request.
 */

/** What the merchant supplies to pay; `token`, `uid` and `checksum` are added by the client. */
export const paymentInputSchema = z.object({
  order_number: requiredText('order_number'),
  buyer_name: requiredText('buyer_name'),
  buyer_email: requiredText('buyer_email'),
  /** Sent unchanged; `''` (also when left out) is what shops without a phone send. */
  buyer_phone: phone.optional().default(''),
  transaction_amount: amount,
  product_description: requiredText('product_description'),
  callback_url: optionalText('callback_url'),
  redirect_url: optionalText('redirect_url'),
  redirect_post: formBoolean.optional(),
  params: params.optional(),
  shipping_address: address.optional(),
  billing_address: address.optional(),
  buyer_bank_code: optionalText('buyer_bank_code'),
  model: choiceOf('model').optional(),
  fpx_bank_selection: choiceOf('fpx_bank_selection').optional(),
  cancel_url: optionalText('cancel_url'),
  timeout_url: optionalText('timeout_url'),
  /**
   * Partner variant; defaults to the client's `partnerUid`. Not checked against the client's own uid: the
   * service takes the merchant's own uid here as the merchant variant.
   */
  partner_uid: optionalText('partner_uid'),
})
export type PaymentInput = z.input<typeof paymentInputSchema>

export const sessionInputSchema = z.object({
  transaction_amount: amount,
  currency: choiceOf('currency').optional(),
  order_number: optionalText('order_number'),
  buyer_name: optionalText('buyer_name'),
  buyer_email: optionalText('buyer_email'),
  buyer_phone: phone.optional(),
  product_description: optionalText('product_description'),
  callback_url: optionalText('callback_url'),
  redirect_url: optionalText('redirect_url'),
  cancel_url: optionalText('cancel_url'),
  timeout_url: optionalText('timeout_url'),
  partner_uid: optionalText('partner_uid'),
  params: params.optional(),
})
export type SessionInput = z.input<typeof sessionInputSchema>

const DAY_MS = 86_400_000
/** The service's window: both bounds included, 90 days at most. */
export const MAX_WINDOW_DAYS = 90

export function dayNumber(date: string): number | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) return undefined
  const time = Date.parse(`${date}T00:00:00Z`)
  // Date.parse rolls 2026-02-30 over to March; an impossible date must not pass.
  return Number.isNaN(time) || new Date(time).toISOString().slice(0, 10) !== date ? undefined : time / DAY_MS
}

const dateText = z.string(required).refine((value) => dayNumber(value) !== undefined, 'must be a real date written yyyy-mm-dd')

export const transactionsQuerySchema = z
  .object({
    per_page: z.number({ error: 'must be a whole number from 1 to 100' }).int('must be a whole number from 1 to 100').min(1, 'must be at least 1').max(100, 'must be at most 100').optional(),
    page: z.number({ error: 'must be a whole number from 1' }).int('must be a whole number from 1').min(1, 'must be at least 1').optional(),
    payment_status: z.union([z.boolean(), z.enum(['true', 'false', 'all'])], { error: 'must be true, false or all' }).optional(),
    start_date: dateText.optional(),
    end_date: dateText.optional(),
  })
  .superRefine((query, context) => {
    const { start_date: start, end_date: end } = query
    if ((start === undefined) !== (end === undefined)) {
      const missing = start === undefined ? 'start_date' : 'end_date'
      context.addIssue({ code: 'custom', path: [missing], message: 'is required when the other date is given (both dates or none)' })
      return
    }
    const from = start === undefined ? undefined : dayNumber(start)
    const to = end === undefined ? undefined : dayNumber(end)
    if (from === undefined || to === undefined) return
    if (to < from) context.addIssue({ code: 'custom', path: ['end_date'], message: 'must not be before start_date' })
    else if (to - from + 1 > MAX_WINDOW_DAYS)
      context.addIssue({ code: 'custom', path: ['end_date'], message: `must be at most ${MAX_WINDOW_DAYS} days after start_date, both included` })
  })
export type TransactionsQuery = z.input<typeof transactionsQuerySchema>

export const searchInputSchema = z.object({
  search_reference: z.enum(['fpx_ref_number', 'order_number', 'exchange_number'], { error: 'must be fpx_ref_number, order_number or exchange_number' }),
  // Any non-empty text: an unknown or over-long reference simply matches nothing (200 with []).
  reference_number: z.string(required).min(1, 'is required'),
})
export type SearchReference = z.infer<typeof searchInputSchema>['search_reference']

/** Parses input, or throws FpxValidationError naming every offending field (`params[reference1]`, `end_date`). */
export function validate<S extends z.ZodType>(schema: S, input: unknown, what: string): z.infer<S> {
  const result = schema.safeParse(input)
  if (result.success) return result.data
  const fields: Record<string, string> = {}
  for (const issue of result.error.issues) {
    const [first, ...rest] = issue.path.map(String)
    const name = first === undefined ? 'input' : first + rest.map((part) => `[${part}]`).join('')
    fields[name] ??= issue.message
  }
  throw new FpxValidationError(fields, { prefix: `${what}: invalid input` })
}

// ---- Outputs. Loose objects: the service adds fields over time, and a client must not break on them. ----

const nullableText = z.string().nullable().optional()

export const credentialResultSchema = z.looseObject({ credential: z.boolean(), api_name: z.string(), merchant_name: z.string() })
export type CredentialResult = z.infer<typeof credentialResultSchema>

export const bankListSchema = z.looseObject({
  VerifySign: z.boolean().optional(),
  category: z.string().optional(),
  model: z.string().optional(),
  mode: z.string().optional(),
  fpx_bankList: z.array(
    z.looseObject({
      name: z.string(),
      code: z.string(),
      status_format1: z.string().optional(),
      status_format2: z.boolean().optional(),
      VerifySign: z.boolean().optional(),
    }),
  ),
})

export const transactionSchema = z.looseObject({
  source: nullableText,
  payment_status: z.boolean(),
  currency: nullableText,
  transaction_amount: z.string(),
  transaction_amount_received: nullableText,
  order_number: z.string(),
  merchant_reference_number: nullableText,
  exchange_number: z.string(),
  buyer_name: nullableText,
  buyer_phone: nullableText,
  buyer_email: nullableText,
  payment_id: z.number().int().nullable().optional(),
  client_ip: nullableText,
  status_url: nullableText,
  retry_url: nullableText,
  receipt_url: nullableText,
  created_at: nullableText,
  created_at_unixtime: nullableText,
  interface_name: nullableText,
  interface_uid: nullableText,
  transaction_fee: nullableText,
  fpx_model: nullableText,
  payment_mode: nullableText,
  payment_method: nullableText,
  payment_stage: nullableText,
  fpx_status: z.boolean().nullable().optional(),
  fpx_status_message: nullableText,
  fpx_debit_auth_code: nullableText,
  fpx_bank: nullableText,
  fpx_name: nullableText,
  fpx_transaction_id: nullableText,
  fpx_transaction_time: nullableText,
  merchant_name: nullableText,
  merchant_co_number: nullableText,
  uid: nullableText,
})
export type Transaction = z.infer<typeof transactionSchema>

export const transactionsPageSchema = z.looseObject({
  next_page: z.number().int().nullable(),
  current_page: z.number().int(),
  per_page: z.number().int(),
  total_page: z.number().int(),
  prev_page: z.number().int().nullable(),
  total_entries: z.number().int(),
  transactions: z.array(transactionSchema),
})
export type TransactionsPage = z.infer<typeof transactionsPageSchema>

export const sessionSchema = z.looseObject({
  payment_url: z.string(),
  data: z.looseObject({
    slug: z.string(),
    order_number: z.string(),
    transaction_amount: z.string(),
    currency: z.string(),
    currency_amount: z.string(),
    product_description: z.string(),
    buyer_name: nullableText,
    buyer_email: nullableText,
    buyer_phone: nullableText,
    callback_url: nullableText,
    redirect_url: nullableText,
    cancel_url: nullableText,
    timeout_url: nullableText,
    partner_uid: nullableText,
    other_params: z.record(z.string(), z.unknown()).nullable().optional(),
    created_at: z.string(),
    updated_at: z.string(),
  }),
})
export type PaymentSession = z.infer<typeof sessionSchema>

/** A 2xx answer whose shape is not the documented one: an API error, with the zod issues as the cause. */
export function readOutput<S extends z.ZodType>(schema: S, value: unknown, what: string, status: number): z.infer<S> {
  const result = schema.safeParse(value)
  if (result.success) return result.data
  const where = result.error.issues.map((issue) => issue.path.join('.') || '(root)').slice(0, 5).join(', ')
  throw new FpxApiError(`${what} answered ${status} with an unexpected shape (at ${where})`, status, value, { cause: result.error })
}
