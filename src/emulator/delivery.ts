import { encodeForm } from '../core/result/form-encode.js'
import type { FieldInput } from '../core/values.js'
import { type CallbackTransport, callbackRequestUrl, reasonOf, redirectTarget, redirectWarning, retryDelayMs } from './delivery-attempt.js'
import { type Faults, LostResults, NO_FAULTS } from './faults.js'
import type { CompletionOutcome, EmulatorState, PaymentRecord } from './state.js'
import type { WarningLog } from './warnings.js'

/**
 * Server-to-server result delivery to callback_url, with the retries and the log a merchant needs to see what
 * happened. The spec leaves retry behaviour, time-outs and the expected reply unshown; the emulator retries
 * until the merchant acknowledges (2xx, and 3xx unless strict) with exponential backoff (docs/emulator.md).
 */
export interface DeliveryOptions {
  /** Attempts per callback, the first included. Default 8. */
  attempts?: number
  /** Wait before the second attempt; each later wait doubles. Default 1000 ms. */
  initialDelayMs?: number
  /** Cap on one wait. Default 5 minutes. */
  maxDelayMs?: number
  /** An attempt that has no answer after this long counts as failed. Default 10 s. */
  timeoutMs?: number
  /**
   * Where the signed fields travel: `both` (default) a form-encoded POST body and the same fields appended to
   * callback_url's query string (after its own query, if any), because shops in production read them from
   * either (docs/emulator.md); `body` the body only; `query` an empty POST with the fields in the query only.
   */
  callbackTransport?: CallbackTransport
  /**
   * Whether a 3xx answer acknowledges the callback. Default true (WordPress plugins redirect after handling
   * one), false in strict mode; with false only 2xx does.
   */
  redirectCountsAsDelivered?: boolean
}

// Also reached from here by the soak driver and tests, as before the attempt's rules had a file of their own.
export { type CallbackTransport, callbackRequestUrl, retryDelayMs } from './delivery-attempt.js'

/** How the emulator around the deliverer behaves: strict or not, and where tolerated oddities are reported. */
export interface DeliveryEnvironment {
  readonly strict?: boolean
  readonly warnings?: WarningLog
}

export type DeliveryReason = 'result' | 'duplicate' | 'redelivery'
/** `lost`: a fault dropped it (lose_results, lose_approvals); it was never sent. */
export type DeliveryState = 'held' | 'scheduled' | 'sending' | 'delivered' | 'failed' | 'cancelled' | 'lost'

export interface DeliveryAttempt {
  readonly number: number
  readonly startedAt: string
  readonly durationMs: number
  /** The HTTP status answered, or null when there was no answer. */
  readonly status: number | null
  /** Why there was no answer (ECONNREFUSED, timeout, ...), or null. */
  readonly error: string | null
  /** The start of the body answered, to show why a merchant refused. */
  readonly answer: string | null
  /** For a 3xx, where it pointed: the Location's path (its origin too when another), never its query. */
  readonly redirectTo: string | null
}

export interface CallbackDelivery {
  readonly id: string
  readonly exchangeNumber: string
  /** callback_url as the merchant gave it. */
  readonly url: string
  readonly transport: CallbackTransport
  /** What was tolerated while delivering (a 3xx taken as acknowledgement), also in the warning log. */
  readonly warnings: string[]
  readonly fields: Record<string, FieldInput>
  readonly reason: DeliveryReason
  readonly createdAt: string
  state: DeliveryState
  nextAttemptAt: string | null
  readonly attempts: DeliveryAttempt[]
}

const ANSWER_EXCERPT = 200

export class CallbackDeliverer {
  faults: Faults = NO_FAULTS
  /** Every delivery, oldest first, and the same by id and by payment for the control API's lookups. */
  private log: CallbackDelivery[] = []
  private readonly byId = new Map<string, CallbackDelivery>()
  private readonly byPayment = new Map<string, CallbackDelivery[]>()
  private readonly attempts: number
  private readonly initialDelayMs: number
  private readonly maxDelayMs: number
  private readonly timeoutMs: number
  private readonly transport: CallbackTransport
  private readonly redirectCountsAsDelivered: boolean
  private readonly warnings: WarningLog | undefined
  private readonly timers = new Set<NodeJS.Timeout>()
  private readonly inFlight = new Set<Promise<void>>()
  private controller = new AbortController()
  /** Out-of-order fault: the held 99 callback of each exchange_number, sent after the next one settles. */
  private readonly held = new Map<string, CallbackDelivery>()
  /** Delivery id → the held delivery to release once it settles. */
  private readonly followers = new Map<string, CallbackDelivery>()
  private readonly lost = new LostResults()
  private nextId = 1

