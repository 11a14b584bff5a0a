/*
 * The sweeper: payments the book holds open (no result yet, or a B2B1 99) are looked up through the status API
 * once they are old enough, and what the API shows is handed to the receiver through the same classification and
 * deduplication as a delivery (handleTrusted). Lookups of one payment back off; all lookups share one rate bound;
 * a payment is closed `abandoned` after its horizon. One sweeper at a time across the processes sharing a store:
 * the store's SweepLock, held while sweeping and renewed, its fencing token on every write of bookkeeping.
 */
import { randomUUID } from 'node:crypto'
import { apiRecordText, hasBankAnswer } from '../core/api-record.js'
import type { Logger } from '../core/logger.js'
import { type PaymentState, STATE_RANK } from '../core/payment.js'
import { backoffDelay } from '../inbox/backoff.js'
import type { BookedPayment, PaymentBook, PaymentRef, SweepLock } from '../contract/payment-book.js'
import type { TimelineEntry } from '../contract/timeline.js'
import type { LookupOutcome } from './book-metrics.js'
import { described } from './confirmation.js'
import type { ReceiverResponse } from './events.js'
import { SweepLease } from './sweep-lease.js'
import { type Counts, type LookupClient, nothing, type SweepReport, type SweepSettings } from './sweep-options.js'

export type { LookupClient, SweepReport } from './sweep-options.js'

export interface SweeperParts {
  readonly book: PaymentBook
  readonly lock: SweepLock
  /** The API client for a credential set (by its API UID). */
  readonly client: (uid: string) => LookupClient
  /** receiver.handleTrusted, the record taken as the given uid's (the API client asked was that credential set's). */
  readonly handOver: (fields: Record<string, string>, uid: string) => Promise<ReceiverResponse>
  readonly record: (entries: readonly TimelineEntry[]) => void
  readonly counted: (outcome: LookupOutcome) => void
  readonly logger: Logger
  readonly settings: SweepSettings
}

const isFinal = (state: PaymentState | null | undefined) => state === 'succeeded' || state === 'failed'

export class Sweeper {
  readonly owner = `sweeper:${randomUUID()}`
  private readonly lease: SweepLease
  private running: Promise<SweepReport> | undefined
  private timer: NodeJS.Timeout | undefined
  private stopped = false
  private lastLookupAt = Number.NEGATIVE_INFINITY
  private gate: Promise<void> = Promise.resolve()
  /** Ends the waits for a turn at once when stop() comes. */
  private readonly wakers = new Set<() => void>()
  private entries = 0

  constructor(private readonly parts: SweeperParts) {
    this.lease = new SweepLease(this.owner, parts.lock, parts.settings.lockMs, parts.logger)
  }

  /** Sweeps every `everyMs` in this process, on an unref'd timer, until stop(). */
  start(): void {
    if (this.stopped || this.timer !== undefined) return
    const tick = () => {
      // A pass running when stop() came ends here: re-arming would take the lock again after close(), for good.
      if (this.stopped) return
      this.timer = setTimeout(() => {
        void this.sweep(false).then(tick, tick)
      }, this.parts.settings.everyMs)
      this.timer.unref()
    }
    tick()
  }

  /**
   * One pass now (or the one running): takes or renews the lock, looks up what is due, and keeps the lock when
   * sweeping in-process (so the rate bound holds in one place), else gives it back. Never rejects.
   */
  sweep(keepAlive = true): Promise<SweepReport> {
    this.running ??= this.pass(keepAlive)
      .catch((error: unknown) => {
        this.parts.logger.error({ err: error }, 'the sweep failed; it runs again on the next pass')
        return { ...nothing(true), failures: 1 }
      })
      .finally(() => {
        this.running = undefined
      })
    return this.running
  }

