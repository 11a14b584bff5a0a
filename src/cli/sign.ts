import { readAmount } from '../core/request/amount.js'
import { FIELD_RULES, IS_REQUIRED, localPhone, type Rule } from '../core/request/field-rules.js'
import { type PaymentRequestChecksumFields, requestChecksum } from '../core/request/request-checksum.js'
import { messageChecksum } from '../core/result/checksum.js'
import { encodeForm } from '../core/result/form-encode.js'
import { signCallback } from '../core/result/test-signing.js'
import type { FieldInput } from '../core/values.js'
import { parseArgs, UsageError } from './args.js'
import { checksumToken, EXIT, FIELD_FLAGS, helpRequested, type Io, readFields, TOKEN_FLAG } from './common.js'

export const SIGN_HELP = `Usage: fpx-collect sign [--request] [--field name=value]... [--fields file.json] [--output checksum|form|json]

Computes a checksum with the Checksum Token, as the service does.

  (default)            A redirect/callback message: every field but checksum, sorted by name, values joined by |.
  --request            A payment request (POST /v1/payments): the nine fields of the spec's Authentication 5 in
                       their fixed order; callback_url and redirect_url may be left out. Every missing or
                       invalid field is named at once, by the rules the emulator applies.
  --field name=value   A field; repeatable. params[reference1]=12 makes a nested params field.
  --fields file.json   Fields from a JSON object (nested objects allowed); --field pairs override them.
  --output checksum    Print only the checksum (default).
  --output form        Print the form-encoded body with the checksum added (no token field is added).
  --output json        Print the JSON body with the checksum added (messages only).
  --rendering ruby|ruby34|flat
                       How nested fields enter a message's signed string (default ruby; see the README).
  --checksum-token T   The Checksum Token; better: set FPX_CHECKSUM_TOKEN. It is never printed.

Exit codes: 0 printed, 2 usage error (unknown flag, missing or invalid field, no token).
`

const RENDERINGS = ['ruby', 'ruby34', 'flat'] as const

/**
 * The signed fields of a payment request in the spec's order, each with the rule the emulator applies outside
 * strict mode (core/request/field-rules.ts): a request that passes here is one the emulator takes.
 */
const REQUEST_RULES: Record<keyof PaymentRequestChecksumFields, Rule> = {
  buyer_email: FIELD_RULES.buyer_email,
  buyer_name: FIELD_RULES.buyer_name,
  buyer_phone: localPhone,
  callback_url: FIELD_RULES.callback_url,
  order_number: FIELD_RULES.order_number,
  product_description: FIELD_RULES.product_description,
  redirect_url: FIELD_RULES.redirect_url,
  transaction_amount: (value) => {
    const reading = readAmount(value)
    return reading.ok ? undefined : reading.problem
  },
  uid: FIELD_RULES.uid,
}
const OPTIONAL_REQUEST_FIELDS: ReadonlySet<string> = new Set(['callback_url', 'redirect_url'])

/** Every problem of the request's signed fields, one line each, so one run shows all there is to fix. */
function requestProblems(fields: Readonly<Record<string, FieldInput>>): string[] {
  const problems: string[] = []
  for (const [name, rule] of Object.entries(REQUEST_RULES)) {
    const value = fields[name]
    // buyer_phone may be empty (shops without one send ''), as the emulator takes it; the others may not.
    const absent = value === undefined || value === null || (value === '' && name !== 'buyer_phone')
    const problem = absent ? (OPTIONAL_REQUEST_FIELDS.has(name) ? undefined : IS_REQUIRED) : typeof value !== 'string' ? 'must be text' : rule(value)
    if (problem !== undefined) problems.push(`${name}: ${problem}`)
  }
  return problems
}

export function sign(argv: readonly string[], io: Io, env: NodeJS.ProcessEnv): number {
  const args = parseArgs(argv, { ...TOKEN_FLAG, ...FIELD_FLAGS, request: { type: 'boolean' }, output: { type: 'string' }, rendering: { type: 'string' } })
  if (helpRequested(args, io, SIGN_HELP)) return EXIT.ok
  if (args.positionals.length > 0) throw new UsageError(`unexpected argument ${args.positionals[0]}`)
  const output = args.string('output') ?? 'checksum'
  if (output !== 'checksum' && output !== 'form' && output !== 'json') throw new UsageError('--output is checksum, form or json')
  const rendering = args.string('rendering') ?? 'ruby'
  if (!(RENDERINGS as readonly string[]).includes(rendering)) throw new UsageError('--rendering is ruby, ruby34 or flat')
  const fields = readFields(args)
  if (Object.keys(fields).length === 0) throw new UsageError('no fields: give --field name=value or --fields file.json')
  const token = checksumToken(args, env)

  if (args.boolean('request')) {
    if (output === 'json') throw new UsageError('--output json is for messages; payment requests are form-encoded')
    const problems = requestProblems(fields)
    if (problems.length > 0)
      throw new UsageError(`the payment request's signed fields need fixing (${problems.length}):\n  ${problems.join('\n  ')}`)
    let checksum: string
    try {
      checksum = requestChecksum(fields as unknown as PaymentRequestChecksumFields, token)
    } catch (error) {
      throw new UsageError((error as Error).message)
    }
    io.out(output === 'checksum' ? `${checksum}\n` : `${encodeForm({ ...fields, checksum })}\n`)
    return EXIT.ok
  }
  const options = { rendering: rendering as (typeof RENDERINGS)[number] }
  if (output === 'checksum') io.out(`${messageChecksum(fields, token, options)}\n`)
  else io.out(`${signCallback(fields, token, { ...options, format: output }).body}\n`)
  return EXIT.ok
}
