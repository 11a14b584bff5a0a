import { type ClientOptions, createClient } from '../client/index.js'
import { RECEIVER_LOGGER, safeLogger } from '../core/logger.js'
import type { CredentialSet } from '../core/result/credentials.js'
import { Verifier } from '../core/result/verify.js'
import { refusalSecrets } from '../core/result/without-secrets.js'
import type { ReceiverStore } from '../contract/store.js'
import { memoryStore } from '../stores/memory/store.js'
import { type AcceptingInbox, createInbox, disabledInbox } from '../inbox/inbox.js'
import type { Confirmer, ConfirmingClient } from './confirm.js'
import { answeredWithin, Dispatcher, failureOf, storeWithinMs } from './dispatch.js'
import type { PaymentEvent, PaymentEventName, PaymentHandler } from './events.js'
import { Hooks } from './hooks.js'
import type { Receiver, ReceiverOptions } from './options.js'
import { receiverPayments, storeBook, storeLock, sweeping, withCreation } from './payments.js'
import { receiverOperator } from './operator.js'
import { receive, type ReceiveParts, receiveTrusted } from './receive.js'
import { RefusalLog } from './refusals.js'
import { sweepSettings } from './sweep-options.js'
import { Telemetry } from './telemetry.js'
import { inboxAttemptEntries, TimelineRecorder } from './timeline.js'

export type { DeliveryHandler, Receiver, ReceiverOptions } from './options.js'
export type { ConfirmingClient, ConfirmingClients } from './confirm.js'
export type { ReceiverPayments } from './payments.js'
export type { LookUpAnswer, OperatorOrder, ReceiverOperator, RetryItem } from './operator.js'
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

const SIGNATURE_ONLY_WARNING =
  'signature-only receiver: results are acted on without confirming them over the service API. Every buyer holds a ' +
  "signed result of their own and can rename its fields (the checksum signs values, not names); this receiver acts " +
  'only on results whose payment, order, amount and state no renaming with the fields the spec lists could change, ' +
  'and refuses the rest (needs_confirmation); a result carrying other fields can still be copied past that check, so ' +
  'check the order and amount against your own record (expect). Give it { environment, credentials: { uid, ' +
  "authToken, checksumToken } } to confirm instead (docs/security.md)"

const NEEDS_A_CHOICE =
  'createReceiver: results are confirmed over the service API before any handler runs, so the receiver needs the ' +
  'API credentials: createReceiver({ environment: { baseUrl }, credentials: { uid, authToken, checksumToken } }), ' +
  'or an API client (client). To act on the checksum alone, say so: signatureOnly: true (docs/security.md)'

