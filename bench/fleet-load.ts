/**
 * bench/fleet.ts's load generator, open loop: payments start at a fixed rate whatever the fleet answers, so a slow
 * answer cannot slow the offered load down and hide its own latency. Each payment is created through the
 * emulator's API (POST /v1/payments, signed with the merchant's credentials) and completed through its control
 * API; the emulator then posts the callback itself to one process, while this process replays what the service
 * and the buyer's browser send to the two others: the same callback again (same URL query and body, as the
 * emulator's default transport sends them) and the redirect (the signed fields, form-encoded, as the processing
 * page's form posts them).
 */
import { Agent, request } from 'node:http'
import type { FpxClient } from '../src/client/index.js'
import type { Testing } from './dist.js'
import { fromDist } from './dist.js'

const { encodeForm } = await fromDist<Testing>('testing')

const FORM = 'application/x-www-form-urlencoded'
/** An answer slower than this counts as none (an error), like the emulator's own callback time-out. */
const TIMEOUT_MS = 10_000
/** Payments in flight beyond which the fleet has collapsed: later ones are not started, and counted as errors. */
const MAX_IN_FLIGHT = 3000

const agent = new Agent({ keepAlive: true, maxSockets: 256 })

interface Answer {
  /** 0 when there was no answer. */
  status: number
  error?: string
  exchangeNumber?: string
  body: string
}

function post(url: string, body: string, contentType: string, keepBody: boolean): Promise<Answer> {
  return new Promise((resolve) => {
    const outgoing = request(url, { method: 'POST', agent, timeout: TIMEOUT_MS, headers: { 'content-type': contentType, 'content-length': Buffer.byteLength(body) } }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => void (keepBody && chunks.push(chunk)))
      response.on('error', (error: NodeJS.ErrnoException) => resolve({ status: 0, error: error.code ?? error.message, body: '' }))
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, exchangeNumber: response.headers['x-exchange-number'] as string | undefined, body: Buffer.concat(chunks).toString('utf8') }),
      )
    })
    outgoing.on('timeout', () => outgoing.destroy(Object.assign(new Error('timeout'), { code: 'timeout' })))
    outgoing.on('error', (error: NodeJS.ErrnoException) => resolve({ status: 0, error: error.code ?? error.message, body: '' }))
    outgoing.end(body)
  })
}

export interface FleetTarget {
  /** The emulator's root (control API) and its {base_url}. */
  emulatorUrl: string
  baseUrl: string
  /** Each receiver process's root, http://127.0.0.1:<port>. */
  receivers: readonly string[]
  client: FpxClient
}

export interface LoadResult {
  /** Payments the schedule asked for, and those started (fewer when MAX_IN_FLIGHT was reached). */
  planned: number
  started: number
  /** Payments created and completed at the emulator: each gets its callback from the emulator. */
  completed: number
  /** How late the schedule started its payments at worst: the load generator falling behind. */
  maxStartLagMs: number
  seconds: number
  latencyMs: { duplicate: number[]; redirect: number[] }
  answers: { duplicate: Record<string, number>; redirect: Record<string, number> }
  /** Failures of the emulator's API (create, complete), by what was answered. */
  emulatorErrors: Record<string, number>
  /** How long create + complete took: the emulator's share of a payment's time. */
  emulatorMs: number[]
  /**
   * The rate the deliveries actually went out at (when each payment's completion was answered), per second,
   * between the first and the last: below the offered rate when the emulator's answers fell further and further
   * behind, whatever the receivers did.
   */
  sentPerSecond: number
}

const count = (tally: Record<string, number>, key: string) => void (tally[key] = (tally[key] ?? 0) + 1)
const answerKey = (answer: Answer) => (answer.status === 0 ? (answer.error ?? 'no answer') : String(answer.status))