  constructor(options: DeliveryOptions = {}, environment: DeliveryEnvironment = {}) {
    this.attempts = Math.max(1, options.attempts ?? 8)
    this.initialDelayMs = Math.max(0, options.initialDelayMs ?? 1000)
    this.maxDelayMs = Math.max(this.initialDelayMs, options.maxDelayMs ?? 5 * 60_000)
    this.timeoutMs = Math.max(1, options.timeoutMs ?? 10_000)
    this.transport = options.callbackTransport ?? 'both'
    this.redirectCountsAsDelivered = options.redirectCountsAsDelivered ?? environment.strict !== true
    this.warnings = environment.warnings
  }

  /** Every delivery, oldest first. */
  get deliveries(): readonly CallbackDelivery[] {
    return this.log
  }

  find(id: string): CallbackDelivery | undefined {
    return this.byId.get(id)
  }

  /** The deliveries of one payment, oldest first. */
  of(exchangeNumber: string): readonly CallbackDelivery[] {
    return this.byPayment.get(exchangeNumber) ?? []
  }

  /**
   * Posts the signed result fields of a payment to its callback_url, as the faults say; undefined when the
   * payment has no callback_url. A redelivery is one plain delivery: faults shape only the service's own sends.
   */
  send(record: PaymentRecord, fields: Record<string, FieldInput>, reason: DeliveryReason): CallbackDelivery | undefined {
    if (record.callbackUrl === null) return undefined
    const delivery = this.create(record, fields, reason)
    const faults = reason === 'result' ? this.faults : NO_FAULTS
    if (reason === 'result' && this.lost.sent(this.faults, record, fields)) {
      delivery.state = 'lost'
      return delivery
    }
    if (reason === 'result' && record.model === 'B2B1') {
      const held = this.held.get(record.exchangeNumber)
      if (held !== undefined) {
        this.held.delete(record.exchangeNumber)
        this.followers.set(delivery.id, held)
      } else if (faults.outOfOrder && fields.fpx_debit_auth_code === '99') {
        this.held.set(record.exchangeNumber, delivery)
        return delivery
      }
    }
    this.schedule(delivery, faults.delayMs)
    for (let copy = 0; copy < faults.duplicate; copy++) this.schedule(this.create(record, fields, 'duplicate'), faults.delayMs)
    return delivery
  }

  /** Whether the faults lose the payment's results, redirect included (lose_results). */
  loses(record: PaymentRecord): boolean {
    return this.lost.loses(this.faults, record)
  }

  private create(record: PaymentRecord, fields: Record<string, FieldInput>, reason: DeliveryReason): CallbackDelivery {
    const delivery: CallbackDelivery = {
      id: `dlv_${this.nextId++}`,
      exchangeNumber: record.exchangeNumber,
      url: record.callbackUrl ?? '',
      transport: this.transport,
      warnings: [],
      fields,
      reason,
      createdAt: new Date().toISOString(),
      state: 'held',
      nextAttemptAt: null,
      attempts: [],
    }
    this.log.push(delivery)
    this.byId.set(delivery.id, delivery)
    const ofPayment = this.byPayment.get(delivery.exchangeNumber)
    if (ofPayment === undefined) this.byPayment.set(delivery.exchangeNumber, [delivery])
    else ofPayment.push(delivery)
    return delivery
  }

  private schedule(delivery: CallbackDelivery, delayMs: number): void {
    delivery.state = 'scheduled'
    delivery.nextAttemptAt = new Date(Date.now() + delayMs).toISOString()
    // Even with no delay a timer, so the HTTP answer that caused the delivery goes out first.
    const timer = setTimeout(() => {
      this.timers.delete(timer)
      const attempt = this.attempt(delivery).finally(() => this.inFlight.delete(attempt))
      this.inFlight.add(attempt)
    }, delayMs)
    // stop() clears the timers; unref only spares a forgotten stop() from holding the process open.
    timer.unref()
    this.timers.add(timer)
  }

