import { randomUUID } from 'node:crypto'
import type { RawDelivery } from '../core/result/body.js'
import { ReceiverError } from '../core/result/errors.js'
import { safeLogger } from '../core/logger.js'
import { memoryStore } from '../stores/memory/store.js'
import type { PaymentState } from '../core/payment.js'
import { ShapeCache } from '../core/result/shape.js'
import { detached } from '../contract/detached.js'
import { localClaims } from '../contract/local-claims.js'
import type { ClaimRequest, LeaseRef, ReceiverStore } from '../contract/store.js'
import { trustedPayment } from '../core/result/trusted.js'
import { type AcceptingInbox, createInbox, disabledInbox, type InboxOptions, type ReceiverInbox } from '../inbox/inbox.js'
import { handlerFailures } from './failures.js'
import type { FieldInput } from '../core/values.js'
import { type VerifiedPayment, Verifier, type VerifyOptions } from '../core/result/verify.js'
import type { TimelineEntry, TimelineQuery } from '../contract/timeline.js'
import { Hooks } from './hooks.js'
import { type Accept, type AcceptWatcher, observe } from './observe.js'
import { Telemetry, type TelemetryOptions } from './telemetry.js'
import { acknowledged, busy, diagnosisDetails, HandlerEvent, refused } from './responses.js'
import { inboxAttemptEntries, TimelineRecorder } from './timeline.js'
import { checkExpected, type ExpectHook } from './expectations.js'
import { confirmingClients, confirmThroughApi, type ConfirmingClients } from './confirmation.js'
import { STATE_RANK } from '../core/payment.js'
import type { BookedPayment } from '../contract/payment-book.js'
import { BookKeeper, disagreement, mismatchError, storeBook } from './book-check.js'
import { type ReceiverPayments, receiverPayments, sweeping, withCreation } from './payments.js'
import { sweepSettings, type SweepOptions } from './sweep-options.js'
import type { SweepReport } from './sweeper.js'

export type { ConfirmingClient, ConfirmingClients } from './confirmation.js'
export type { ReceiverPayments } from './payments.js'
export type { SweepOptions } from './sweep-options.js'
export type { SweepReport } from './sweeper.js'
export type { ExpectedPayment, ExpectHook, ExpectQuery } from './expectations.js'
import { RefusalLog, type RefusalSummary } from './refusals.js'
import { unhandled } from './unhandled.js'

export type {
  Delivery,
  DeliveryKind,
  ErrorHandler,
  Outcome,
  PaymentEvent,
  PaymentEventName,
  PaymentEventOf,
  PaymentEventStates,
  PaymentHandler,
  PaymentHandlerError,
  ReceiverResponse,
  ResultSource,
} from './events.js'
import type { Delivery, ErrorHandler, PaymentEvent, PaymentEventName, PaymentHandler, ReceiverResponse, ResultSource } from './events.js'

