import { STATUS_CODES } from 'node:http'
import { encodeForm } from '../core/result/form-encode.js'
import type { FieldInput } from '../core/values.js'
import { UsageError } from './args.js'
import { EXIT, type Io } from './common.js'
import { reportAnswer, type RouteAnswer, type RouteKind } from './trigger-answer.js'

/**
 * `fpx-collect trigger --emulator URL`: the emulator makes a payment whose callback_url (or redirect_url) is the
 * app's route, gives it the bank's answer and sends the signed result itself, with its usual delivery and
 * retries (POST /__emulator/payments, then /complete). Its status and search API know that payment, so a
 * receiver that confirms results over the API handles it. trigger reports the first attempt's answer from the
 * emulator's delivery log; for a redirect route it posts the emulator's result as the buyer's browser would.
 */
export interface EmulatorTrigger {
  /** The emulator's origin, such as http://127.0.0.1:4010. */
  readonly emulator: string
  readonly url: string
  readonly route: RouteKind
  readonly state: 'succeeded' | 'failed' | 'pending'
  readonly uid: string | undefined
  /** Request fields of the payment (order_number, transaction_amount, ...). */
  readonly fields: Readonly<Record<string, FieldInput>>
  readonly timeoutMs: number
}

/** The fields the emulator's control API takes for the payment; everything else of a result is the emulator's. */
export const REQUEST_FIELDS = ['order_number', 'transaction_amount', 'buyer_name', 'buyer_email', 'buyer_phone', 'product_description', 'params'] as const

const OUTCOMES = { succeeded: 'approve', failed: 'reject', pending: 'pending' } as const
const POLL_MS = 50

/** Why a delivery has no attempt and will have none for now: the emulator's faults, or a reset. */
const NOT_SENT: Readonly<Record<string, string>> = {
  lost: "was lost by the emulator's lose_results fault: nothing was sent (clear it with POST /__emulator/faults {})",
  held: "is held back by the emulator's out_of_order fault until the payment's next callback (clear it with POST /__emulator/faults {})",
  cancelled: 'was cancelled before any attempt (the emulator was reset or stopped)',
}

interface Attempt {
  readonly status: number | null
  readonly error: string | null
  readonly answer: string | null
  readonly redirect_to: string | null
}

interface Delivery {
  readonly id: string
  readonly state: string
  readonly next_attempt_at: string | null
  readonly attempts: readonly Attempt[]
}

/** The emulator's origin from its root, base URL (…/api) or control API address. */
export function emulatorOrigin(text: string): string {
  let url: URL | undefined
  try {
    url = new URL(text)
  } catch {
    url = undefined
  }
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw new UsageError('--emulator must be the http URL of an fpx-collect emulator')
  return url.origin
}

export function checkRequestFields(fields: Readonly<Record<string, FieldInput>>): void {
  const others = Object.keys(fields).filter((name) => !(REQUEST_FIELDS as readonly string[]).includes(name))
  if (others.length > 0)
    throw new UsageError(
      `with --emulator the emulator makes and signs the result; --field sets only the payment's request fields (${REQUEST_FIELDS.join(', ')}), not ${others.join(', ')}`,
    )
}

/** Thrown when the emulator cannot be reached or refuses: the message for the user and the exit code. */
class EmulatorProblem extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message)
  }
}

async function control(trigger: EmulatorTrigger, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const address = `${trigger.emulator}/__emulator${path}`
  let response: Response
  try {
    response = await fetch(address, {
      method: body === undefined ? 'GET' : 'POST',
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(trigger.timeoutMs),
    })
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause
    throw new EmulatorProblem(`no answer from the emulator at ${trigger.emulator} (${cause?.code ?? (error as Error).message})`, EXIT.failure)
  }
  const text = await response.text()
  let json: Record<string, unknown> | undefined
  try {
    json = JSON.parse(text) as Record<string, unknown>
  } catch {
    json = undefined
  }
  // The emulator answers JSON, refusals included: anything else is another server (the app's URL, say).
  if (json === undefined) throw new EmulatorProblem(`${trigger.emulator} does not look like an fpx-collect emulator (${path} answered ${response.status}, not JSON)`, EXIT.usage)
  if (response.ok) return json
  const fields = json.fields === undefined ? '' : ` ${JSON.stringify(json.fields)}`
  const message = typeof json.error === 'string' ? json.error : `${response.status} ${response.statusText}`
  throw new EmulatorProblem(`the emulator refused: ${message}${fields}`, response.status < 500 ? EXIT.usage : EXIT.failure)
}