  /** Stops the timer, waits for a pass in progress and gives the lock back. */
  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    for (const wake of this.wakers) wake()
    await this.running
    await this.lease.release(false)
  }

  private async pass(keepAlive: boolean): Promise<SweepReport> {
    const { book, settings } = this.parts
    if (!(await this.lease.hold())) return nothing(false)
    const report: Counts = { ...nothing(true) }
    // Lookups in flight: each waits its turn to start (the rate bound), then hands over and notes in parallel.
    const running = new Set<Promise<void>>()
    const heartbeat = this.lease.heartbeat()
    try {
      const now = Date.now()
      const due = await book.listOpen({ dueBy: new Date(now), limit: settings.batch })
      for (const payment of due) {
        // Oldest first: once one is too young for its first lookup, so is every one after it.
        if (payment.lookups === 0 && payment.createdAt.getTime() > now - settings.firstLookupAfterMs) break
        if (this.stopped) break
        while (running.size >= settings.concurrency) await Promise.race(running)
        // The lock was lost in an earlier turn: stop here.
        if (this.lease.token === undefined) break
        report.due++
        const task = this.turn(payment, keepAlive)
          .then((turn) => {
            if (turn === 'lost') return
            if (turn === undefined) report.skipped++
            else return this.lookUp(turn.payment, turn.token, report)
          })
          .catch((error: unknown) => {
            report.failures++
            this.parts.logger.error({ orderNumber: payment.orderNumber, err: error }, 'the sweeper failed to look up an open payment; it is tried again on a later pass')
          })
          .finally(() => running.delete(task))
        running.add(task)
      }
      await Promise.all(running)
    } finally {
      await Promise.all(running)
      clearInterval(heartbeat)
      await this.releaseUnlessInProcess()
    }
    return report
  }

  /** An in-process sweeper keeps the lock between passes; a pass run on the operator's schedule gives it back. */
  private async releaseUnlessInProcess(): Promise<void> {
    if (!this.stopped && this.timer !== undefined) return
    await this.lease.release(true)
  }

  /**
   * A lookup's turn to start: at least 60 s / maxLookupsPerMinute after the previous one started, so any minute
   * holds at most that many, with the payment read again just before (a result may have come in since the list
   * was read), and the lock checked. Turns are taken one at a time, so the re-read and the start stay together.
   * Resolves to the payment and the lock's token when it is still open, undefined when it is final now, 'lost' when
   * the lock is.
   */
  private turn(payment: PaymentRef, keepAlive: boolean): Promise<{ payment: BookedPayment; token: number } | undefined | 'lost'> {
    const mine = this.gate.then(async () => {
      const wait = this.lastLookupAt + 60_000 / this.parts.settings.maxLookupsPerMinute - Date.now()
      if (wait > 0 && !this.stopped) await this.pause(Math.ceil(wait), keepAlive)
      // Still the one sweeper (renewing the lease when a third of it has passed), or no more lookups. Stopped: the
      // turns queued behind the rate bound are not taken, or close() would wait for each (minutes at a low rate).
      if (this.stopped || this.lease.token === undefined || !(await this.lease.hold())) return 'lost'
      const current = await this.parts.book.find(payment.orderNumber, { uid: payment.uid })
      if (current === undefined || current.status !== 'open') return undefined
      this.lastLookupAt = Date.now()
      const token = this.lease.token
      return token === undefined ? 'lost' : { payment: current, token }
    })
    this.gate = mine.then(
      () => undefined,
      () => undefined,
    )
    return mine
  }

  private pause(ms: number, keepAlive: boolean): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer)
        this.wakers.delete(wake)
        resolve()
      }
      const timer = setTimeout(wake, ms)
      if (!keepAlive) timer.unref()
      this.wakers.add(wake)
    })
  }

  private async lookUp(payment: BookedPayment, token: number, report: Counts): Promise<void> {
    const { book, settings, logger, counted } = this.parts
    const at = new Date()
    const log = { orderNumber: payment.orderNumber, lookups: payment.lookups + 1 }
    report.lookups++
    let records: readonly Record<string, unknown>[]
    try {
      records = (await this.parts.client(payment.uid).searchTransactions('order_number', payment.orderNumber)) as readonly Record<string, unknown>[]
    } catch (error) {
      report.failures++
      counted('failed')
      const why = described(error)
      logger.warn({ ...log, err: why }, `the status API could not be asked about an open payment (${why}); it is looked up again later`)
      await this.noteOpen(payment, at, token, 'lookup_failed', `the status API could not be asked (${why})`)
      return
    }
    // Every attempt at the order, oldest first: a failed attempt before the retry that succeeded.
    const attempts = records.filter((record) => record.order_number === payment.orderNumber && hasBankAnswer(record)).reverse()
    let handled: PaymentState | null = null
    let shown: PaymentState | null = null
    for (const record of attempts) {
      const response = await this.parts.handOver(apiRecordText(record), payment.uid)
      const state = response.payment?.state ?? null
      if (state !== null && (shown === null || STATE_RANK[state] > STATE_RANK[shown])) shown = state
      if (response.outcome === 'processed') report.processed++
      if (state !== null && (response.outcome === 'processed' || response.outcome === 'duplicate' || response.outcome === 'stale')) {
        if (handled === null || STATE_RANK[state] > STATE_RANK[handled]) handled = state
        // Handled before, but the book missed it (a crash between completion and settling): settle it now.
        if (response.outcome !== 'processed') await book.settle(payment, state, String(record.exchange_number))
      } else if (response.outcome === 'busy') {
        // A delivery of the same payment is being handled right now: it settles the payment, or the next lookup does.
        logger.info({ ...log, outcome: response.outcome }, 'a delivery of this payment was being handled while the sweeper looked it up; left to it')
      } else if (response.outcome !== 'queued') {
        report.failures++
        logger.error({ ...log, outcome: response.outcome, code: response.error?.code }, `the receiver did not take a result the status API shows: ${response.error?.message ?? response.outcome}`)
      }
    }
    const exchangeNumber = attempts.length > 0 ? String(attempts[attempts.length - 1]?.exchange_number) : payment.exchangeNumber
    if (isFinal(handled)) {
      report.closed++
      counted('closed')
      this.note(payment, at, 'lookup', handled, exchangeNumber, null, 'the status API shows a final result; handed to the receiver')
      return
    }
    const pending = shown === 'pending' || payment.state === 'pending'
    const horizon = pending ? settings.pendingAbandonAfterMs : settings.abandonAfterMs
    // A final result the receiver did not take (a handler failing) is never given up on: it is tried again.
    if (!isFinal(shown) && at.getTime() - payment.createdAt.getTime() >= horizon) {
      if (await book.noteLookup(payment, { at, nextLookupAt: null, abandoned: true }, token)) {
        report.abandoned++
        counted('abandoned')
        this.note(payment, at, 'abandoned', shown, exchangeNumber, null, `no final result ${pending ? 'while pending approval ' : ''}within the horizon after creation: closed as abandoned`)
        logger.warn(log, 'closed an open payment as abandoned: no final result within its horizon')
      }
      return
    }
    const what = isFinal(shown)
      ? 'a final result the receiver did not take'
      : pending
        ? 'the payment pending approval (99)'
        : records.length > 0
          ? 'no bank answer yet'
          : 'no payment with this order_number yet'
    await this.noteOpen(payment, at, token, isFinal(shown) ? 'not_taken' : records.length > 0 ? null : 'not_found', `the status API shows ${what}`, shown, exchangeNumber)
    report.open++
    counted('open')
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
    const next = new Date(at.getTime() + backoffDelay(payment.lookups + 1, this.parts.settings.backoff))
    // Refused (a newer sweeper holds the lock, or the payment closed meanwhile): no next lookup was set, so the
    // timeline must not say one was.
    if (await this.parts.book.noteLookup(payment, { at, nextLookupAt: next }, token))
      this.note(payment, at, 'lookup', state, exchangeNumber, code, `${message}; next lookup at ${next.toISOString()}`)
  }

  private note(payment: BookedPayment, at: Date, event: 'lookup' | 'abandoned', state: PaymentState | null, exchangeNumber: string | null, code: string | null, message: string): void {
    this.parts.record([
      { at, event, exchangeNumber, orderNumber: payment.orderNumber, state, source: 'sweep', attempt: `${this.owner}:${++this.entries}`, verified: true, code, status: null, message },
    ])
  }
}
