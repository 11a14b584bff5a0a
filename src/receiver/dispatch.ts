/*
 * A verified result's way from its claim to its answer, in named steps: read the payment book (a book elsewhere,
 * before the claim), claim the payment (waiting out a concurrent delivery of it), check it (the book, the status
 * API), run the handlers, record them done. Each step answers at once when it can (the memory store, handlers that
 * return nothing), and the next runs straight on: an ordinary delivery then makes no promise from claim to answer,
 * and one appears only where a step has to wait. Every nested async function cost a delivery a promise and a trip
 * through the microtask queue (bench:receiver).
 */
import { randomUUID } from 'node:crypto'
import { dropped, type Logger } from '../core/logger.js'
import { type PaymentState, STATE_RANK } from '../core/payment.js'
import type { MatchedCredential } from '../core/result/credentials.js'
import { ReceiverError } from '../core/result/errors.js'
import type { ShapeCache } from '../core/result/shape.js'
import type { VerifiedPayment } from '../core/result/verify.js'
import { type LocalClaims, localClaims } from '../contract/local-claims.js'
import type { ReceiverStore } from '../contract/store.js'
import { type BookKeeper, disagreement, mismatchError } from './book-check.js'
import { Claimer } from './claiming.js'
import { type ConfirmingClient, confirmThroughApi } from './confirmation.js'
import type { PaymentEvent, PaymentEventName, PaymentHandler, ReceiverResponse, ResultSource } from './events.js'
import { handlerFailures } from './failures.js'
import type { Hooks } from './hooks.js'
import { Lease, type Step, unavailable } from './lease.js'
import { acknowledged, HandlerEvent, refused } from './responses.js'
import { unhandled } from './unhandled.js'

export type { Step } from './lease.js'

/**
 * Runs the handlers from the `from`th on: undefined when each returned nothing (most do: no tick spent), else a
 * promise of the rest. A handler's throw, or its rejection, is the caller's to handle.
 */
function runHandlers<TTransaction>(handling: readonly PaymentHandler<TTransaction>[], event: PaymentEvent<TTransaction>, from: number): Promise<void> | undefined {
  for (let i = from; i < handling.length; i++) {
    const result = (handling[i] as PaymentHandler<TTransaction>)(event)
    if (result !== undefined) return Promise.resolve(result).then(() => runHandlers(handling, event, i + 1))
  }
  return undefined
}

const HANDLED: Record<PaymentEventName, string> = {
  'payment.pending': 'handled payment.pending',
  'payment.succeeded': 'handled payment.succeeded',
  'payment.failed': 'handled payment.failed',
}

const EVENT_NAMES: Record<PaymentState, PaymentEventName> = {
  pending: 'payment.pending',
  succeeded: 'payment.succeeded',
  failed: 'payment.failed',
}

export interface DispatchParts<TTransaction> {
  readonly store: ReceiverStore<TTransaction>
  readonly logger: Logger
  readonly leaseMs: number
  readonly busyWaitMs: number
  readonly hooks: Hooks<PaymentEvent<TTransaction>>
  readonly handlers: Readonly<Record<PaymentEventName, PaymentHandler<TTransaction>[]>>
  readonly keeper: BookKeeper | undefined
  /** The API client of a credential set, when results are confirmed through the status API. */
  readonly confirmer: ((credential: MatchedCredential | undefined) => ConfirmingClient) | undefined
  readonly trustedShapes: ShapeCache
}

export class Dispatcher<TTransaction> {
  private readonly claimer: Claimer<TTransaction>
  // Lease owners need only be unique: one random id per receiver and a counter cost less than a UUID each.
  private readonly ownerPrefix = `${randomUUID()}:`
  private deliveries = 0

  constructor(private readonly parts: DispatchParts<TTransaction>) {
    this.claimer = new Claimer(parts.store, parts.logger, parts.leaseMs, parts.busyWaitMs)
  }

  /**
   * Claims the payment, checks it, runs its handlers and records them done; says what to answer. `what` names the
   * input for the catch-all, which turns an unexpected error into an answer; without it (the inbox, which records
   * the error itself) the error is thrown. `confirmed`: the result came from the API, which is not asked again.
   */
  dispatch(verified: VerifiedPayment, kind: ResultSource, what?: string, confirmed = kind === 'reconcile'): Step<ReceiverResponse> {
    let answer: Step<ReceiverResponse>
    try {
      answer = this.readBookAndClaim(new Lease(verified, kind, this.ownerPrefix + String(++this.deliveries), this.parts.leaseMs), what, confirmed)
    } catch (error) {
      return this.unexpected(error, kind, what)
    }
    return answer instanceof Promise ? answer.catch((error: unknown) => this.unexpected(error, kind, what)) : answer
  }

