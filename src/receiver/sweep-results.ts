/*
 * What the API shows of one open payment, from a lookup (every attempt at the order) or from the transactions
 * list (its successes): handed to the receiver through the same classification and deduplication as a delivery
 * (handleTrusted), then noted in the book (the lookup, its backoff, or the abandon) and on the timeline.
 */
import type { Logger } from '../core/logger.js'
import { apiRecordText, classify, hasBankAnswer, type PaymentState, STATE_RANK } from '../core/payment.js'
import { localTime } from '../core/time.js'
import { backoffDelay } from '../inbox/backoff.js'
import type { BookedPayment, PaymentRef } from '../contract/payment-book.js'
import type { TimelineEntry } from '../contract/timeline.js'
import type { LookupOutcome } from './book-metrics.js'
import { described } from './confirm.js'
import type { ReceiverResponse } from './events.js'
import type { Counts, LookupClient, SweepBook, SweepSettings } from './sweep-options.js'

export interface ResultsParts {
  readonly book: SweepBook
  readonly client: (uid: string) => LookupClient
  readonly handOver: (fields: Record<string, string>, uid: string) => Promise<ReceiverResponse>
  readonly record: (entries: readonly TimelineEntry[]) => void
  readonly counted: (outcome: LookupOutcome) => void
  readonly logger: Logger
  readonly settings: SweepSettings
}

type ApiRecord = Readonly<Record<string, unknown>>

const isFinal = (state: PaymentState | null | undefined) => state === 'succeeded' || state === 'failed'

/** The state a record with a bank answer shows. */
const stateOf = (record: ApiRecord) => classify(String(record.payment_status), typeof record.fpx_debit_auth_code === 'string' ? record.fpx_debit_auth_code : undefined)

const keyOf = (payment: PaymentRef) => `${payment.uid}\0${payment.orderNumber}`

/** What handing a payment's records over came to. */
interface HandedOver {
  /** The highest state the receiver handled (now or before), or null. */
  readonly handled: PaymentState | null
  /** The highest state the records showed as the receiver read them, or null. */
  readonly shown: PaymentState | null
  readonly exchangeNumber: string | null
}

export class SweepResults {
  private entries = 0
  /**
   * Payments whose final result the sweeper handed over, until their next lookup's time: the listing shows a paid
   * payment at every pass, and one whose handlers keep failing must wait out its backoff like a lookup's.
   */
  private readonly handedOver = new Map<string, number>()

  constructor(
    private readonly parts: ResultsParts,
    private readonly owner: () => string,
  ) {}

  /** Whether the payment's final result was handed over and its next lookup is not due yet. */
  waiting(payment: PaymentRef, now: number): boolean {
    return (this.handedOver.get(keyOf(payment)) ?? 0) > now
  }

  /** Forgets the waits that are over. */
  prune(now: number): void {
    for (const [key, until] of this.handedOver) if (until <= now) this.handedOver.delete(key)
  }

  /** Counts a failure and names its order (null: the transactions list) in the pass's report. */
  failed(report: Counts, orderNumber: string | null, message: string): void {
    report.failures++
    report.failing.push({ orderNumber, message })
  }

  /** One lookup: every attempt at the order the status API shows, handed over; then the book and the timeline. */
  async lookUp(payment: BookedPayment, token: number, report: Counts): Promise<void> {
    const { book, settings, logger, counted } = this.parts
    const at = new Date()
    const log = { orderNumber: payment.orderNumber, lookups: payment.lookups + 1 }
    report.lookups++
    let records: readonly ApiRecord[]
    try {
      records = (await this.parts.client(payment.uid).searchTransactions('order_number', payment.orderNumber)) as readonly ApiRecord[]
    } catch (error) {
      const why = `the status API could not be asked (${described(error)})`
      this.failed(report, payment.orderNumber, why)
      counted('failed')
      logger.warn({ ...log, err: described(error) }, `${why} about an open payment; it is looked up again later`)
      await this.noteOpen(payment, at, token, 'lookup_failed', why)
      return
    }
    // Every attempt at the order, oldest first: a failed attempt before the retry that succeeded.
    const attempts = records.filter((record) => record.order_number === payment.orderNumber && hasBankAnswer(record)).reverse()
    if (attempts.some((record) => isFinal(stateOf(record)))) {
      // A paid order stays paid: its earlier failed attempts are not handed over beside the success. Handled first,
      // a failure would run its handler and close the order as failed, and a success whose handler then failed
      // would never be looked up again.
      const paid = attempts.filter((record) => stateOf(record) === 'succeeded')
      await this.final(payment, paid.length > 0 ? paid : attempts, at, token, report, 'the status API shows a final result')
      return
    }
    const handed = await this.handOver(payment, attempts, report)
    const pending = handed.shown === 'pending' || payment.state === 'pending'
    const horizon = pending ? settings.pendingAbandonAfterMs : settings.abandonAfterMs
    if (at.getTime() - payment.createdAt.getTime() >= horizon) {
      if (await book.noteLookup(payment, { at, nextLookupAt: null, abandoned: true }, token)) {
        report.abandoned++
        counted('abandoned')
        this.note(payment, at, 'abandoned', handed.shown, handed.exchangeNumber, null, `no final result ${pending ? 'while pending approval ' : ''}within the horizon after creation: closed as abandoned`)
        logger.warn(log, 'closed an open payment as abandoned: no final result within its horizon')
      }
      return
    }
    const what = pending ? 'the payment pending approval (99)' : records.length > 0 ? 'no bank answer yet' : 'no payment with this order_number yet'
    await this.noteOpen(payment, at, token, records.length > 0 ? null : 'not_found', `the status API shows ${what}`, handed.shown, handed.exchangeNumber)
    report.open++
    counted('open')
  }