  private async attempt(delivery: CallbackDelivery): Promise<void> {
    delivery.state = 'sending'
    delivery.nextAttemptAt = null
    const startedAt = new Date().toISOString()
    const started = performance.now()
    let status: number | null = null
    let error: string | null = null
    let answer: string | null = null
    let location: string | null = null
    const encoded = encodeForm(delivery.fields)
    try {
      const response = await fetch(callbackRequestUrl(delivery.url, delivery.transport, encoded), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': 'fpx-collect-emulator' },
        body: delivery.transport === 'query' ? '' : encoded,
        // Never followed: the service would not re-post the fields elsewhere; whether a 3xx acknowledges is below.
        redirect: 'manual',
        signal: AbortSignal.any([this.controller.signal, AbortSignal.timeout(this.timeoutMs)]),
      })
      status = response.status
      answer = (await response.text()).slice(0, ANSWER_EXCERPT)
      location = response.headers.get('location')
    } catch (failure) {
      error = reasonOf(failure)
    }
    // Reset or stop cancelled it while the request was out: the log it belonged to is gone.
    if (delivery.state !== 'sending') return
    const number = delivery.attempts.length + 1
    const redirectTo = status !== null && status >= 300 && status < 400 ? redirectTarget(location, delivery.url) : null
    delivery.attempts.push({ number, startedAt, durationMs: Math.round(performance.now() - started), status, error, answer, redirectTo })
    if (status !== null && status >= 200 && status < 300) this.settle(delivery, 'delivered')
    else if (status !== null && redirectTo !== null && this.redirectCountsAsDelivered) {
      this.warn(delivery, redirectWarning(status, redirectTo))
      this.settle(delivery, 'delivered')
    } else if (number >= this.attempts) this.settle(delivery, 'failed')
    else this.schedule(delivery, retryDelayMs(number, this.initialDelayMs, this.maxDelayMs))
  }

  private warn(delivery: CallbackDelivery, message: string): void {
    delivery.warnings.push(message)
    this.warnings?.add('delivery', `callback ${delivery.id}`, delivery.exchangeNumber, [message])
  }

  private settle(delivery: CallbackDelivery, state: 'delivered' | 'failed'): void {
    delivery.state = state
    const follower = this.followers.get(delivery.id)
    if (follower === undefined) return
    this.followers.delete(delivery.id)
    this.schedule(follower, 0)
  }

  /** Cancels every pending retry and request; the log is kept unless `forget`. */
  private cancelAll(forget: boolean): void {
    for (const timer of this.timers) clearTimeout(timer)
    this.timers.clear()
    for (const delivery of this.log)
      if (delivery.state === 'held' || delivery.state === 'scheduled' || delivery.state === 'sending') {
        delivery.state = 'cancelled'
        delivery.nextAttemptAt = null
      }
    this.controller.abort()
    this.controller = new AbortController()
    this.held.clear()
    this.followers.clear()
    if (forget) {
      this.lost.clear()
      this.log = []
      this.byId.clear()
      this.byPayment.clear()
      this.faults = NO_FAULTS
      this.nextId = 1
    }
  }

  reset(): void {
    this.cancelAll(true)
  }

  /** Cancels all work and waits for requests in flight to wind down, so nothing keeps the process alive. */
  async stop(): Promise<void> {
    this.cancelAll(false)
    await Promise.allSettled([...this.inFlight])
  }
}

/** The control API's view of a delivery. */
export function deliveryJson(delivery: CallbackDelivery): Record<string, unknown> {
  return {
    id: delivery.id,
    exchange_number: delivery.exchangeNumber,
    callback_url: delivery.url,
    transport: delivery.transport,
    reason: delivery.reason,
    state: delivery.state,
    fpx_debit_auth_code: delivery.fields.fpx_debit_auth_code ?? null,
    created_at: delivery.createdAt,
    next_attempt_at: delivery.nextAttemptAt,
    attempts: delivery.attempts.map((attempt) => ({
      number: attempt.number,
      started_at: attempt.startedAt,
      duration_ms: attempt.durationMs,
      status: attempt.status,
      error: attempt.error,
      answer: attempt.answer,
      redirect_to: attempt.redirectTo,
    })),
    warnings: delivery.warnings,
    fields: delivery.fields,
  }
}

export interface Completion {
  readonly record: PaymentRecord
  readonly fields: Record<string, FieldInput>
  readonly callback: CallbackDelivery | undefined
}

/** The bank's answer is known: record it, then send the callback (spec, Events). The redirect is the page's job. */
export function completePayment(
  state: EmulatorState,
  deliverer: CallbackDeliverer,
  exchangeNumber: string,
  outcome: CompletionOutcome,
  bankCode?: string,
): Completion {
  const record = state.complete(exchangeNumber, outcome, bankCode)
  const fields = state.resultFields(record)
  return { record, fields, callback: deliverer.send(record, fields, 'result') }
}
