/*
 * One result's path through the receiver, top to bottom: read the body, parse it, verify the checksum (a pure
 * function of the bytes and the credentials), check what the receiver is told to check, then queue it (inbox mode)
 * or dispatch it (claim, confirm, handlers, complete); note it on the timeline and in telemetry; answer.
 */
import type { Logger } from '../core/logger.js'
import { loadBody } from '../core/result/body.js'
import { ReceiverError, withoutTokenForms } from '../core/result/errors.js'
import { authTokenTried, type Parsed, secretsTried, signingSet, unpinnedReasonOf, type Verifier } from '../core/result/verify.js'
import { paramsWithoutSecrets, quotable, refusalSecrets } from '../core/result/without-secrets.js'
import { trustedPayment, type VerifiedPayment } from '../core/result/verified.js'
import type { FieldInput } from '../core/values.js'
import type { AcceptingInbox } from '../inbox/inbox.js'
import { type Confirmer, confirmThroughApi, ofResult, otherPayment } from './confirm.js'
import { answeredWithin, type Dispatcher, failureOf, NOT_CONFIRMED_YET } from './dispatch.js'
import type { Delivery, ReceiverResponse, ResultSource } from './events.js'
import { RefusalLog } from './refusals.js'
import { expired, firstRecheck, linkSigner, ofLinkedOrder, ownQuery, type RecheckAsked, recheckAsked, recheckLink } from './recheck.js'
import { acknowledged, diagnosisDetails, type Recheck, refused, withRecheck } from './responses.js'
import type { Telemetry } from './telemetry.js'
import { deliveryEntries, type TimelineRecorder } from './timeline.js'

export interface ReceiveParts {
  readonly verifier: Verifier
  readonly dispatcher: Dispatcher<unknown>
  /** The API client of a receiver that confirms results; undefined for a signature-only one. */
  readonly confirmer: Confirmer | undefined
  /** How long a confirmation may wait for the API's answer. */
  readonly confirmWithinMs: number
  readonly requireFields: readonly string[]
  /** Inbox mode: every verified result is written here and answered; workers dispatch it. */
  readonly inbox: AcceptingInbox | undefined
  /** A durable store's inbox, where a result the API cannot confirm yet is kept to be confirmed later. */
  readonly deferTo: AcceptingInbox | undefined
  readonly timeline: TimelineRecorder
  readonly refusals: RefusalLog
  readonly telemetry: Telemetry
  readonly logger: Logger
  /** What a handler threw for this response, when one did: why it failed goes on the timeline. */
  readonly thrown?: (response: ReceiverResponse) => unknown
}

/** Why a handler failed, as the book keeps it, for the timeline; undefined when none did. */
function failureText(parts: ReceiveParts, response: ReceiverResponse, verified: VerifiedPayment | undefined): string | undefined {
  const thrown = parts.thrown?.(response)
  return thrown === undefined || verified === undefined ? undefined : failureOf(thrown, verified, verified).message
}

// What an unverified message may put in the refusal log: printable ASCII, no longer than the service's numbers.
const PLAIN_NUMBER = /^[\x20-\x7e]{1,64}$/

/**
 * The numbers a refused delivery claims, never trusted (shown with `verified: false`), and never a token: a result
 * may echo the Auth Token, and names are not signed, so the buyer can resend theirs with the token's value under
 * `order_number`; the console's refusals page and the payment's timeline show what was claimed. The tokens are the
 * configured sets', and those of the keys the message was checked with (a resolver's set, asked once already). A
 * receiver may know no Auth Token for the message (only Checksum Tokens given, a uid the resolver does not know): a
 * number holding the token's form is then left out as a refusal's message leaves out such a name (quotedName).
 */
function claimedNumbers(verifier: Verifier, parsed: Parsed | undefined, error: unknown): { exchangeNumber: string | null; orderNumber: string | null } {
  const secrets = secretsOf(verifier, error)
  // Known, the Auth Token is left out by its value: numbers of its form (a ULID order number) stay searchable.
  const authTokenKnown = verifier.sets.some((set) => (set.authToken ?? '') !== '') || authTokenTried(error)
  const claimed = (name: string): string | null => {
    const value = parsed?.fields.values[parsed.fields.names.indexOf(name)]
    const plain = typeof value === 'string' && PLAIN_NUMBER.test(value) && (authTokenKnown || withoutTokenForms(value) === value)
    return plain && !secrets.some((secret) => value.includes(secret)) ? value : null
  }
  return { exchangeNumber: claimed('exchange_number'), orderNumber: claimed('order_number') }
}

/** The tokens a refusal must never quote: the configured sets', and those of the keys the message was checked with. */
function secretsOf(verifier: Verifier, error: unknown): string[] {
  return refusalSecrets(verifier.sets, secretsTried(error))
}