export type ReceiverOptions<TTransaction = undefined> = VerifyOptions & {
  store?: ReceiverStore<TTransaction>
  /**
   * How long a delivery may hold an exchange_number while its handlers run, and how long a concurrent
   * duplicate in the same process waits for it. Keep handlers well under it. Default 60 s.
   */
  leaseMs?: number
  /**
   * How long a delivery keeps asking when another process holds the payment, before it answers 409. The holder
   * usually finishes within milliseconds, and a 409 sends the buyer's browser an error page. Default 2000 ms.
   */
  busyWaitMs?: number
  /**
   * Inbox mode (PostgreSQL or Redis store): a verified result is written to the store's inbox and answered 200 at
   * once; the handlers run from the inbox with retries, backoff and a dead-letter state. See ReceiverInbox.
   */
  inbox?: InboxOptions
  /**
   * Fields a verified result must carry beyond exchange_number, order_number and payment_status, or it is refused
   * (400 `invalid_fields`), e.g. `['transaction_amount']`. The service's checksum signs the values in name order,
   * not the names, so a result without an amount deserves a status check before fulfilment (README, "What a
   * result must carry"). Default none: a genuine minimal result is never refused.
   */
  requireFields?: readonly string[]
  /**
   * Keep the per-order timeline in the store (when the store has one: memory, Redis and PostgreSQL do). Written
   * in the background, after the answer. Default true.
   */
  timeline?: boolean
  /**
   * OpenTelemetry spans and metrics. By default on when `@opentelemetry/api` is installed (imported when the
   * receiver is created), off otherwise; `false` turns them off, an object passes the API or providers in.
   */
  telemetry?: boolean | TelemetryOptions
  /**
   * What you asked for, by order_number (amount, and any field you keep): a result that disagrees is refused
   * (400 `result_mismatch`) before any handler runs. Stops a genuine result replayed under another order's
   * number (docs/security.md). Return nothing for an order you do not know.
   */
  expect?: ExpectHook
  /**
   * The API client (`createClient()` from fpx-collect/client). With it, every new payment state is confirmed
   * through the authenticated API before its handlers run, and they get the API's record: a result the API does
   * not know yet is answered 503 so the service retries. On whenever `client` is given; `confirm: false` turns
   * it off. Results from `handleTrusted` (reconciliation) came from the API and are not asked about again.
   * Partners with several merchants' credential sets pass a function that returns the client of the set whose
   * Checksum Token matched (`credential.uid`); one merchant's sets all see its payments, so one client serves.
   */
  client?: ConfirmingClients
  confirm?: boolean
  /**
   * A result with neither status_url nor receipt_url naming its exchange_number, and fields sorting before or
   * between exchange_number, order_number and payment_status, cannot be told from a genuine result whose names were
   * rearranged (docs/security.md): without
   * `client` it is refused (400 `inconsistent_result`). The service's results carry status_url, so only results
   * built by hand have this shape; `'accept'` takes them as before, for tests of such shapes.
   */
  unpinnedResults?: 'refuse' | 'accept'
  /**
   * Use the store's payment book (payments the client recorded at creation, docs/payment-lifecycle.md): a new
   * state of a recorded order is checked against it (amount, credential set) before the handlers run, and the
   * book is settled after them. Default true when the store has one (memory, Redis, PostgreSQL); `false` ignores it.
   */
  book?: boolean
  /**
   * The sweeper, which looks open payments up through the status API (needs `client` and a store with a payment
   * book). In-process by default; `false`, or `{ inProcess: false }`, leaves it to `receiver.sweep()` or
   * `fpx-collect sweep` on your own schedule. See SweepOptions for the horizons, backoff and rate bound.
   */
  sweep?: SweepOptions | false
}

export interface Receiver<TTransaction = undefined> {
  /** The handler's event is narrowed by `name`: on('payment.succeeded', e => ...) has `e.state` 'succeeded'. */
  on<TName extends PaymentEventName>(name: TName, handler: PaymentHandler<TTransaction, TName>): () => void
  /** A handler for every payment event, run after the event's own handlers. Returns a function that removes it. */
  onAny(handler: PaymentHandler<TTransaction>): () => void
  /**
   * Told (not awaited) when a handler threw, with an AggregateError holding the error and `event`. The delivery
   * still fails (500) and is handled again on redelivery. Returns a function that removes it.
   */
  onError(handler: ErrorHandler<TTransaction>): () => void
  /**
   * The timeline of one payment, oldest first: every delivery (received, verified or refused, then its outcome)
   * and every inbox attempt. By order_number (a string, or `{ orderNumber }`) or `{ exchangeNumber }`.
   * Rejects with a TypeError when the store keeps no timeline.
   */
  timeline(query: string | TimelineQuery): Promise<TimelineEntry[]>
  /**
   * Refused deliveries, which are never stored per payment (anyone can send them): counts per error code since the
   * receiver was made, and the latest 100 (when the store keeps a timeline), oldest first. In this process only.
   */
  refusals(): RefusalSummary
  /** Writes the timeline entries still queued. At shutdown, await it before closing the store's client. */
  flush(): Promise<void>
  /** Parse, verify, deduplicate, run the handlers, and say what to answer. Never throws. */
  handle(delivery: Delivery): Promise<ReceiverResponse>
  /**
   * A payment record read over the authenticated API (reconciliation), as JSON values or form text: checked,
   * classified, deduplicated and handled like a delivery, with no checksum. Never pass it anything a browser
   * or another server sent. Never throws.
   */
  handleTrusted(fields: Readonly<Record<string, FieldInput>>): Promise<ReceiverResponse>
  /** Parse and verify only: no store, no handlers. Throws ReceiverError. */
  verify(delivery: RawDelivery): Promise<VerifiedPayment>
  /** The body limit, for adapters whose framework reads the body itself. */
  readonly maxBodyBytes: number
  /** How long a body may take to arrive (`bodyTimeoutMs`), for adapters whose framework reads the body itself. */
  readonly bodyTimeoutMs: number
  /** Inbox mode's workers and operator API; every method throws when the receiver was made without `inbox`. */
  readonly inbox: ReceiverInbox
  /** The payment book: open payments, oldest first, and their counts. Methods reject when the store has no book. */
  readonly payments: ReceiverPayments
  /**
   * One sweep now: looks up the open payments that are due (through `client`), hands what the API shows to the
   * handlers, and closes those past their horizon. Does nothing (`swept: false`) while another process sweeps.
   * Rejects with a TypeError when the receiver has no `client` or the store no payment book and sweep lock.
   */
  sweep(): Promise<SweepReport>
  /** At shutdown: stops the in-process sweeper (giving its lock back) and writes the timeline still queued. */
  close(): Promise<void>
}

