import { samplePaymentFields, signCallback } from '../core/result/test-signing.js'
import type { FieldInput } from '../core/values.js'
import { parseArgs, UsageError } from './args.js'
import { checksumToken, EXIT, FIELD_FLAGS, helpRequested, type Io, readFields, TOKEN_FLAG } from './common.js'
import { reportAnswer, type RouteKind } from './trigger-answer.js'
import { checkRequestFields, type EmulatorTrigger, emulatorOrigin, triggerThroughEmulator } from './trigger-emulator.js'

export const TRIGGER_HELP = `Usage: fpx-collect trigger <succeeded|failed|pending> --url URL [--redirect] [--uid UID] [--emulator URL]
                           [--field name=value]...

Sends one payment result of the chosen state to URL, as the service does (like \`stripe trigger\`), and prints
the status and body of the app's answer. By default trigger makes the result up and signs it with your Checksum
Token, with fresh order and reference numbers that no API knows. With --emulator, the emulator makes a payment
and sends its result, which its status and search API know.

  succeeded            fpx_debit_auth_code 00, payment_status true.
  failed               fpx_debit_auth_code 51, payment_status false, retry_url set, no receipt_url.
  pending              A B2B1 payment pending corporate approval: fpx_debit_auth_code 99.
  --url URL            Where to POST: your callback_url route. A callback route must answer 2xx; a 3xx there
                       (a route behind a log-in redirect) is warned about and exits 1. A redirect is reported
                       with its Location, never followed.
  --redirect           URL is your redirect_url route (the buyer's browser posts there): a 3xx with a Location,
                       such as 303 to your success page, is its success.
  --emulator URL       The fpx-collect emulator your app's base URL points at (its address, such as
                       http://127.0.0.1:4010). It makes a payment whose callback_url (redirect_url with
                       --redirect) is --url, for the merchant credential set --uid names (or its only
                       merchant), and posts the signed result itself with its usual retries; trigger prints what
                       the app answered the first attempt. With --redirect, trigger posts the emulator's result
                       as the buyer's browser would. Needs no Checksum Token. --field then sets only the
                       payment's order_number, transaction_amount, buyer_name, buyer_email, buyer_phone,
                       product_description and params[...].
  --uid UID            The API UID the message carries (the receiver picks the token by it); with --emulator,
                       the emulator's merchant credential set to pay with.
  --field name=value   Override or add a field; repeatable. params[reference1]=12 makes a nested field.
  --fields file.json   Fields from a JSON object; --field pairs override them.
  --format form|json   Body encoding (default form, what the service sends). Not with --emulator.
  --timeout seconds    Give up waiting for the answer (default 30).
  --checksum-token T   The Checksum Token; better: set FPX_CHECKSUM_TOKEN. It is never printed.

A receiver that confirms results over the service's API (the default with credentials) answers a made-up result
503 confirmation_pending: trigger says so; use --emulator.

Exit codes: 0 answered 2xx (with --redirect, also a 3xx with a Location), 1 answered otherwise (a 3xx from a
callback route included), 2 usage error, 3 no answer (connection refused, time-out).
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

export async function trigger(argv: readonly string[], io: Io, env: NodeJS.ProcessEnv): Promise<number> {
  const args = parseArgs(argv, {
    ...TOKEN_FLAG,
    ...FIELD_FLAGS,
    url: { type: 'string' },
    uid: { type: 'string' },
    format: { type: 'string' },
    timeout: { type: 'string' },
    redirect: { type: 'boolean' },
    emulator: { type: 'string' },
  })
  if (helpRequested(args, io, TRIGGER_HELP)) return EXIT.ok
  const [state, extra] = args.positionals
  if (state === undefined) throw new UsageError('name the state: succeeded, failed or pending')
  if (!Object.hasOwn(STATES, state)) throw new UsageError(`${JSON.stringify(state.slice(0, 40))} is not a state: say succeeded, failed or pending`)
  if (extra !== undefined) throw new UsageError(`unexpected argument ${extra}`)
  const target = args.string('url')
  if (target === undefined) throw new UsageError('say where to deliver: --url http://127.0.0.1:3000/fpx/callback')
  if (!/^https?:\/\//.test(target)) throw new UsageError('--url must be an http or https URL')
  const format = args.string('format') ?? 'form'
  if (format !== 'form' && format !== 'json') throw new UsageError('--format is form or json')
  const timeout = Number(args.string('timeout') ?? '30')
  if (!(timeout > 0)) throw new UsageError('--timeout is a number of seconds')
  const route: RouteKind = args.boolean('redirect') ? 'redirect' : 'callback'
  const emulator = args.string('emulator')
  if (emulator !== undefined) {
    if (args.string('format') !== undefined) throw new UsageError('--format does not go with --emulator: the emulator posts a form, as the service does')
    const requestFields = readFields(args)
    checkRequestFields(requestFields)
    const uid = args.string('uid')
    const options: EmulatorTrigger = { emulator: emulatorOrigin(emulator), url: target, route, state: state as EmulatorTrigger['state'], uid, fields: requestFields, timeoutMs: timeout * 1000 }
    return triggerThroughEmulator(io, options)
  }
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
  const answer = { status: response.status, statusText: response.statusText, location: response.headers.get('location'), body: await response.text() }
  return reportAnswer(io, answer, route, { kind: 'made-up' })
}