export function createReceiver<TTransaction = undefined>(options: ReceiverOptions<TTransaction>): Receiver<TTransaction> {
  if (options === null || typeof options !== 'object') throw new TypeError('createReceiver needs an options object')
  const logger = safeLogger(options.logger)
  const store: ReceiverStore<TTransaction> = options.store ?? (memoryStore() as ReceiverStore<never>)
  const asked = options.leaseMs ?? 60_000
  if (!(Number.isInteger(asked) && asked > 0)) throw new TypeError('leaseMs must be a positive integer')
  // A store that holds claims for a lease of its own (its leaseMs option) decides when a claim runs out: the
  // confirmation's half, the store calls' and the in-process waits are timed within it, or a claim could run out
  // while the API is asked and a duplicate run the handlers again.
  const held = store.leaseMs
  const leaseMs = typeof held === 'number' && Number.isInteger(held) && held > 0 ? Math.min(asked, held) : asked
  const verifier = new Verifier(options, leaseMs)
  // With signatureOnly, an API client given still serves the sweeper; deliveries are not confirmed with it.
  const api = confirmingClient(options, verifier)
  const confirmer = options.signatureOnly === true ? undefined : api
  if (options.signatureOnly !== true && confirmer === undefined) throw new TypeError(NEEDS_A_CHOICE)
  if (options.signatureOnly === true) logger.warn({}, SIGNATURE_ONLY_WARNING)
  if (options.expect !== undefined && typeof options.expect !== 'function') throw new TypeError('expect must be a function')
  const handlers: Record<PaymentEventName, PaymentHandler<TTransaction>[]> = { 'payment.pending': [], 'payment.succeeded': [], 'payment.failed': [] }
  const telemetry = new Telemetry(options.telemetry, logger)
  const hooks = new Hooks<PaymentEvent<TTransaction>>(logger, (error) => telemetry.recordException(error))
  const timeline = new TimelineRecorder(store, logger, options.timeline === false, storeWithinMs(leaseMs))
  const refusals = new RefusalLog(timeline.enabled)
  const book = storeBook(store, options.book, logger)
  const handlerErrors = new WeakMap<object, unknown>()
  const dispatcher = new Dispatcher<TTransaction>({
    store,
    logger,
    leaseMs,
    hooks,
    handlers,
    confirmer,
    useBook: book !== undefined,
    expect: options.expect,
    handlerFailed: (response, error) => handlerErrors.set(response, error),
  })
  const inboxOf = (settings: NonNullable<ReceiverOptions['inbox']>): AcceptingInbox =>
    createInbox(store, settings, {
      leaseMs,
      logger,
      storeWithinMs: dispatcher.storeWithinMs,
      answeredWithin,
      async dispatch(verified, source) {
        const response = await dispatcher.dispatch(verified, source, source === 'reconcile')
        return { outcome: response.outcome, headers: response.headers, error: response.error, cause: handlerErrors.get(response) }
      },
      attempted(verified, answer, dead) {
        if (!timeline.enabled) return
        const failure = answer.cause === undefined ? undefined : failureOf(answer.cause, verified, verified).message
        timeline.record(inboxAttemptEntries(verified, { ...answer, failure }, dead, timeline.nextAttempt()))
      },
    })
  const inbox = options.inbox === undefined ? undefined : inboxOf(options.inbox)
  // A durable store keeps what the API cannot confirm yet, and its inbox's workers confirm it later.
  const deferTo = inbox === undefined && confirmer !== undefined && typeof store.openInbox === 'function' ? inboxOf({}) : undefined
  const parts: ReceiveParts = {
    verifier,
    dispatcher: dispatcher as Dispatcher<unknown>,
    confirmer,
    confirmWithinMs: Math.floor(leaseMs / 2),
    requireFields: options.requireFields ?? [],
    inbox,
    deferTo,
    timeline,
    refusals,
    telemetry,
    logger,
    thrown: (response) => handlerErrors.get(response),
  }
  const sweeper = sweeping({
    store,
    book,
    client: api === undefined ? undefined : (uid) => lookupClient(options, verifier, uid),
    uids: listedUids(options, verifier),
    // A pass waits for each result it hands over, renewing its lock meanwhile: a handler stuck for good must not keep
    // it, and every process's sweeper with it, waiting for ever. Twice the lease: past that, the claim the handlers
    // ran under is lost anyway (the stuck run goes on by itself; the payment is looked up again).
    handOver: (fields, uid) => answeredWithin(receiveTrusted(parts, fields, uid), 2 * leaseMs, 'the receiver'),
    timeline,
    telemetry,
    logger,
    settings: sweepSettings(options.sweep),
  })
  // Workers and the sweeper start with the receiver, so that a process taking no deliveries still drains and sweeps.
  // A Worker's module scope forbids timers: there they start at the receiver's first use instead.
  let started = false
  const start = () => {
    if (started) return
    inbox?.start()
    deferTo?.start()
    sweeper.start()
    started = true
  }
  try {
    start()
  } catch {
    // Not swallowed: a fault other than the runtime's refusal throws again at first use, and that use fails with it.
  }

  // A result kept until the API confirms it is one an operator may need to see or retry, as in inbox mode.
  const operated = inbox ?? deferTo ?? disabledInbox()
  const operator = receiverOperator({
    client: api === undefined ? undefined : (uid) => lookupClient(options, verifier, uid ?? verifier.sets[0]?.uid ?? ''),
    handOver: (fields, uid) => {
      start()
      return receiveTrusted(parts, fields, uid)
    },
    secrets: async (uid) => {
      const set = await verifier.setFor(uid)
      return refusalSecrets([...verifier.sets, ...(set === undefined ? [] : [set])], [])
    },
    book,
    inbox: operated,
    timeline,
  })

  const receiver: Receiver<TTransaction> = {
    inbox: operated,
    operator,
    on(name, handler) {
      const list = handlers[name]
      if (list === undefined) throw new TypeError(`unknown event "${String(name)}"; use ${Object.keys(handlers).join(', ')}`)
      if (typeof handler !== 'function') throw new TypeError('handler must be a function')
      list.push(handler as PaymentHandler<TTransaction>)
      return () => {
        const at = list.indexOf(handler as PaymentHandler<TTransaction>)
        if (at >= 0) list.splice(at, 1)
      }
    },
    onAny: (handler) => hooks.onAny(handler),
    onError: (handler) => hooks.onError(handler),
    timeline: async (query) => {
      const asked = typeof query === 'string' ? { orderNumber: query } : query
      return withCreation(await timeline.read(asked, refusals), asked, book)
    },
    flush: () => timeline.flush(),
    refusals: () => refusals.summary(),
    handle: (delivery) => {
      start()
      return receive(parts, delivery)
    },
    handleTrusted: (fields) => {
      start()
      return receiveTrusted(parts, fields)
    },
    payments: receiverPayments(book, storeLock(store, logger), start),
    sweep: () => sweeper.sweep(),
    close: async () => {
      await sweeper.stop()
      await Promise.all([inbox?.stop(), deferTo?.stop()])
      await timeline.flush()
    },
    verify: (delivery) => verifier.verify(delivery),
    confirming: confirmer !== undefined,
    maxBodyBytes: verifier.maxBodyBytes,
    bodyTimeoutMs: verifier.bodyTimeoutMs,
  }
  // For the adapters' shared code, which logs the app's faults around the receiver (an onResult that threw).
  return Object.assign(receiver, { [RECEIVER_LOGGER]: logger })
}