/** Runs `seconds` of payments at `deliveriesPerSecond` (three deliveries each) and waits for every one to finish. */
export async function runLoad(target: FleetTarget, deliveriesPerSecond: number, seconds: number, orderPrefix: string): Promise<LoadResult> {
  const perSecond = deliveriesPerSecond / 3
  const planned = Math.max(1, Math.round(perSecond * seconds))
  const result: LoadResult = {
    planned,
    started: 0,
    completed: 0,
    maxStartLagMs: 0,
    seconds,
    latencyMs: { duplicate: [], redirect: [] },
    answers: { duplicate: {}, redirect: {} },
    emulatorErrors: {},
    emulatorMs: [],
    sentPerSecond: Number.NaN,
  }
  let [firstSent, lastSent] = [Number.POSITIVE_INFINITY, 0]
  const { receivers } = target
  const timed = async (kind: 'duplicate' | 'redirect', url: string, body: string) => {
    const sent = performance.now()
    const answer = await post(url, body, FORM, false)
    result.latencyMs[kind].push(performance.now() - sent)
    count(result.answers[kind], answerKey(answer))
  }

  const pay = async (index: number) => {
    const [callbackTo, duplicateTo, redirectTo] = [0, 1, 2].map((shift) => receivers[(index + shift) % receivers.length] as string)
    const form = target.client.buildPaymentForm({
      order_number: `${orderPrefix}-${index}`,
      buyer_name: 'Nur Aisyah binti Ahmad',
      buyer_email: 'aisyah@example.com',
      buyer_phone: '+60123456789',
      transaction_amount: '100.20',
      product_description: 'Flash sale: two kilos of coffee beans',
      callback_url: `${callbackTo}/fpx/callback`,
      redirect_url: `${redirectTo}/fpx/redirect`,
      // Posted straight to the emulator, as the buyer's browser would post it: the form reaches no buyer here.
    }, { exposeAuthToken: true })
    const began = performance.now()
    const created = await post(form.action, new URLSearchParams(form.fields as Record<string, string>).toString(), FORM, false)
    if (created.status !== 200 || created.exchangeNumber === undefined) return count(result.emulatorErrors, `create ${answerKey(created)}`)
    const completed = await post(`${target.emulatorUrl}/__emulator/payments/${created.exchangeNumber}/complete`, '{"outcome":"approve"}', 'application/json', true)
    if (completed.status !== 200) return count(result.emulatorErrors, `complete ${answerKey(completed)}`)
    const sent = performance.now()
    result.emulatorMs.push(sent - began)
    ;[firstSent, lastSent] = [Math.min(firstSent, sent), Math.max(lastSent, sent)]
    result.completed++
    const encoded = encodeForm((JSON.parse(completed.body) as { result: Record<string, string> }).result)
    await Promise.all([timed('duplicate', `${duplicateTo}/fpx/callback?${encoded}`, encoded), timed('redirect', `${redirectTo}/fpx/redirect`, encoded)])
  }

  const inFlight = new Set<Promise<void>>()
  const start = performance.now()
  for (let next = 0; next < planned; ) {
    const now = performance.now()
    const due = Math.min(planned, Math.floor(((now - start) / 1000) * perSecond) + 1)
    for (; next < due; next++) {
      result.maxStartLagMs = Math.max(result.maxStartLagMs, now - (start + (next / perSecond) * 1000))
      if (inFlight.size >= MAX_IN_FLIGHT) continue
      result.started++
      const running = pay(next).finally(() => inFlight.delete(running))
      inFlight.add(running)
    }
    const wait = start + (next / perSecond) * 1000 - performance.now()
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, wait)))
  }
  await Promise.all(inFlight)
  // Three deliveries per completed payment, over the span the schedule gave them (one payment fewer than sent).
  if (result.completed > 1) result.sentPerSecond = ((result.completed - 1) * 3) / ((lastSent - firstSent) / 1000)
  return result
}

/** Closes the kept-alive sockets, so the process can end. */
export function closeLoad(): void {
  agent.destroy()
}
