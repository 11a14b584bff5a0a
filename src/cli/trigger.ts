import { samplePaymentFields, signCallback } from '../core/result/test-signing.js'
import type { FieldInput } from '../core/values.js'
import { parseArgs, UsageError } from './args.js'
import { checksumToken, EXIT, FIELD_FLAGS, helpRequested, type Io, readFields, TOKEN_FLAG } from './common.js'

export const TRIGGER_HELP = `Usage: fpx-collect trigger <succeeded|failed|pending> --url URL [--uid UID] [--field name=value]...

Sends one signed payment result to URL, as the service's callback does (like \`stripe trigger\`), and prints
the status and body of the answer. Each run has fresh order and reference numbers.

  succeeded            fpx_debit_auth_code 00, payment_status true.
  failed               fpx_debit_auth_code 51, payment_status false, retry_url set, no receipt_url.
  pending              A B2B1 payment pending corporate approval: fpx_debit_auth_code 99.
  --url URL            Where to POST (your callback_url or redirect_url route). A redirect the app answers
                       with (303 to your success page) is reported with its Location, not followed.
  --uid UID            The API UID the message carries (the receiver picks the token by it).
  --field name=value   Override or add a field; repeatable. params[reference1]=12 makes a nested field.
  --fields file.json   Fields from a JSON object; --field pairs override them.
  --format form|json   Body encoding (default form, what the service sends).
  --timeout seconds    Give up waiting for the answer (default 30).
  --checksum-token T   The Checksum Token; better: set FPX_CHECKSUM_TOKEN. It is never printed.

Exit codes: 0 answered 2xx or 3xx, 1 answered otherwise, 2 usage error, 3 no answer (connection refused, time-out).
`

const STATES: Record<string, Record<string, FieldInput>> = {
  succeeded: {},
  failed: {
    payment_status: 'false',
    transaction_amount_received: '0.00',
    fpx_debit_auth_code: '51',
    fpx_status: 'false',
    fpx_status_message: 'Insufficient funds',
    payment_stage: 'payment_unsuccessful',
    receipt_url: '',
  },
  pending: {
    payment_status: 'false',
    transaction_amount_received: '0.00',
    fpx_model: 'B2B1',
    fpx_debit_auth_code: '99',
    fpx_status: 'false',
    fpx_status_message: 'Pending for authorizer approval',
    payment_stage: 'payment_pending',
    receipt_url: '',
  },
}

const MAX_SHOWN_BODY = 4000

export async function trigger(argv: readonly string[], io: Io, env: NodeJS.ProcessEnv): Promise<number> {
  const args = parseArgs(argv, {
    ...TOKEN_FLAG,
    ...FIELD_FLAGS,
    url: { type: 'string' },
    uid: { type: 'string' },
    format: { type: 'string' },
    timeout: { type: 'string' },
  })
  if (helpRequested(args, io, TRIGGER_HELP)) return EXIT.ok
  const [state, extra] = args.positionals
  if (state === undefined || STATES[state] === undefined) throw new UsageError('name the state: succeeded, failed or pending')
  if (extra !== undefined) throw new UsageError(`unexpected argument ${extra}`)
  const target = args.string('url')
  if (target === undefined || !/^https?:\/\//.test(target)) throw new UsageError('--url must be an http or https URL')
  const format = args.string('format') ?? 'form'
  if (format !== 'form' && format !== 'json') throw new UsageError('--format is form or json')
  const timeout = Number(args.string('timeout') ?? '30')
  if (!(timeout > 0)) throw new UsageError('--timeout is a number of seconds')
  const token = checksumToken(args, env)

  const fields = samplePaymentFields(STATES[state])
  const uid = args.string('uid') ?? (fields.uid as string)
  fields.uid = uid
  fields.status_url = String(fields.status_url).replace(/uid=[^&]*/, `uid=${encodeURIComponent(uid)}`)
  if (state === 'failed') fields.retry_url = `https://sandbox.example.test/api/v1/retry/${String(fields.merchant_reference_number)}?uid=${encodeURIComponent(uid)}`
  Object.assign(fields, readFields(args))
  const { body, contentType } = signCallback(fields, token, { format })

  io.out(`POST ${target}\n  ${state}: order_number ${String(fields.order_number)}, exchange_number ${String(fields.exchange_number)}\n`)
  let response: Response
  try {
    // Not followed: a redirect route answers the buyer's browser with a 303 to the shop's page, and that answer
    // (not the page it points to) is what tells whether the app handled the result.
    response = await fetch(target, { method: 'POST', headers: { 'content-type': contentType }, body, redirect: 'manual', signal: AbortSignal.timeout(timeout * 1000) })
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause
    const reason = cause?.code ?? cause?.message ?? (error as Error).message
    io.err(`fpx-collect trigger: no answer from ${target} (${reason})\n`)
    return EXIT.failure
  }
  const text = await response.text()
  const redirected = response.status >= 300 && response.status < 400
  const location = response.headers.get('location')
  const where = redirected ? `Location: ${location ?? '(none)'} (not followed)\n` : ''
  io.out(`${response.status} ${response.statusText}\n${where}${text.length > MAX_SHOWN_BODY ? `${text.slice(0, MAX_SHOWN_BODY)}…` : text}\n`)
  return response.ok || (redirected && location !== null) ? EXIT.ok : EXIT.negative
}