  /** An open payment the transactions list shows paid: its successes handed over, counted as its lookup. */
  async foundInList(payment: BookedPayment, successes: readonly ApiRecord[], token: number, report: Counts): Promise<void> {
    if (await this.final(payment, successes, new Date(), token, report, 'the transactions list shows it paid')) report.found++
  }

  /**
   * A final result the API shows, handed over: closed when the receiver takes it, else looked up again after a
   * backoff. Noted in the book and on the timeline first: the book counts a lookup only while the payment is open,
   * and the receiver's own entries for the result follow the lookup's. False when the book refused the note.
   */
  private async final(payment: BookedPayment, records: readonly ApiRecord[], at: Date, token: number, report: Counts, what: string): Promise<boolean> {
    const next = this.nextLookup(payment, at)
    // Refused: closed meanwhile (a delivery came), or a newer sweeper holds the lock.
    if (!(await this.parts.book.noteLookup(payment, { at, nextLookupAt: next }, token))) return false
    const state = records.map(stateOf).reduce((high, one) => (STATE_RANK[one] > STATE_RANK[high] ? one : high))
    const exchangeNumber = String(records.at(-1)?.exchange_number)
    this.note(payment, at, 'lookup', state, exchangeNumber, null, `${what}; handed to the receiver (looked up again at ${localTime(next)} unless it takes it)`)
    this.handedOver.set(keyOf(payment), next.getTime())
    const handed = await this.handOver(payment, records, report)
    report[isFinal(handed.handled) ? 'closed' : 'open']++
    this.parts.counted(isFinal(handed.handled) ? 'closed' : 'open')
    return true
  }

  /** Each record to the receiver as a trusted API record of the payment's credential set. */
  private async handOver(payment: BookedPayment, records: readonly ApiRecord[], report: Counts): Promise<HandedOver> {
    const { book, logger } = this.parts
    const log = { orderNumber: payment.orderNumber }
    let handled: PaymentState | null = null
    let shown: PaymentState | null = null
    for (const record of records) {
      const response = await this.parts.handOver(apiRecordText(record), payment.uid)
      const state = response.payment?.state ?? null
      if (state !== null && (shown === null || STATE_RANK[state] > STATE_RANK[shown])) shown = state
      if (response.outcome === 'processed') report.processed++
      if (state !== null && (response.outcome === 'processed' || response.outcome === 'duplicate' || response.outcome === 'stale')) {
        if (handled === null || STATE_RANK[state] > STATE_RANK[handled]) handled = state
        // Handled before, but the book missed it (a crash between completion and settling): settle it now. Not a
        // stale one: it was not recorded (an order paid whose success is still to be handled must stay open).
        if (response.outcome === 'duplicate') await book.settle(payment, state, String(record.exchange_number))
      } else if (response.outcome === 'busy') {
        // A delivery of the same payment is being handled right now: it settles the payment, or the next lookup does.
        logger.info({ ...log, outcome: response.outcome }, 'a delivery of this payment was being handled while the sweeper handed it over; left to it')
      } else if (response.outcome !== 'queued') {
        const message = response.error?.message ?? `the receiver answered ${response.outcome}`
        this.failed(report, payment.orderNumber, message)
        logger.error({ ...log, outcome: response.outcome, code: response.error?.code }, `the receiver did not take a result the API shows: ${message}`)
      }
    }
    const exchangeNumber = records.length > 0 ? String(records.at(-1)?.exchange_number) : payment.exchangeNumber
    return { handled, shown, exchangeNumber }
  }

  private nextLookup(payment: BookedPayment, at: Date): Date {
    return new Date(at.getTime() + backoffDelay(payment.lookups + 1, this.parts.settings.backoff))
  }

  /** Still open: the next lookup after a backoff, fenced by the lock's token; its timeline entry once the book took it. */
  private async noteOpen(
    payment: BookedPayment,
    at: Date,
    token: number,
    code: string | null,
    message: string,
    state: PaymentState | null = null,
    exchangeNumber: string | null = payment.exchangeNumber,
  ): Promise<void> {
    const next = this.nextLookup(payment, at)
    // Refused (a newer sweeper holds the lock, or the payment closed meanwhile): no next lookup was set, so the
    // timeline must not say one was.
    if (await this.parts.book.noteLookup(payment, { at, nextLookupAt: next }, token))
      this.note(payment, at, 'lookup', state, exchangeNumber, code, `${message}; next lookup at ${localTime(next)}`)
  }

  private note(payment: BookedPayment, at: Date, event: 'lookup' | 'abandoned', state: PaymentState | null, exchangeNumber: string | null, code: string | null, message: string): void {
    this.parts.record([
      { at, event, exchangeNumber, orderNumber: payment.orderNumber, state, source: 'sweep', attempt: `${this.owner()}:${++this.entries}`, verified: true, code, status: null, message },
    ])
  }
}
