import type { RawDelivery } from '../core/result/body.js'
import { ReceiverError } from '../core/result/errors.js'
import { safeLogger } from '../core/logger.js'
import { ShapeCache } from '../core/result/shape.js'
import { trustedPayment } from '../core/result/trusted.js'
import type { FieldInput } from '../core/values.js'
import { type VerifiedPayment, Verifier } from '../core/result/verify.js'
import type { ReceiverStore } from '../contract/store.js'
import { memoryStore } from '../stores/memory/store.js'
import { type AcceptingInbox, createInbox, disabledInbox } from '../inbox/inbox.js'
import { BookKeeper, storeBook } from './book-check.js'
import { confirmingClients } from './confirmation.js'
import { Dispatcher, type Step } from './dispatch.js'
import type { PaymentEvent, PaymentEventName, PaymentHandler, ReceiverResponse, ResultSource } from './events.js'
import { checkExpected, type ExpectHook } from './expectations.js'
import { handlerFailures } from './failures.js'
import { Hooks } from './hooks.js'
import { type Accept, type AcceptWatcher, observe } from './observe.js'
import type { Receiver, ReceiverOptions } from './options.js'
import { receiverPayments, sweeping, withCreation } from './payments.js'
import { RefusalLog } from './refusals.js'
import { acknowledged, diagnosisDetails, refused } from './responses.js'
import { sweepSettings } from './sweep-options.js'
import { Telemetry } from './telemetry.js'
import { inboxAttemptEntries, TimelineRecorder } from './timeline.js'

export type { DeliveryHandler, Receiver, ReceiverOptions } from './options.js'
export type { ConfirmingClient, ConfirmingClients } from './confirmation.js'
export type { ReceiverPayments } from './payments.js'
export type { SweepOptions } from './sweep-options.js'
export type { SweepReport } from './sweeper.js'
export type { ExpectedPayment, ExpectHook, ExpectQuery } from './expectations.js'
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
  const trustedShapes = new ShapeCache()
  const telemetry = new Telemetry(options.telemetry, logger)
  const hooks = new Hooks<PaymentEvent<TTransaction>>(logger, (error) => telemetry.recordException(error))
  const refusals = new RefusalLog()
  const timeline = new TimelineRecorder(store, logger, options.timeline === false, verifier.maxBodyBytes, refusals)
  const paymentBook = storeBook(store, options.book, logger)
  const keeper = paymentBook === undefined ? undefined : new BookKeeper(paymentBook, logger)
  const sweepOptions = sweepSettings(options.sweep)
  const dispatcher = new Dispatcher<TTransaction>({ store, logger, leaseMs, busyWaitMs, hooks, handlers, keeper, confirmer, trustedShapes })

  /**
   * What both entry points share: accept the result (by its checksum, or because it came over the API), then
   * dispatch it; every failure becomes an answer, never a throw. Not an async function: a result accepted at once
   * (nearly all) goes straight to dispatch, whose answer is this one's, with no promise of its own between.
   */
  function receiveOnce(
    source: ResultSource,
    what: string,
    accept: Accept,
    delivery: RawDelivery | undefined,
    watcher: AcceptWatcher | undefined,
  ): Step<ReceiverResponse> {
    let accepted: VerifiedPayment | Promise<VerifiedPayment>
    try {
      // Usually no promise at all: the body is at hand and the token known, so no tick is spent waiting.
      accepted = accept(delivery)
    } catch (error) {
      return notAccepted(error, source, what)
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

  function proceed(verified: VerifiedPayment, source: ResultSource, what: string): Step<ReceiverResponse> {
    try {
      // Most receivers require nothing: no array is made for them.
      const missing = requireFields.length === 0 ? requireFields : requireFields.filter((name) => !verified.has(name))
      if (missing.length > 0) {
        const error = new ReceiverError('invalid_fields', `the result lacks ${missing.join(', ')}, which requireFields asks for`, { fields: missing })
        logger.warn({ code: error.code, delivery: source, exchangeNumber: verified.exchangeNumber }, `refused ${what}: ${error.message}`)
        refusals.count(error.code)
        return refused(error, 'rejected')
      }
      if (!verified.has('transaction_amount'))
        logger.warn(
          { exchangeNumber: verified.exchangeNumber, state: verified.state, delivery: source },
          'a verified result carries no transaction_amount: the checksum does not sign field names, so confirm the ' +
            'payment (client.paymentStatus, or give the receiver the API client) before fulfilling, or set requireFields: [\'transaction_amount\']',
        )
    } catch (error) {
      return notAccepted(error, source, what)
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

  function next(verified: VerifiedPayment, source: ResultSource, what: string): Step<ReceiverResponse> {
    return inbox === undefined ? dispatcher.dispatch(verified, source, what) : queue(inbox, verified, source)
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
              response = await dispatcher.dispatch(verified, source)
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
  // An API record is the credential set's whose client asked for it (the sweeper's), else the one it names: the
  // API's own field names, which nobody between the service and this process renames.
  const handleTrustedAs = (fields: Readonly<Record<string, FieldInput>>, uid?: string) =>
    receive('reconcile', 'an API record', () => {
      const trusted = trustedPayment(fields, trustedShapes)
      const named = trusted.text('interface_uid')
      trusted.signerUid = uid ?? (named === '' ? undefined : named)
      return trusted
    })
  const handleTrusted = (fields: Readonly<Record<string, FieldInput>>) => handleTrustedAs(fields)
  const sweeper = sweeping({
    store,
    book: paymentBook,
    client: options.client === undefined ? undefined : confirmingClients(options.client),
    credentials: options.credentials,
    handOver: handleTrustedAs,
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