/**
 * A delivery from the service (callback or redirect). Never throws: whatever escapes the steps (a platform API
 * missing, a bug) is a fault of ours, answered 500 `internal_error` and logged, never filed as the sender's.
 */
export async function receive(parts: ReceiveParts, delivery: Delivery): Promise<ReceiverResponse> {
  const receivedAt = Date.now()
  let attempt = ''
  try {
    attempt = parts.timeline.nextAttempt()
    return await receiveAttempt(parts, delivery, receivedAt, attempt)
  } catch (error) {
    // Read with care: a delivery that is no object (receiver.handle(undefined)) must be answered too, never thrown.
    const kind = (delivery as Partial<Delivery> | null | undefined)?.kind === 'redirect' ? 'redirect' : 'callback'
    return refusal(parts, error, kind, { receivedAt, attempt, exchangeNumber: null, orderNumber: null })
  }
}

async function receiveAttempt(parts: ReceiveParts, delivery: Delivery, receivedAt: number, attempt: string): Promise<ReceiverResponse> {
  const { verifier, telemetry, timeline } = parts
  let verified: VerifiedPayment | undefined
  return telemetry.traced(
    delivery.kind,
    async () => {
      let parsed: Parsed | undefined
      let asked: RecheckAsked | undefined
      try {
        const raw = await loadBody(delivery, verifier.maxBodyBytes, verifier.bodyTimeoutMs)
        asked = delivery.kind === 'redirect' && parts.confirmer !== undefined ? recheckAsked(raw) : undefined
        if (asked === undefined) {
          parsed = verifier.parse(raw)
          verified = await verifier.check(parsed)
        }
      } catch (error) {
        return refusal(parts, error, delivery.kind, { receivedAt, attempt, ...claimedNumbers(verifier, parsed, error) })
      }
      if (asked !== undefined) return rechecked(parts, asked, receivedAt, attempt)
      if (verified === undefined) throw new Error('unreachable: a delivery neither verified nor refused')
      const verifiedAt = Date.now()
      const response = await accepted(parts, verified, delivery.kind)
      if (timeline.enabled) timeline.record(deliveryEntries({ source: delivery.kind, attempt, receivedAt, verifiedAt, answeredAt: Date.now(), payment: response.payment ?? verified, response, failure: failureText(parts, response, verified) }))
      return response
    },
    () => verified,
  )
}

/**
 * A payment record read over the authenticated API (reconciliation, the sweeper): checked, classified,
 * deduplicated and handled like a delivery, with no checksum. `uid`: the credential set whose client read it.
 */
export async function receiveTrusted(parts: ReceiveParts, fields: Readonly<Record<string, FieldInput>>, uid?: string): Promise<ReceiverResponse> {
  const { telemetry, timeline } = parts
  const receivedAt = Date.now()
  const attempt = timeline.nextAttempt()
  let verified: VerifiedPayment | undefined
  return telemetry.traced(
    'reconcile',
    async () => {
      try {
        verified = trustedPayment(fields)
      } catch (error) {
        return refusal(parts, error, 'reconcile', { receivedAt, attempt, exchangeNumber: null, orderNumber: null })
      }
      const named = verified.text('interface_uid')
      // Filed as a delivery of it would be (with one bare Checksum Token: under no uid), so that the order's paid
      // mark is the same one whichever way its results arrive.
      verified.signerUid = parts.verifier.signerFor(uid ?? (named === undefined || named === '' ? undefined : named))
      // What the buyer typed is in the record as in a result: the Auth Token, when they typed it, is hidden alike.
      const set = await parts.verifier.setFor(uid ?? (named === '' ? undefined : named))
      verified.hideValues(refusalSecrets([...parts.verifier.sets, ...(set === undefined ? [] : [set])], []))
      const response = parts.inbox === undefined ? await parts.dispatcher.dispatch(verified, 'reconcile', true) : await queued(parts, parts.inbox, verified, 'reconcile')
      if (timeline.enabled) timeline.record(deliveryEntries({ source: 'reconcile', attempt, receivedAt, verifiedAt: receivedAt, answeredAt: Date.now(), payment: response.payment ?? verified, response, failure: failureText(parts, response, verified) }))
      return response
    },
    () => verified,
  )
}