/** The delivery once its first attempt is logged (or it ended without one), polled from the emulator's log. */
async function firstAttempt(trigger: EmulatorTrigger, id: string): Promise<Delivery> {
  const deadline = Date.now() + trigger.timeoutMs
  for (;;) {
    const delivery = (await control(trigger, `/deliveries/${encodeURIComponent(id)}`)) as unknown as Delivery
    if (delivery.attempts.length > 0 || Object.hasOwn(NOT_SENT, delivery.state)) return delivery
    if (Date.now() > deadline) throw new EmulatorProblem(`the emulator made no attempt of ${id} within ${trigger.timeoutMs / 1000} s (state ${delivery.state})`, EXIT.failure)
    await new Promise((resolve) => setTimeout(resolve, POLL_MS))
  }
}

async function reportCallback(io: Io, trigger: EmulatorTrigger, delivery: Delivery): Promise<number> {
  const attempt = delivery.attempts[0]
  if (attempt === undefined) {
    io.err(`fpx-collect trigger: the emulator's callback ${delivery.id} ${NOT_SENT[delivery.state] ?? `is ${delivery.state}`}\n`)
    return EXIT.negative
  }
  io.out(`callback ${delivery.id}, attempt 1 by the emulator:\n`)
  if (attempt.status === null) {
    io.err(`fpx-collect trigger: no answer from ${trigger.url} (${attempt.error ?? 'unknown'})\n`)
    return EXIT.failure
  }
  const answer: RouteAnswer = { status: attempt.status, statusText: STATUS_CODES[attempt.status] ?? '', location: attempt.redirect_to, body: attempt.answer ?? '' }
  const code = reportAnswer(io, answer, 'callback', { kind: 'emulator', baseUrl: `${trigger.emulator}/api` })
  const settled = await control(trigger, `/deliveries/${encodeURIComponent(delivery.id)}`)
  if (settled.state === 'scheduled')
    io.out(`The emulator retries (next attempt at ${String(settled.next_attempt_at)}): ${trigger.emulator}/__emulator/deliveries/${delivery.id}\n`)
  return code
}

/** A redirect route gets the emulator's signed result posted by the buyer's browser: trigger posts it the same way. */
async function postAsBrowser(io: Io, trigger: EmulatorTrigger, result: Record<string, FieldInput>): Promise<number> {
  let response: Response
  try {
    response = await fetch(trigger.url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: encodeForm(result),
      redirect: 'manual',
      signal: AbortSignal.timeout(trigger.timeoutMs),
    })
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause
    io.err(`fpx-collect trigger: no answer from ${trigger.url} (${cause?.code ?? cause?.message ?? (error as Error).message})\n`)
    return EXIT.failure
  }
  const answer = { status: response.status, statusText: response.statusText, location: response.headers.get('location'), body: await response.text() }
  return reportAnswer(io, answer, 'redirect', { kind: 'emulator', baseUrl: `${trigger.emulator}/api` })
}

export async function triggerThroughEmulator(io: Io, trigger: EmulatorTrigger): Promise<number> {
  try {
    const target = trigger.route === 'callback' ? { callback_url: trigger.url } : { redirect_url: trigger.url }
    const payment = await control(trigger, '/payments', {
      ...trigger.fields,
      ...target,
      ...(trigger.uid === undefined ? {} : { uid: trigger.uid }),
      ...(trigger.state === 'pending' ? { model: 'B2B1' } : {}),
    })
    const exchangeNumber = String(payment.exchange_number)
    io.out(
      `emulator ${trigger.emulator}: payment ${exchangeNumber}, order_number ${String(payment.order_number)}, ${trigger.route}_url ${trigger.url}\n` +
        `  ${trigger.state}: the emulator's status and search API know it\n`,
    )
    const done = await control(trigger, `/payments/${encodeURIComponent(exchangeNumber)}/complete`, { outcome: OUTCOMES[trigger.state] })
    if (trigger.route === 'redirect') {
      io.out(`POST ${trigger.url} (the emulator's signed result, as the buyer's browser posts it)\n`)
      return await postAsBrowser(io, trigger, done.result as Record<string, FieldInput>)
    }
    const callback = done.callback as { id: string } | null
    if (callback === null) throw new EmulatorProblem('the emulator started no callback', EXIT.failure)
    return await reportCallback(io, trigger, await firstAttempt(trigger, callback.id))
  } catch (error) {
    if (!(error instanceof EmulatorProblem)) throw error
    io.err(`fpx-collect trigger: ${error.message}\n`)
    return error.code
  }
}