/** The API client options of one credential set, for the receiver's own clients. */
function clientOptions(options: ReceiverOptions<unknown>, set: CredentialSet): ClientOptions {
  return {
    environment: options.environment as ClientOptions['environment'],
    uid: set.uid,
    authToken: set.authToken as string,
    checksumToken: set.checksumToken,
    ...(options.logger === undefined ? {} : { logger: options.logger }),
  }
}

/** The client that confirms a verified result (the set whose token signed it), or undefined for signature only. */
function confirmingClient(options: ReceiverOptions<unknown>, verifier: Verifier): Confirmer | undefined {
  const given = options.client
  if (given !== undefined) {
    // A result read back from the inbox keeps the set that signed it (or names one by its uid), but not where that
    // set stands in today's credentials: its index is looked up again.
    if (typeof given === 'function')
      return (signer) => {
        if (signer.set !== undefined) return given(signer.credential)
        const uid = signer.credential?.uid ?? signer.uid
        return given(uid === undefined ? undefined : { uid, index: verifier.sets.findIndex((set) => set.uid === uid), by: signer.credential?.by ?? 'uid' })
      }
    if (typeof given?.searchTransactions !== 'function')
      throw new TypeError('client must be the API client (createClient from fpx-collect/client) or a function returning one')
    return () => given
  }
  if (options.environment === undefined) return undefined
  if (!verifier.confirmable)
    throw new TypeError('createReceiver: to confirm results over the API, every credential set needs its authToken (credentials: { uid, authToken, checksumToken })')
  // One client per credential set, made when first needed; the checks of createClient run for each set now.
  for (const set of verifier.sets) createClient(clientOptions(options, set))
  const clients = new Map<string, ConfirmingClient>()
  return async (signer) => {
    // A result read back from the inbox was verified before it was stored (maybe in another process): the set that
    // signed it is found again by its uid, kept with the entry, or else the one the result names.
    const set = signer.set ?? (await verifier.setFor(signer.credential?.uid ?? signer.uid))
    if (set === undefined) throw new Error('no credential set for the uid this result names, to confirm it with')
    let client = clients.get(set.uid)
    if (client === undefined) clients.set(set.uid, (client = createClient(clientOptions(options, set))))
    return client
  }
}

/** The client the sweeper looks an open payment up with: the one of the credential set that created it. */
function lookupClient(options: ReceiverOptions<unknown>, verifier: Verifier, uid: string): ConfirmingClient | undefined {
  const given = options.client
  if (typeof given === 'function') return given({ uid, index: verifier.sets.findIndex((set) => set.uid === uid), by: 'uid' })
  if (given !== undefined) return given
  const set = verifier.sets.find((one) => one.uid === uid)
  return set === undefined ? undefined : createClient(clientOptions(options, set))
}

/** The credential sets the sweeper lists the transactions of: those configured, or the one client given's. */
function listedUids(options: ReceiverOptions<unknown>, verifier: Verifier): string[] {
  const given = (options.client as { uid?: unknown } | undefined)?.uid
  return [...verifier.sets.map((set) => set.uid), ...(typeof options.client === 'object' && typeof given === 'string' && given !== '' ? [given] : [])]
}