  private unexpected(error: unknown, kind: ResultSource, what: string | undefined): ReceiverResponse {
    if (what === undefined) throw error
    this.parts.logger.error({ err: error, delivery: kind }, `unexpected error while handling ${what}`)
    return refused(new ReceiverError('internal_error', `unexpected error while handling ${what}`), 'failed')
  }

  /**
   * A book elsewhere (Redis, PostgreSQL) is read, and done with, before the claim (book-check.ts); one in this
   * process is read after it, so that duplicates never touch it.
   */
  private readBookAndClaim(lease: Lease<TTransaction>, what: string | undefined, confirmed: boolean): Step<ReceiverResponse> {
    const { keeper } = this.parts
    if (keeper === undefined || keeper.inProcess) return this.claimThenCheck(lease, what, confirmed)
    return keeper.find(lease.verified).then(
      (booked) => {
        lease.booked = booked
        return this.claimThenCheck(lease, what, confirmed)
      },
      (error: unknown) => this.bookUnavailable(error, lease),
    )
  }

  private bookUnavailable(error: unknown, lease: Lease<TTransaction>): ReceiverResponse {
    this.parts.logger.error({ ...lease.log, err: error }, 'the store failed to read its payment book')
    return unavailable(lease.verified, '5')
  }

  private claimThenCheck(lease: Lease<TTransaction>, what: string | undefined, confirmed: boolean): Step<ReceiverResponse> {
    // Read here, inside the catch-all: the merchant's store's getters may throw.
    const inProcess = localClaims(this.parts.store)
    const claimed = this.claimer.claim(lease, inProcess)
    // No closure for a claim answered at once (nearly all): the check runs straight on.
    if (claimed instanceof Promise) return claimed.then((answer) => (answer !== undefined ? answer : this.check(lease, inProcess, what, confirmed)))
    return claimed !== undefined ? claimed : this.check(lease, inProcess, what, confirmed)
  }

  /** The claim is held: the book (in this process), then the status API when confirming, then the handlers. */
  private check(lease: Lease<TTransaction>, inProcess: LocalClaims | undefined, what: string | undefined, confirmed: boolean): Step<ReceiverResponse> {
    const { keeper, confirmer } = this.parts
    if (keeper?.inProcess === true) {
      try {
        lease.booked = keeper.findNow(lease.verified)
      } catch (error) {
        return this.released(lease, this.bookUnavailable(error, lease))
      }
    }
    if (confirmer === undefined || confirmed) return this.checkBook(lease, lease.verified, inProcess)
    return this.confirm(lease, confirmer, inProcess, what)
  }

  /**
   * Asks the status API for the claimed state (receiver/confirmation.ts). The handlers then get the API's record;
   * a later state the API already shows is handled instead; one it does not show yet is answered 503.
   */
  private async confirm(
    lease: Lease<TTransaction>,
    confirmer: (credential: MatchedCredential | undefined) => ConfirmingClient,
    inProcess: LocalClaims | undefined,
    what: string | undefined,
  ): Promise<ReceiverResponse> {
    const { verified, state } = lease
    const { logger, trustedShapes, leaseMs } = this.parts
    const known = await confirmThroughApi(confirmer, verified, trustedShapes, Math.floor(leaseMs / 2))
    if (!(known instanceof ReceiverError) && known.state === state) return this.checkBook(lease, known, inProcess)
    await this.releaseQuietly(lease)
    if (!(known instanceof ReceiverError) && STATE_RANK[known.state] > STATE_RANK[state]) {
      logger.info({ ...lease.log, currentState: known.state }, 'the status API already shows a later state; handling that instead')
      return this.dispatch(known, lease.kind, what, true)
    }
    const error = known instanceof ReceiverError ? known : new ReceiverError('confirmation_pending', 'the status API does not show this state yet; retry later')
    logger[error.code === 'confirmation_pending' ? 'warn' : 'error']({ ...lease.log, code: error.code }, `did not handle the result: ${error.message}`)
    const response = refused(error, error.status >= 500 ? 'failed' : 'rejected', verified)
    if (error.status === 503) response.headers['retry-after'] = '30'
    return response
  }

  /** Checked against what the merchant asked for: the API's record when confirmed, else the result itself. */
  private checkBook(lease: Lease<TTransaction>, handled: VerifiedPayment, inProcess: LocalClaims | undefined): Step<ReceiverResponse> {
    const problem = lease.booked === undefined ? undefined : disagreement(lease.booked, handled)
    if (problem === undefined) return this.run(lease, handled, inProcess)
    this.parts.logger.warn({ ...lease.log, code: 'result_mismatch' }, `did not handle the result: ${problem}`)
    return this.released(lease, refused(mismatchError(problem), 'rejected', lease.verified))
  }

