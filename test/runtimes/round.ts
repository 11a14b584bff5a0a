import type { FieldInput } from '../../src/core/values.js'
import { encodeForm, signCallback } from '../../src/testing.js'
import type { Emulator } from '../emulator/harness.js'

/**
 * The round every runtime app must pass, driven from Node over HTTP on 127.0.0.1. The genuine results are real
 * payments completed on the emulator (so a receiver that confirms over the API finds them there), posted by
 * the harness itself so that it decides how often each one arrives.
 */

export const CHECKS = ['starts', 'module scope', 'genuine', 'duplicate', 'forged', 'redirect'] as const
export type Check = (typeof CHECKS)[number]

export interface Outcome {
  ok: boolean
  /** What was seen: on a failure, what went wrong, in words and with the answer's status and body. */
  detail: string
}

export interface Status {
  runtime: string
  moduleScope: string
  handled: Record<string, number>
  /** event.confirmed as the handler saw it, per exchange_number; absent where the receiver does not say. */
  confirmed: Record<string, boolean | undefined>
}

const TIMEOUT_MS = 20_000
const OTHER_TOKEN = 'f'.repeat(64)

type Fields = Record<string, FieldInput>

interface Answer {
  status: number
  location: string | null
  body: string
}

function describe(answer: Answer): string {
  const body = answer.body.replace(/\s+/g, ' ').trim().slice(0, 300)
  return `${answer.status}${answer.location === null ? '' : ` → ${answer.location}`}${body === '' ? '' : ` ${body}`}`
}

async function post(url: string, body: string, contentType = 'application/x-www-form-urlencoded'): Promise<Answer> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': contentType }, body, redirect: 'manual', signal: AbortSignal.timeout(TIMEOUT_MS) })
  return { status: response.status, location: response.headers.get('location'), body: await response.text() }
}

export async function readStatus(appUrl: string): Promise<Status> {
  const response = await fetch(`${appUrl}/status`, { signal: AbortSignal.timeout(TIMEOUT_MS) })
  const text = await response.text()
  if (response.status !== 200) throw new Error(`GET /status answered ${describe({ status: response.status, location: null, body: text })}`)
  return JSON.parse(text) as Status
}

async function handledCount(appUrl: string, exchangeNumber: string): Promise<number> {
  return (await readStatus(appUrl)).handled[exchangeNumber] ?? 0
}

/** A payment created on the emulator and approved at the bank: the signed fields the service posts. */
export async function approvedPayment(emulator: Emulator): Promise<Fields> {
  // No callback_url: the harness, not the emulator, posts the result, as often as each check needs.
  const exchangeNumber = await emulator.pay({ callback_url: '' })
  const { result } = (await emulator.complete(exchangeNumber, 'approve')) as { result: Fields }
  return result
}

/** A check's steps: each returns what it saw, or throws what went wrong. */
async function attempt(steps: () => Promise<string>): Promise<Outcome> {
  try {
    return { ok: true, detail: await steps() }
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    const cause = error instanceof Error && error.cause instanceof Error ? ` (${error.cause.message})` : ''
    return { ok: false, detail: `${message}${cause}` }
  }
}

function expectAnswer(what: string, answer: Answer, status: number, location?: string): void {
  if (answer.status !== status || (location !== undefined && answer.location !== location))
    throw new Error(`${what}: expected ${status}${location === undefined ? '' : ` → ${location}`}, got ${describe(answer)}`)
}

async function expectHandled(appUrl: string, what: string, exchangeNumber: string, times: number): Promise<void> {
  const count = await handledCount(appUrl, exchangeNumber)
  if (count !== times) throw new Error(`${what}: the payment.succeeded handler ran ${count} time(s) for ${exchangeNumber}, expected ${times}`)
}

/**
 * Runs every check after the first ('starts', which the caller decides) against the app at appUrl, in order;
 * a check that fails does not stop the ones after it.
 */
export async function runRound(appUrl: string, emulator: Emulator, runtime: RegExp): Promise<Map<Check, Outcome>> {
  const outcomes = new Map<Check, Outcome>()
  const genuine = await approvedPayment(emulator)
  const exchangeNumber = String(genuine.exchange_number)
  const body = encodeForm(genuine)

  outcomes.set(
    'module scope',
    await attempt(async () => {
      const status = await readStatus(appUrl)
      if (!runtime.test(status.runtime)) throw new Error(`the app runs on "${status.runtime}", not the runtime expected (${runtime})`)
      if (status.moduleScope !== 'ok') throw new Error(`createReceiver at module scope threw: ${status.moduleScope}`)
      return `created at module scope on ${status.runtime}`
    }),
  )

  outcomes.set(
    'genuine',
    await attempt(async () => {
      const answer = await post(`${appUrl}/fpx/callback`, body)
      expectAnswer('a genuine callback', answer, 200)
      await expectHandled(appUrl, 'a genuine callback', exchangeNumber, 1)
      // The apps are given the API's credentials: a receiver that says whether it confirmed must have.
      const { confirmed } = await readStatus(appUrl)
      if (confirmed[exchangeNumber] === false) throw new Error(`a genuine callback: handled with event.confirmed false, though the app has the API's credentials`)
      return `200, handler ran once${confirmed[exchangeNumber] === true ? ', confirmed over the API' : ''} (${describe(answer)})`
    }),
  )

  outcomes.set(
    'duplicate',
    await attempt(async () => {
      const answer = await post(`${appUrl}/fpx/callback`, body)
      expectAnswer('the same callback again', answer, 200)
      await expectHandled(appUrl, 'the same callback again', exchangeNumber, 1)
      return `200, handler not rerun (${describe(answer)})`
    }),
  )

  outcomes.set(
    'forged',
    await attempt(async () => {
      // Signed with a token that is not the merchant's, for a payment of the emulator's.
      const other = await approvedPayment(emulator)
      const forged = signCallback(other, OTHER_TOKEN)
      const wrongToken = await post(`${appUrl}/fpx/callback`, forged.body, forged.contentType)
      expectAnswer('a callback signed with another token', wrongToken, 401)
      // The genuine result with its amount changed and its checksum kept.
      const tampered = await post(`${appUrl}/fpx/callback`, encodeForm({ ...genuine, transaction_amount: '1.00', transaction_amount_received: '1.00' }))
      expectAnswer('a tampered copy of the genuine callback', tampered, 401)
      await expectHandled(appUrl, 'a forged callback', String(other.exchange_number), 0)
      await expectHandled(appUrl, 'a tampered callback', exchangeNumber, 1)
      return `401 for another token's signature and for a tampered copy, no handler run`
    }),
  )

  outcomes.set(
    'redirect',
    await attempt(async () => {
      // The buyer's browser first, for a payment whose callback has not come: handled once, sent to successUrl.
      const fresh = await approvedPayment(emulator)
      const first = await post(`${appUrl}/fpx/redirect`, encodeForm(fresh))
      expectAnswer('the redirect of a new payment', first, 303, '/paid')
      await expectHandled(appUrl, 'the redirect of a new payment', String(fresh.exchange_number), 1)
      // The browser after the callback: the same answer, the handler not run again.
      const after = await post(`${appUrl}/fpx/redirect`, body)
      expectAnswer('the redirect after the callback', after, 303, '/paid')
      await expectHandled(appUrl, 'the redirect after the callback', exchangeNumber, 1)
      return '303 → /paid, before and after the callback, handler run once each'
    }),
  )
  return outcomes
}
