/**
 * The rehearsal's payments, in open loop: they start at the chosen rate whatever the app answers, so a slow app
 * shows as growing latency rather than as a slower load. Each payment is created through the emulator's API
 * (POST /v1/payments, signed with the merchant's credentials, callback_url the recorder, redirect_url the app's)
 * and answered by the bank through the control API; the emulator then posts the callback (and its duplicates and
 * retries) itself, and this posts the redirect the buyer's browser would. A share of the payments fail at the
 * bank, and a share are B2B1: pending approval (99), then approved (00) a little later, a second callback.
 */
import type { FpxClient } from '../client/index.js'
import { encodeForm } from '../core/result/form-encode.js'
import type { FieldInput } from '../core/values.js'
import type { Poster } from './rehearse-http.js'
import { answerCode, type PostAnswer } from './rehearse-http.js'
import type { AppAnswer } from './rehearse-recorder.js'

export interface LoadPlan {
  /** Payments per second. */
  rate: number
  seconds: number
  failures: number
  b2b1: number
  approvalDelayMs: number
  /** The app's redirect route; without it the payments have no redirect_url and no redirect is posted. */
  redirectUrl: string | undefined
  /** The recorder's address, given to the emulator as callback_url. */
  callbackUrl: string
  /** The emulator's root (control API) and {base_url}. */
  emulatorUrl: string
  client: FpxClient
  orderPrefix: string
}

export interface LoadProgress {
  /** Payments the schedule started, and those whose creation, bank answer and redirect are all done. */
  started: number
  done: number
  /** By kind: succeeded, failed, b2b1 (pending, then approved). */
  kinds: Record<'succeeded' | 'failed' | 'b2b1', number>
  exchangeNumbers: Set<string>
  /** Failures of the emulator's API, by what it answered. */
  emulatorErrors: Record<string, number>
  /** How long the emulator's API took (create, bank answer, approval), ms, in order. */
  emulatorMs: number[]
  readonly inFlight: number
}

const FORM = { 'content-type': 'application/x-www-form-urlencoded' }
const JSON_BODY = { 'content-type': 'application/json' }
const API_TIMEOUT_MS = 10_000
const BROWSER_TIMEOUT_MS = 30_000

const describe = (answer: PostAnswer) => (answer.status === 0 ? (answer.error ?? 'no answer') : `${answer.status}${answerCode(answer.body) ? ` ${answerCode(answer.body)}` : ''}`)

/** Which kind the n-th payment is: spread evenly over the run (not random, so a short run still has each kind). */
function kindOf(n: number, plan: LoadPlan): 'succeeded' | 'failed' | 'b2b1' {
  const position = (n * 0.618_033_988_75) % 1
  if (position < plan.failures) return 'failed'
  if (position < plan.failures + plan.b2b1) return 'b2b1'
  return 'succeeded'
}

export function runPayments(plan: LoadPlan, http: Poster, onAnswer: (answer: AppAnswer) => void): { progress: LoadProgress; finished: Promise<void>; stop(): void } {
  let inFlight = 0
  let stopped = false
  const progress: LoadProgress = {
    started: 0,
    done: 0,
    kinds: { succeeded: 0, failed: 0, b2b1: 0 },
    exchangeNumbers: new Set(),
    emulatorErrors: {},
    emulatorMs: [],
    get inFlight() {
      return inFlight
    },
  }
  const failed = (what: string, answer: PostAnswer) => {
    const key = `${what}: ${describe(answer)}`
    progress.emulatorErrors[key] = (progress.emulatorErrors[key] ?? 0) + 1
  }
  const api = async (url: string, body: string, headers: Record<string, string>) => {
    const started = performance.now()
    const answer = await http.post(url, body, headers, API_TIMEOUT_MS)
    progress.emulatorMs.push(performance.now() - started)
    return answer
  }
  const control = (exchange: string, action: string, body = '') => api(`${plan.emulatorUrl}/__emulator/payments/${exchange}/${action}`, body, JSON_BODY)

  const redirect = async (fields: Record<string, FieldInput>) => {
    if (plan.redirectUrl === undefined) return
    const started = performance.now()
    const answer = await http.post(plan.redirectUrl, encodeForm(fields), FORM, BROWSER_TIMEOUT_MS)
    const at = performance.now()
    onAnswer({ route: 'redirect', at, ms: at - started, status: answer.status, code: answer.status === 0 ? answer.error : answer.status >= 400 ? answerCode(answer.body) : undefined })
  }

  const pay = async (n: number) => {
    const kind = kindOf(n, plan)
    progress.kinds[kind]++
    const form = plan.client.buildPaymentForm({
      order_number: `${plan.orderPrefix}-${n}`,
      buyer_name: 'Nur Aisyah binti Ahmad',
      buyer_email: 'aisyah@example.com',
      buyer_phone: '+60123456789',
      transaction_amount: '25.90',
      product_description: 'Sale rehearsal',
      callback_url: plan.callbackUrl,
      ...(plan.redirectUrl === undefined ? {} : { redirect_url: plan.redirectUrl }),
      ...(kind === 'b2b1' ? { model: 'B2B1' } : {}),
      // Posted straight to the emulator, as the buyer's browser would post it: the form reaches no buyer here.
    }, { exposeAuthToken: true })
    const created = await api(form.action, new URLSearchParams(form.fields as Record<string, string>).toString(), FORM)
    const exchange = created.headers['x-exchange-number']
    if (created.status !== 200 || typeof exchange !== 'string') return failed('create payment', created)
    progress.exchangeNumbers.add(exchange)
    const outcome = kind === 'failed' ? 'reject' : kind === 'b2b1' ? 'pending' : 'approve'
    const answered = await control(exchange, 'complete', JSON.stringify({ outcome }))
    if (answered.status !== 200) return failed(`bank answer (${outcome})`, answered)
    await redirect((JSON.parse(answered.body) as { result: Record<string, FieldInput> }).result)
    if (kind !== 'b2b1') return
    // The corporate approver approves a little later: the 00 callback follows the 99 one, no redirect (the buyer is gone).
    await new Promise((resolve) => setTimeout(resolve, plan.approvalDelayMs))
    const approved = await control(exchange, 'approve')
    if (approved.status !== 200) failed('corporate approval', approved)
  }

  const total = Math.max(1, Math.round(plan.rate * plan.seconds))
  const finished = (async () => {
    const running = new Set<Promise<void>>()
    const start = performance.now()
    for (let next = 0; next < total && !stopped; ) {
      const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * plan.rate) + 1)
      for (; next < due; next++) {
        progress.started++
        inFlight++
        const one: Promise<void> = pay(next)
          .catch((error: unknown) => void failed('payment', { status: 0, error: error instanceof Error ? error.message : String(error), headers: {}, body: '' }))
          .finally(() => {
            inFlight--
            progress.done++
            running.delete(one)
          })
        running.add(one)
      }
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, start + (next / plan.rate) * 1000 - performance.now())))
    }
    await Promise.all(running)
  })()
  return {
    progress,
    finished,
    stop: () => {
      stopped = true
    },
  }
}