  /** Runs the handlers of the claimed state, then records them done. */
  private run(lease: Lease<TTransaction>, handled: VerifiedPayment, inProcess: LocalClaims | undefined): Step<ReceiverResponse> {
    const { hooks, handlers, store, logger } = this.parts
    const name = EVENT_NAMES[lease.state]
    const handling = hooks.handlersFor(handlers[name], name, lease)
    if (handling.length === 0) return unhandled(store, lease, name, lease.verified, logger, lease.log)
    // A store in this process says itself when a busy payment is settled; others need this process's word.
    if (inProcess === undefined) this.claimer.running(lease)
    const event: PaymentEvent<TTransaction> = new HandlerEvent(handled, name, lease.previousState, lease.kind, lease.transaction, lease.booked)
    let answer: Step<ReceiverResponse>
    let running: Promise<void> | undefined
    try {
      running = runHandlers(handling, event, 0)
    } catch (error) {
      return this.finish(lease, this.handlerFailed(error, event, lease))
    }
    try {
      answer =
        running === undefined
          ? this.complete(lease, inProcess)
          : running.then(
              () => this.complete(lease, inProcess),
              (error: unknown) => this.handlerFailed(error, event, lease),
            )
    } catch (error) {
      // Past the handlers: the catch-all's (dispatch), after this process's waiters are told.
      this.claimer.done(lease)
      throw error
    }
    return this.finish(lease, answer)
  }

  /** Tells this process's waiters (if any) that the handlers are done, once `answer` is. */
  private finish<T extends Step<ReceiverResponse> | undefined>(lease: Lease<TTransaction>, answer: T): T {
    if (lease.running === undefined) return answer
    if (answer instanceof Promise) return answer.finally(() => this.claimer.done(lease)) as T
    this.claimer.done(lease)
    return answer
  }

  /** Records the state as handled, then settles the payment book. */
  private complete(lease: Lease<TTransaction>, inProcess: LocalClaims | undefined): Step<ReceiverResponse> {
    let completed: Step<boolean>
    try {
      completed = inProcess !== undefined ? inProcess.complete(lease) : this.parts.store.complete(lease)
    } catch (error) {
      return this.completeFailed(error, lease)
    }
    if (completed instanceof Promise)
      return completed.then(
        (done) => this.completed(done, lease),
        (error: unknown) => this.completeFailed(error, lease),
      )
    return this.completed(completed, lease)
  }

  private completeFailed(error: unknown, lease: Lease<TTransaction>): ReceiverResponse {
    this.parts.logger.error({ ...lease.log, err: error }, 'handlers ran but the store failed to record it; a redelivery will run them again')
    return unavailable(lease.verified)
  }

  private completed(done: boolean, lease: Lease<TTransaction>): Step<ReceiverResponse> {
    const { logger, keeper, leaseMs } = this.parts
    if (!done) {
      logger.error(lease.log, `handlers ran longer than leaseMs (${leaseMs} ms) and another delivery took the payment over`)
      return refused(new ReceiverError('lease_lost', 'the claim expired while the handlers ran'), 'failed', lease.verified)
    }
    // Most deliveries' one log line: its details are not made when the level is dropped (no logger given).
    if (!dropped(logger.info)) logger.info(lease.log, HANDLED[EVENT_NAMES[lease.state]])
    const settling = lease.booked === undefined ? undefined : keeper?.settle(lease.booked, lease.state, lease.exchangeNumber)
    const answer = acknowledged('processed', lease.verified)
    return settling === undefined ? answer : settling.then(() => answer)
  }

  /** A handler threw: the claim is released so that a redelivery runs the handlers again. */
  private handlerFailed(error: unknown, event: PaymentEvent<TTransaction>, lease: Lease<TTransaction>): Promise<ReceiverResponse> {
    const name = event.name
    this.parts.logger.error({ ...lease.log, err: error }, `a ${name} handler threw; the payment will be handled again on redelivery`)
    this.parts.hooks.handlerFailed(error, event)
    const message = `a ${name} handler failed; the claim was released so the next delivery runs it again`
    const response = refused(new ReceiverError('handler_failed', message), 'failed', lease.verified)
    handlerFailures.set(response, error)
    return this.released(lease, response)
  }

  /** Gives the claim back, then answers `response`. */
  private async released(lease: Lease<TTransaction>, response: ReceiverResponse): Promise<ReceiverResponse> {
    await this.releaseQuietly(lease)
    return response
  }

  private async releaseQuietly(lease: Lease<TTransaction>): Promise<void> {
    try {
      await this.parts.store.release(lease)
    } catch (error) {
      this.parts.logger.error({ ...lease.log, err: error }, 'the store failed to release the claim; it frees itself when the lease expires')
    }
  }
}