/** What follows a matched checksum: the receiver's own checks, then the inbox or the dispatch. */
async function accepted(parts: ReceiveParts, verified: VerifiedPayment, kind: Delivery['kind']): Promise<ReceiverResponse> {
  const { logger } = parts
  const log = { exchangeNumber: verified.exchangeNumber, state: verified.state, delivery: kind }
  if (parts.confirmer === undefined) {
    const reason = unpinnedReasonOf(verified)
    if (reason !== undefined) {
      const error = new ReceiverError('needs_confirmation', `${reason}; a receiver that confirms results over the service's API would decide it`)
      logger.warn({ ...log, code: error.code }, `refused a delivery: ${error.message}`)
      return refused(error, 'rejected', verified)
    }
  }
  const missing = parts.requireFields.filter((name) => !verified.has(name))
  if (missing.length > 0) {
    const error = new ReceiverError('invalid_fields', `the result lacks ${missing.join(', ')}, which requireFields asks for`, { fields: missing })
    logger.warn({ ...log, code: error.code }, `refused a delivery: ${error.message}`)
    return refused(error, 'rejected', verified)
  }
  if (parts.confirmer === undefined && !verified.has('transaction_amount'))
    logger.warn(
      log,
      'a verified result carries no transaction_amount and was not confirmed over the API: confirm the payment ' +
        "(client.paymentStatus, or a receiver with credentials) before fulfilling, or set requireFields: ['transaction_amount']",
    )
  // A redirect not handled yet gets a page that checks again (a receiver that confirms results only: see recheck.ts).
  const recheck = parts.confirmer !== undefined && kind === 'redirect' ? () => firstRecheck(parts.verifier, verified, uidOf(verified)) : undefined
  if (parts.inbox !== undefined) return withRecheck(await queued(parts, parts.inbox, verified, kind), await recheck?.())
  const response = await parts.dispatcher.dispatch(verified, kind, false)
  // The API cannot confirm it yet: a durable store keeps it, to be confirmed later with backoff.
  if (parts.deferTo !== undefined && NOT_CONFIRMED_YET.has(response.error?.code ?? '')) return withRecheck(await queued(parts, parts.deferTo, verified, kind), await recheck?.())
  if (recheck !== undefined && (response.outcome === 'duplicate' || response.outcome === 'stale') && unpinnedReasonOf(verified) !== undefined)
    return shownAsTheApiHasIt(parts, verified, recheck)
  // The API's record of another payment (its exchange_number typed by the buyer and renamed) was handled as that
  // payment's own; the buyer's page shows nothing of it.
  if (kind === 'redirect' && response.payment !== undefined && !ofResult(verified, response.payment.orderNumber)) {
    logger.warn({ ...log, code: 'result_mismatch' }, "a redirect's exchange_number named a payment of another order than its result carries (a renamed copy); the buyer's page shows nothing of it")
    return refused(otherPayment(), 'rejected', verified)
  }
  return NOT_HANDLED_YET.has(response.error?.code ?? '') ? withRecheck(response, await recheck?.()) : response
}

/**
 * A redirect of a state handled already is not confirmed again, but the buyer's page shows its payment: when a
 * renaming could make it read another order or amount (a copy the buyer made), the API's record is handled instead,
 * as a check-again link does (a later state the API shows runs its handlers first), or the page checks again while
 * the API cannot be asked.
 */
async function shownAsTheApiHasIt(parts: ReceiveParts, verified: VerifiedPayment, recheck: () => Promise<Recheck>): Promise<ReceiverResponse> {
  const confirmer = parts.confirmer as Confirmer
  const known = await confirmThroughApi(confirmer, { set: signingSet(verified), credential: verified.credential, uid: verified.text('uid') }, verified.exchangeNumber, parts.confirmWithinMs)
  if (known instanceof ReceiverError) return withRecheck(refused(known, 'failed', undefined, 30), await recheck())
  if (!ofResult(verified, known.orderNumber)) return refused(otherPayment(), 'rejected', verified)
  known.credential = verified.credential
  known.signerUid = verified.signerUid
  known.takeUnsignedFrom(verified)
  return parts.dispatcher.dispatch(known, 'redirect', true)
}

/** The uid a result's check-again link names: its credential set's, else the one it carried. */
function uidOf(verified: VerifiedPayment): string {
  return signingSet(verified)?.uid ?? verified.signerUid ?? verified.text('uid') ?? ''
}

/**
 * The buyer's browser following a check-again link: the link's signature checked, the payment asked of the API
 * and handled as the API shows it, like the sweeper's lookups; the page again while it is not handled yet.
 */