/**
 * What adapters need of a receiver: the part that does not depend on the store's transaction type, so one
 * adapter serves receivers with any store.
 */
export type DeliveryHandler = Pick<Receiver<unknown>, 'handle' | 'maxBodyBytes'> & Partial<Pick<Receiver<unknown>, 'bodyTimeoutMs'>>

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

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref())
}

/** Waits for `settled` or `ms`, whichever comes first, without keeping the process alive. */
async function waitFor(settled: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms)
    timer.unref()
  })
  await Promise.race([settled, timeout])
  clearTimeout(timer)
}

export function createReceiver<TTransaction = undefined>(options: ReceiverOptions<TTransaction>): Receiver<TTransaction> {
  const logger = safeLogger(options.logger)
  const confirmer = options.confirm === false || options.client === undefined ? undefined : confirmingClients(options.client)
  // Confirmation settles what a result's names cannot: with it, results nothing pins are left to the API.
  const verifier = new Verifier(options, confirmer === undefined ? (options.unpinnedResults ?? 'refuse') : 'accept')
  const store: ReceiverStore<TTransaction> = options.store ?? (memoryStore() as ReceiverStore<never>)
  const leaseMs = options.leaseMs ?? 60_000
  const busyWaitMs = options.busyWaitMs ?? 2000
  const requireFields = options.requireFields ?? []
  const expectHook = options.expect
  if (expectHook !== undefined && typeof expectHook !== 'function') throw new TypeError('expect must be a function')
  const handlers: Record<PaymentEventName, PaymentHandler<TTransaction>[]> = {
    'payment.pending': [],
    'payment.succeeded': [],
    'payment.failed': [],
  }
  if (!(Number.isInteger(leaseMs) && leaseMs > 0)) throw new TypeError('leaseMs must be a positive integer')
  if (!(Number.isInteger(busyWaitMs) && busyWaitMs >= 0)) throw new TypeError('busyWaitMs must be a non-negative integer')
  // Deliveries this receiver is handling now, by exchange_number: a shared store cannot tell that the lease
  // holder is in this very process, but the receiver can, and then waits instead of answering 409.
  const inFlight = new Map<string, { waiting?: Promise<void>; wake?: () => void }>()
  // Lease owners need only be unique: one random id per receiver and a counter cost less than a UUID each.
  const ownerPrefix = `${randomUUID()}:`
  let deliveries = 0
  const trustedShapes = new ShapeCache()
  const telemetry = new Telemetry(options.telemetry, logger)
  const hooks = new Hooks<PaymentEvent<TTransaction>>(logger, (error) => telemetry.recordException(error))
  const refusals = new RefusalLog()
  const timeline = new TimelineRecorder(store, logger, options.timeline === false, verifier.maxBodyBytes, refusals)
  const paymentBook = storeBook(store, options.book, logger)
  const keeper = paymentBook === undefined ? undefined : new BookKeeper(paymentBook, logger)
  const sweepOptions = sweepSettings(options.sweep)

  /**
   * Claims the payment, runs its handlers and records them done. One async function from claim to answer: every
   * nested async call cost the delivery another promise and another trip through the microtask queue.
   * `what` names the input for the catch-all, which turns an unexpected error into an answer; without it (the
   * inbox, which records the error itself) the error is thrown.
   */
  async function dispatch(verified: VerifiedPayment, kind: ResultSource, what?: string, confirmed = kind === 'reconcile'): Promise<ReceiverResponse> {
    const { exchangeNumber, state } = verified
    try {
      // Inside the try: it reads the merchant's store, whose getters may throw.
      const inProcess = localClaims(store)
      // One object serves as the claim request and as the lease reference for complete/release.
      const lease: { exchangeNumber: string } & ClaimRequest = { exchangeNumber, state, owner: ownerPrefix + String(++deliveries), leaseMs }
      // A store in this process keeps the number as a string of its own, made here only when it takes the claim
      // (contract/local-claims.ts); the completion and the timeline then hand it that very string.
      const keep = inProcess === undefined ? undefined : () => (lease.exchangeNumber = verified.keepExchangeNumber(detached))
      // How long a busy payment is waited for, counted from its first busy answer: most claims never see one.
      let waitUntil = 0
      let askUntil = 0
      let pauseMs = 10
      // A book elsewhere is read before the claim (book-check.ts); one in this process after it.
      let booked: BookedPayment | undefined
      if (keeper !== undefined && !keeper.inProcess) {
        try {
          booked = await keeper.find(verified.orderNumber)
        } catch (error) {
          return bookUnavailable(error, verified, kind)
        }
      }
      let previousState: PaymentState | null
      let transaction: TTransaction | undefined
      for (;;) {
        let claim
        try {
          claim = inProcess !== undefined ? inProcess.claim(lease, keep as () => string) : await store.claim(lease)
        } catch (error) {
          logger.error({ exchangeNumber, state, delivery: kind, err: error }, 'the store failed to claim the payment')
          const response = refused(new ReceiverError('store_unavailable', 'the payment store is unavailable; retry later'), 'failed', verified)
          response.headers['retry-after'] = '5'
          return response
        }
        if (claim.outcome === 'duplicate') return acknowledged('duplicate', verified)
        if (claim.outcome === 'stale') {
          logger.info({ exchangeNumber, state, delivery: kind, currentState: claim.currentState }, 'ignored a payment result older than the one already handled')
          return acknowledged('stale', verified)
        }
        if (claim.outcome === 'claimed') {
          previousState = claim.previousState
          transaction = claim.transaction
          break
        }
        const now = Date.now()
        if (waitUntil === 0) [waitUntil, askUntil] = [now + leaseMs, now + busyWaitMs]
        const remaining = waitUntil - now
        // A duplicate is never acknowledged before the first delivery's handlers succeeded: wait for them here
        // when they run in this process, otherwise let the sender retry.
        // A store that tells when its lease settles (the memory store does) needs no waiting of ours.
        let settled = claim.settled
        if (settled === undefined) {
          const local = inFlight.get(exchangeNumber)
          if (local !== undefined) settled = local.waiting ??= new Promise<void>((resolve) => (local.wake = resolve))
        }
        if (settled !== undefined && remaining > 0) {
          await waitFor(settled, remaining)
          continue
        }
        // Held by another process: nothing here can tell when it is done, so ask again a few times, backing off.
        const left = askUntil - Date.now()
        if (left <= 0) return busy(claim.retryAfterMs, verified)
        await sleep(Math.min(pauseMs, left))
        pauseMs *= 2
      }

      if (keeper?.inProcess === true) {
        try {
          booked = keeper.findNow(verified.orderNumber)
        } catch (error) {
          await releaseQuietly(lease, { exchangeNumber, state, delivery: kind })
          return bookUnavailable(error, verified, kind)
        }
      }

      let handled = verified
      if (confirmer !== undefined && !confirmed) {
        const known = await confirmThroughApi(confirmer, verified, trustedShapes, Math.floor(leaseMs / 2))
        if (known instanceof ReceiverError || known.state !== state) {
          await releaseQuietly(lease, { exchangeNumber, state, delivery: kind })
          if (!(known instanceof ReceiverError) && STATE_RANK[known.state] > STATE_RANK[state]) {
            logger.info({ exchangeNumber, state, delivery: kind, currentState: known.state }, 'the status API already shows a later state; handling that instead')
            return await dispatch(known, kind, what, true)
          }
          const error = known instanceof ReceiverError ? known : new ReceiverError('confirmation_pending', 'the status API does not show this state yet; retry later')
          const level = error.code === 'confirmation_pending' ? 'warn' : 'error'
          logger[level]({ exchangeNumber, state, delivery: kind, code: error.code }, `did not handle the result: ${error.message}`)
          const response = refused(error, error.status >= 500 ? 'failed' : 'rejected', verified)
          if (error.status === 503) response.headers['retry-after'] = '30'
          return response
        }
        handled = known
      }
      // Checked against what the merchant asked for: the API's record when confirmed, else the result itself.
      const problem = booked === undefined ? undefined : disagreement(booked, handled)
      if (problem !== undefined) {
        await releaseQuietly(lease, { exchangeNumber, state, delivery: kind })
        logger.warn({ exchangeNumber, state, delivery: kind, code: 'result_mismatch' }, `did not handle the result: ${problem}`)
        return refused(mismatchError(problem), 'rejected', verified)
      }

      // A store in this process says itself when a busy payment is settled; others need this process's word.
      const running: { waiting?: Promise<void>; wake?: () => void } | undefined = inProcess === undefined ? {} : undefined
      if (running !== undefined) inFlight.set(exchangeNumber, running)
      try {
        const log = { exchangeNumber, state, delivery: kind }
        const name = EVENT_NAMES[state]
        const event: PaymentEvent<TTransaction> = new HandlerEvent(handled, name, previousState, kind, transaction, booked)
        try {
          const handling = hooks.handlersFor(handlers[name], name, log)
          if (handling.length === 0) return await unhandled(store, lease, name, verified, logger, log)
          for (let i = 0; i < handling.length; i++) {
            // A handler that returns nothing (most do) costs no tick.
            const result = (handling[i] as PaymentHandler<TTransaction>)(event)
            if (result !== undefined) await result
          }
        } catch (error) {
          return await handlerFailed(error, event, verified, lease, log)
        }
        let completed: boolean
        try {
          completed = inProcess !== undefined ? inProcess.complete(lease) : await store.complete(lease)
        } catch (error) {
          logger.error({ ...log, err: error }, 'handlers ran but the store failed to record it; a redelivery will run them again')
          return refused(new ReceiverError('store_unavailable', 'the payment store is unavailable; retry later'), 'failed', verified)
        }
        if (!completed) {
          logger.error(log, `handlers ran longer than leaseMs (${leaseMs} ms) and another delivery took the payment over`)
          return refused(new ReceiverError('lease_lost', 'the claim expired while the handlers ran'), 'failed', verified)
        }
        logger.info(log, HANDLED[name])
        const settling = booked === undefined ? undefined : keeper?.settle(booked, state, exchangeNumber)
        if (settling !== undefined) await settling
        return acknowledged('processed', verified)
      } finally {
        if (running !== undefined) {
          inFlight.delete(exchangeNumber)
          running.wake?.()
        }
      }
    } catch (error) {
      if (what === undefined) throw error
      logger.error({ err: error, delivery: kind }, `unexpected error while handling ${what}`)
      return refused(new ReceiverError('internal_error', `unexpected error while handling ${what}`), 'failed')
    }
  }

  function bookUnavailable(error: unknown, verified: VerifiedPayment, kind: ResultSource): ReceiverResponse {
    logger.error({ exchangeNumber: verified.exchangeNumber, state: verified.state, delivery: kind, err: error }, 'the store failed to read its payment book')
    const response = refused(new ReceiverError('store_unavailable', 'the payment store is unavailable; retry later'), 'failed', verified)
    response.headers['retry-after'] = '5'
    return response
  }

  async function releaseQuietly(lease: LeaseRef, log: { exchangeNumber: string; state: PaymentState; delivery: ResultSource }): Promise<void> {
    await store.release(lease).catch((releaseError: unknown) => {
      logger.error({ ...log, err: releaseError }, 'the store failed to release the claim; it frees itself when the lease expires')
    })
  }

  /** A handler threw: the claim is released so that a redelivery runs the handlers again. */
  async function handlerFailed(
    error: unknown,
    event: PaymentEvent<TTransaction>,
    verified: VerifiedPayment,
    lease: LeaseRef,
    log: { exchangeNumber: string; state: PaymentState; delivery: ResultSource },
  ): Promise<ReceiverResponse> {
    const name = event.name
    logger.error({ ...log, err: error }, `a ${name} handler threw; the payment will be handled again on redelivery`)
    hooks.handlerFailed(error, event)
    await releaseQuietly(lease, log)
    const message = `a ${name} handler failed; the claim was released so the next delivery runs it again`
    const response = refused(new ReceiverError('handler_failed', message), 'failed', verified)
    handlerFailures.set(response, error)
    return response
  }

  /**
   * What both entry points share: accept the result (by its checksum, or because it came over the API), then
   * dispatch it; every failure becomes an answer, never a throw. Not an async function: a result accepted at
   * once (nearly all) goes straight to dispatch, whose promise is the answer, with no promise of its own between.
   */
  function receiveOnce(
    source: ResultSource,
    what: string,
    accept: Accept,
    delivery: RawDelivery | undefined,
    watcher: AcceptWatcher | undefined,
  ): Promise<ReceiverResponse> {
    let accepted: VerifiedPayment | Promise<VerifiedPayment>
    try {
      // Usually no promise at all: the body is at hand and the token known, so no tick is spent waiting.
      accepted = accept(delivery)
    } catch (error) {
      return Promise.resolve(notAccepted(error, source, what))
    }
    if (accepted instanceof Promise)
      return accepted.then(
        (verified) => {
          watcher?.accepted(verified)
          return proceed(verified, source, what)
        },
        (error: unknown) => notAccepted(error, source, what),
      )
    watcher?.accepted(accepted)
    return proceed(accepted, source, what)
  }

  function notAccepted(error: unknown, source: ResultSource, what: string): ReceiverResponse {
    refusals.count(error instanceof ReceiverError ? error.code : 'internal_error')
    if (error instanceof ReceiverError) {
      const level = error.status >= 500 ? 'error' : 'warn'
      const details = { code: error.code, delivery: source, ...(error.cause === undefined ? {} : { err: error.cause }), ...diagnosisDetails(error) }
      logger[level](details, `refused ${what}: ${error.message}${error.diagnosis === undefined ? '' : `. Diagnosis: ${error.diagnosis.summary}`}`)
      return refused(error, 'rejected')
    }
    logger.error({ err: error, delivery: source }, `unexpected error while reading ${what}`)
    return refused(new ReceiverError('internal_error', `unexpected error while reading ${what}`), 'failed')
  }

  function proceed(verified: VerifiedPayment, source: ResultSource, what: string): Promise<ReceiverResponse> {
    try {
      // Most receivers require nothing: no array is made for them.
      const missing = requireFields.length === 0 ? requireFields : requireFields.filter((name) => !verified.has(name))
      if (missing.length > 0) {
        const error = new ReceiverError('invalid_fields', `the result lacks ${missing.join(', ')}, which requireFields asks for`, { fields: missing })
        logger.warn({ code: error.code, delivery: source, exchangeNumber: verified.exchangeNumber }, `refused ${what}: ${error.message}`)
        refusals.count(error.code)
        return Promise.resolve(refused(error, 'rejected'))
      }
      if (!verified.has('transaction_amount'))
        logger.warn(
          { exchangeNumber: verified.exchangeNumber, state: verified.state, delivery: source },
          'a verified result carries no transaction_amount: the checksum does not sign field names, so confirm the ' +
            'payment (client.paymentStatus, or give the receiver the API client) before fulfilling, or set requireFields: [\'transaction_amount\']',
        )
    } catch (error) {
      return Promise.resolve(notAccepted(error, source, what))
    }
    if (expectHook !== undefined) return expected(expectHook, verified, source, what)
    return next(verified, source, what)
  }

  async function expected(hook: ExpectHook, verified: VerifiedPayment, source: ResultSource, what: string): Promise<ReceiverResponse> {
    const error = await checkExpected(hook, verified)
    if (error === undefined) return next(verified, source, what)
    const level = error.status >= 500 ? 'error' : 'warn'
    logger[level]({ code: error.code, delivery: source, exchangeNumber: verified.exchangeNumber, ...(error.cause === undefined ? {} : { err: error.cause }) }, `refused ${what}: ${error.message}`)
    const response = refused(error, error.status >= 500 ? 'failed' : 'rejected', verified)
    if (error.status === 503) response.headers['retry-after'] = '5'
    return response
  }

  function next(verified: VerifiedPayment, source: ResultSource, what: string): Promise<ReceiverResponse> {
    return inbox === undefined ? dispatch(verified, source, what) : queue(inbox, verified, source)
  }

  async function queue(into: AcceptingInbox, verified: VerifiedPayment, source: ResultSource): Promise<ReceiverResponse> {
    try {
      await into.accept(verified, source)
    } catch (error) {
      logger.error({ exchangeNumber: verified.exchangeNumber, state: verified.state, delivery: source, err: error }, 'the inbox could not be written')
      const response = refused(new ReceiverError('store_unavailable', 'the payment store is unavailable; retry later'), 'failed', verified)
      response.headers['retry-after'] = '5'
      return response
    }
    return acknowledged('queued', verified)
  }



  const inbox =
    options.inbox === undefined
      ? undefined
      : createInbox(store, options.inbox, {
          leaseMs,
          logger,
          async dispatch(verified, source) {
            let response: ReceiverResponse
            try {
              response = await dispatch(verified, source)
            } catch (error) {
              return { outcome: 'failed', headers: {}, error: { code: 'internal_error', message: 'unexpected error' }, cause: error }
            }
            return { outcome: response.outcome, headers: response.headers, error: response.error, cause: handlerFailures.get(response) }
          },
          attempted(verified, answer, dead) {
            if (timeline.enabled) timeline.record(inboxAttemptEntries(verified, answer, dead, timeline.nextAttempt()))
          },
        })

  const receive = observe(receiveOnce, { timeline, telemetry, logger })
  // One function for every delivery: it is handed the delivery (or the copy observe keeps the body of).
  const acceptDelivery: Accept = (delivery) => verifier.verifyNow(delivery as RawDelivery)
  const handleTrusted = (fields: Readonly<Record<string, FieldInput>>) => receive('reconcile', 'an API record', () => trustedPayment(fields, trustedShapes))
  const sweeper = sweeping({
    store,
    book: paymentBook,
    client: options.client === undefined ? undefined : confirmingClients(options.client),
    credentials: options.credentials,
    handOver: handleTrusted,
    timeline,
    telemetry,
    logger,
    settings: sweepOptions,
  })

  return {
    inbox: inbox ?? disabledInbox(),

    on(name, handler) {
      const list = handlers[name]
      if (list === undefined) throw new TypeError(`unknown event "${String(name)}"; use ${Object.keys(handlers).join(', ')}`)
      if (typeof handler !== 'function') throw new TypeError('handler must be a function')
      list.push(handler)
      return () => {
        const at = list.indexOf(handler)
        if (at >= 0) list.splice(at, 1)
      }
    },

    onAny: (handler) => hooks.onAny(handler),
    onError: (handler) => hooks.onError(handler),
    timeline: async (query) => {
      const asked = typeof query === 'string' ? { orderNumber: query } : query
      return withCreation(await timeline.read(asked), asked, paymentBook)
    },
    flush: () => timeline.flush(),
    refusals: () => {
      timeline.keepRefusals()
      return refusals.summary()
    },

    handle: (delivery) => receive(delivery.kind, 'a delivery', acceptDelivery, delivery),

    handleTrusted,
    payments: receiverPayments(paymentBook),
    sweep: () => sweeper.sweep(),
    close: async () => {
      await sweeper.stop()
      await timeline.flush()
    },

    verify: (delivery) => verifier.verify(delivery),
    maxBodyBytes: verifier.maxBodyBytes,
    bodyTimeoutMs: verifier.bodyTimeoutMs,
  }
}