async function rechecked(parts: ReceiveParts, asked: RecheckAsked, receivedAt: number, attempt: string): Promise<ReceiverResponse> {
  const signer = await linkSigner(parts.verifier, asked)
  if (signer === undefined || parts.confirmer === undefined) {
    const error = new ReceiverError('checksum_mismatch', "the check-again link's signature does not match: it is not a link this receiver made")
    return refusal(parts, error, 'redirect', { receivedAt, attempt, exchangeNumber: null, orderNumber: null })
  }
  if (expired(asked)) {
    const error = new ReceiverError('link_expired', 'the check-again link has expired; the order is updated once the payment is confirmed')
    return refusal(parts, error, 'redirect', { receivedAt, attempt, exchangeNumber: null, orderNumber: null })
  }
  const own = paramsWithoutSecrets(asked.own, signer.set === undefined ? [signer.token] : refusalSecrets([signer.set], []))
  const again = () => recheckLink(parts.verifier, asked.exchangeNumber, asked.uid, own, asked.attempt + 1, asked.orderTag, asked.issuedAt)
  const known = await confirmThroughApi(parts.confirmer, { set: signer.set, credential: signer.credential, uid: asked.uid }, asked.exchangeNumber, parts.confirmWithinMs)
  if (known instanceof ReceiverError) {
    parts.logger.warn({ exchangeNumber: asked.exchangeNumber, delivery: 'redirect', code: known.code }, `a check-again link found the result not confirmed yet: ${known.message}`)
    return withRecheck(refused(known, 'failed', undefined, 30), await again())
  }
  // The link names the payment by the value its result had as exchange_number: the API's record must be of the
  // result's order, or that value was another payment's, renamed (recordOfResult, for a delivered result).
  if (!(await ofLinkedOrder(parts.verifier, asked, signer, known.orderNumber))) {
    parts.logger.warn({ exchangeNumber: asked.exchangeNumber, delivery: 'redirect', code: 'result_mismatch' }, "a check-again link was refused: the status API's record of its exchange_number is of another order than the result's it was made for")
    return refused(otherPayment(), 'rejected')
  }
  known.credential = signer.credential
  known.signerUid = signer.signer
  // Unsigned, as they were on the redirect: handlers get them as its unsignedQuery, whichever delivery handles it.
  known.unsignedSource = ownQuery(own)
  const verifiedAt = Date.now()
  const response = await parts.dispatcher.dispatch(known, 'redirect', true)
  if (parts.timeline.enabled) parts.timeline.record(deliveryEntries({ source: 'redirect', attempt, receivedAt, verifiedAt, answeredAt: Date.now(), payment: response.payment ?? known, response }))
  return NOT_HANDLED_YET.has(response.error?.code ?? '') ? withRecheck(response, await again()) : response
}

/** Answers that mean a verified result may yet be handled: a redirect's page checks again (http/answers.ts). */
const NOT_HANDLED_YET: ReadonlySet<string> = new Set([...NOT_CONFIRMED_YET, 'in_progress', 'store_unavailable', 'expect_failed'])

/** Writes the result to an inbox; answers 200 `queued`, or 503 when the store cannot take it. */
async function queued(parts: ReceiveParts, inbox: AcceptingInbox, verified: VerifiedPayment, kind: ResultSource): Promise<ReceiverResponse> {
  try {
    await answeredWithin(inbox.accept(verified, kind), parts.dispatcher.storeWithinMs)
  } catch (error) {
    parts.logger.error({ exchangeNumber: verified.exchangeNumber, state: verified.state, delivery: kind, err: error }, 'the inbox could not be written')
    return refused(new ReceiverError('store_unavailable', 'the payment store is unavailable; retry later'), 'failed', verified, 5)
  }
  return acknowledged('queued', verified)
}

interface RefusedDelivery {
  readonly receivedAt: number
  readonly attempt: string
  readonly exchangeNumber: string | null
  readonly orderNumber: string | null
}

/** A delivery turned away before it was accepted: logged, counted, kept among the latest refusals, answered. */
function refusal(parts: ReceiveParts, error: unknown, source: ResultSource, delivery: RefusedDelivery): ReceiverResponse {
  const { logger } = parts
  let known: ReceiverError
  if (error instanceof ReceiverError) {
    known = quotable(error, secretsOf(parts.verifier, error))
    const level = known.status >= 500 ? 'error' : 'warn'
    const summary = known.diagnosis === undefined ? '' : `. Diagnosis: ${known.diagnosis.summary}`
    logger[level]({ code: known.code, delivery: source, ...(known.cause === undefined ? {} : { err: known.cause }), ...diagnosisDetails(known) }, `refused a delivery: ${known.message}${summary}`)
  } else {
    logger.error({ err: error, delivery: source }, 'unexpected error while handling a delivery')
    known = new ReceiverError('internal_error', 'unexpected error while handling a delivery')
  }
  const response = refused(known, known.code === 'internal_error' ? 'failed' : 'rejected')
  const message = known.diagnosis === undefined ? known.message : `${known.message}. Diagnosis: ${known.diagnosis.summary}`
  parts.refusals.add({
    receivedAt: new Date(delivery.receivedAt),
    answeredAt: new Date(Date.now()),
    source,
    code: known.code,
    status: known.status,
    message,
    exchangeNumber: delivery.exchangeNumber,
    orderNumber: delivery.orderNumber,
    attempt: delivery.attempt,
    ...(known.diagnosis === undefined ? {} : { diagnosis: known.diagnosis }),
  })
  return response
}

