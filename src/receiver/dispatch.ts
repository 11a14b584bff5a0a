/*
 * A verified result's way from its claim to its answer: claim the payment state, confirm it over the API, check it
 * against what the merchant asked, run the handlers, record them done. Plain async steps, top to bottom. At the end,
 * what a delivery tells the payment book besides its state (contract/store.ts): the result it handled, so that an
 * order the client did not record is recorded too and the buyer is known, and why its handlers failed.
 */
import { randomId } from '../core/crypto.js'
import type { Logger } from '../core/logger.js'
import { type PaymentState, STATE_RANK, toSen } from '../core/payment.js'
import { ReceiverError, thrownMessage } from '../core/result/errors.js'
import { signingSet, type VerifiedPayment } from '../core/result/verify.js'
import { failureText, isPaidFailing } from '../contract/book-query.js'
import { completedState } from '../contract/lease-ends.js'
import type { FailureNote, SeenResult } from '../contract/payment-book.js'
import type { Claim, ClaimRequest, Completion, ReceiverStore } from '../contract/store.js'
import { disagreement, mismatchError } from './book-check.js'
import { type Confirmer, confirmThroughApi } from './confirm.js'
import type { PaymentEvent, PaymentEventName, PaymentHandler, ReceiverResponse, ResultSource } from './events.js'
import { checkExpected, type ExpectHook } from './expectations.js'
import type { Hooks } from './hooks.js'
import { acknowledged, refused } from './responses.js'

const EVENT_NAMES: Record<PaymentState, PaymentEventName> = {
  pending: 'payment.pending',
  succeeded: 'payment.succeeded',
  failed: 'payment.failed',
}

// The lease's remaining time can be a minute; the holder is usually done long before, so ask again sooner.
const MAX_RETRY_AFTER_S = 5
/**
 * A delivery that finds its payment held by another process waits at most this long for the holder to finish (a
 * confirmation and the handlers usually take milliseconds), when the store can tell it (`awaitLeaseEnd`): the
 * holder's completion of its state, or its claim again, answers the duplicate 200, and nobody comes back.
 */
export const WAITS_FOR_HOLDER_MS = 2000
/**
 * Within that time, how many lease ends a delivery waits for: the payment's next holder may be its other state (a
 * B2B1 approval right behind its 99). Bounded, so that a store whose waits end at once is not asked in a loop.
 */
const MOST_WAITS = 3
/**
 * A store that stops answering (a paused server, a network partition) must not leave the sender and the buyer
 * with no answer at all: each of a delivery's store calls gets half the lease (as confirmation does), at most this
 * long, and past it the delivery is answered 503 store_unavailable like any store failure. Half the lease leaves a
 * transactional claim its lock wait (lockTimeoutMs) and a first use its migration with the default lease.
 */
const STORE_ANSWERS_WITHIN_MS = 10_000

/**
 * `call`, or a rejection once `withinMs` has passed without its answer (from `who`: the store unless said). The
 * rejection is a TimeoutError: where only an error's kind is logged (an API's error may echo the credentials, so the
 * sweeper logs no message of one), the kind still tells a call left unanswered from one that failed.
 */
export async function answeredWithin<T>(call: Promise<T>, withinMs: number, who = 'the store'): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`${who} did not answer within ${withinMs} ms`), { name: 'TimeoutError' })), withinMs)
  })
  try {
    return await Promise.race([call, late])
  } finally {
    clearTimeout(timer)
  }
}

/** What a store's awaitLeaseEnd may take past the wait it was given before the delivery stops waiting for it. */
const AWAIT_GRACE_MS = 250

/** How long a delivery waits for one store call, with a lease of `leaseMs` (the sweeper's too, with its lock's). */
export const storeWithinMs = (leaseMs: number): number => Math.max(1, Math.min(STORE_ANSWERS_WITHIN_MS, Math.floor(leaseMs / 2)))
/**
 * Without `awaitLeaseEnd`, a buyer's redirect that finds its payment held elsewhere asks once more after this long:
 * the service retries a callback told 409, but a browser shows the buyer an error page. Once only, never a poll.
 */
export const REDIRECT_ASKS_AGAIN_AFTER_MS = 250

export interface DispatchParts<TTransaction> {
  readonly store: ReceiverStore<TTransaction>
  readonly logger: Logger
  readonly leaseMs: number
  readonly hooks: Hooks<PaymentEvent<TTransaction>>
  readonly handlers: Readonly<Record<PaymentEventName, PaymentHandler<TTransaction>[]>>
  /** The API client that confirms a result, when the receiver confirms (undefined: signature only). */
  readonly confirmer: Confirmer | undefined
  /** Whether to read the payment book the store offers (`book: false` turns it off). */
  readonly useBook: boolean
  readonly handlerFailed: (response: ReceiverResponse, error: unknown) => void
  /** What the merchant asked for, by order_number (the `expect` hook). */
  readonly expect: ExpectHook | undefined
}

/** The refusals that mean the API could not confirm the result yet: a durable store keeps it to try again later. */
export const NOT_CONFIRMED_YET: ReadonlySet<string> = new Set(['confirmation_pending', 'confirmation_unavailable'])

export class Dispatcher<TTransaction> {
  /**
   * Deliveries of each exchange_number being handled in this process, and when their lease ends (performance.now()):
   * a second one waits for the first, until that end at most.
   */
  private readonly running = new Map<string, { readonly handling: Promise<unknown>; readonly leaseEnds: number }>()
  private ownerTag: string | undefined
  private owners = 0

  constructor(private readonly parts: DispatchParts<TTransaction>) {}

  /** How long a delivery waits for one store call (the inbox's too). */
  get storeWithinMs(): number {
    return storeWithinMs(this.parts.leaseMs)
  }

  /**
   * Claims the payment state, confirms it unless `confirmed` (it came from the API), runs its handlers and records
   * them done; says what to answer. Never throws. `waitHere`: a delivery of the same payment being handled in this
   * process is waited for (not when this one is handed on from it).
   */
  async dispatch(verified: VerifiedPayment, kind: ResultSource, confirmed: boolean, waitHere = true): Promise<ReceiverResponse> {
    const { store, logger, leaseMs } = this.parts
    // One random tag per receiver (drawn at the first delivery) and a counter. Owners must be unique across every
    // receiver sharing the store's server: a completion heard by owner answers a waiting duplicate (contract/lease-ends.ts).
    const request: ClaimRequest = {
      exchangeNumber: verified.exchangeNumber,
      state: verified.state,
      owner: `${(this.ownerTag ??= randomId())}:${++this.owners}`,
      leaseMs,
      orderNumber: verified.orderNumber,
      ...(verified.signerUid === undefined ? {} : { uid: verified.signerUid }),
    }
    const log = { exchangeNumber: verified.exchangeNumber, state: verified.state, delivery: kind }
    let claim: Claim<TTransaction>
    let askedAgain = false
    let waits = 0
    let waitEnds: number | undefined
    let claimAsked: number
    for (;;) {
      let claiming: Promise<Claim<TTransaction>> | undefined
      try {
        claimAsked = performance.now()
        claiming = store.claim(request)
        claim = await answeredWithin(claiming, this.storeWithinMs)
      } catch (error) {
        // A claim that lands after all is given back, so that its lease (and a transactional claim's connection) is
        // not held for nothing.
        claiming?.then((late) => late.outcome === 'claimed' && store.release(request)).catch(() => undefined)
        logger.error({ ...log, err: error }, 'the store failed to claim the payment')
        return refused(new ReceiverError('store_unavailable', 'the payment store is unavailable; retry later'), 'failed', verified, 5)
      }
      if (claim.outcome !== 'busy') break
      // Held by a delivery in this process: wait for it, then ask again. No longer than its lease, though: a handler
      // stuck for good (an upstream call with no time-out) must not hold the payment here for ever, when another
      // process would take it over once the lease ran out.
      const here = waitHere ? this.running.get(verified.exchangeNumber) : undefined
      if (here !== undefined) {
        // Past the end this process expected (a store's own leaseMs may be longer), the store's says how long is left.
        const left = here.leaseEnds - performance.now()
        await answeredWithin(here.handling, Math.max(1, left > 0 ? left : claim.retryAfterMs), 'the delivery holding it').catch(() => undefined)
        continue
      }
      // Held elsewhere: wait for the holder where the store can tell when it is done, and ask again, within the wait.
      if (store.awaitLeaseEnd !== undefined && waits < MOST_WAITS) {
        waitEnds ??= performance.now() + Math.min(claim.retryAfterMs, WAITS_FOR_HOLDER_MS)
        const left = Math.floor(waitEnds - performance.now())
        if (left > 0) {
          askedAgain = true
          waits++
          // A wait that fails, by throwing or by rejecting alike, is noted and ends: the claim asked again decides.
          let end: unknown
          try {
            // Bounded here too, as every store call is: a store whose wait never answers (a stalled subscription)
            // must not leave the sender and the buyer with no answer at all.
            end = await answeredWithin(store.awaitLeaseEnd(verified.exchangeNumber, left), left + AWAIT_GRACE_MS)
          } catch (error) {
            logger.warn({ ...log, err: error }, "the store failed to wait for the payment's holder; asking for the claim again")
          }
          // The holder completed this very state, as the store announced: the claim would answer duplicate.
          if (completedState(end) === verified.state) return acknowledged('duplicate', verified)
          continue
        }
      }
      // Otherwise a redirect asks once more after a pause, and a callback's sender comes back.
      if (!askedAgain && kind === 'redirect') {
        askedAgain = true
        await new Promise((resolve) => setTimeout(resolve, REDIRECT_ASKS_AGAIN_AFTER_MS))
        continue
      }
      const retryAfter = Math.min(MAX_RETRY_AFTER_S, Math.max(1, Math.ceil(claim.retryAfterMs / 1000)))
      return refused(new ReceiverError('in_progress', 'another delivery of this payment is being handled; retry later'), 'busy', verified, retryAfter)
    }
    if (claim.outcome === 'duplicate') return acknowledged('duplicate', verified)
    if (claim.outcome === 'stale') {
      logger.info({ ...log, currentState: claim.currentState }, 'ignored a payment result older than the one already handled')
      return acknowledged('stale', verified)
    }
    const running = { handling: this.handle(verified, kind, confirmed, request, claim, claimAsked + Math.floor(leaseMs / 2)), leaseEnds: performance.now() + leaseMs }
    this.running.set(verified.exchangeNumber, running)
    try {
      return await running.handling
    } finally {
      if (this.running.get(verified.exchangeNumber) === running) this.running.delete(verified.exchangeNumber)
    }
  }

  /**
   * The claim is held: confirm, check, run the handlers, complete (or release and say why not). The checks before
   * the handlers share one budget, until `checksEnd` (half the lease from the claim): bounded each on its own, a slow
   * API, store and hook took a delivery past its lease before its handlers ran, and a duplicate on another process
   * claimed the payment and ran them too. The handlers keep the other half.
   */
  private async handle(
    verified: VerifiedPayment,
    kind: ResultSource,
    confirmed: boolean,
    request: ClaimRequest,
    claim: Extract<Claim<TTransaction>, { outcome: 'claimed' }>,
    checksEnd: number,
  ): Promise<ReceiverResponse> {
    const { store, logger, confirmer } = this.parts
    const checksWithin = (bound: number) => Math.max(1, Math.min(bound, Math.floor(checksEnd - performance.now())))
    const log = { exchangeNumber: verified.exchangeNumber, state: verified.state, delivery: kind }
    // After a handler failure, the release counts it on the order in the book.
    const release = async <T>(answer: T, failure?: FailureNote): Promise<T> => {
      try {
        await answeredWithin(store.release(failure === undefined ? request : { ...request, failure }), this.storeWithinMs)
      } catch (error) {
        logger.error({ ...log, err: error }, 'the store failed to release the claim; it frees itself when the lease expires')
      }
      return answer
    }
    let handled = verified
    let paidBy = claim.paidBy
    if (!confirmed && confirmer !== undefined) {
      const known = await confirmThroughApi(confirmer, { set: signingSet(verified), credential: verified.credential, uid: verified.text('uid') }, verified.exchangeNumber, checksWithin(Math.floor(this.parts.leaseMs / 2)))
      if (known instanceof ReceiverError) {
        // The client's error (redacted of the credentials) for the merchant's eyes; the sender's answer names only its kind.
        const cause = known.cause === undefined ? {} : { err: known.cause }
        logger[known.code === 'confirmation_pending' ? 'warn' : 'error']({ ...log, ...cause, code: known.code }, `did not handle the result yet: ${known.message}`)
        return release(refused(known, 'failed', verified, 30))
      }
      known.credential = verified.credential
      known.signerUid = verified.signerUid
      known.takeUnsignedFrom(verified)
      if (STATE_RANK[known.state] < STATE_RANK[verified.state]) {
        // The API shows an earlier state: a genuine later one may be ahead of the API, or a renamed copy may claim one.
        // The state the API shows is handled now (so no copy holds a genuine 99 back); the claimed one waits.
        logger.warn({ ...log, currentState: known.state }, 'did not handle the result yet: the status API shows an earlier state; handling that one, and this one when the API shows it')
        await release(undefined)
        await this.dispatch(known, kind, true, false)
        return refused(new ReceiverError('confirmation_pending', 'the status API does not show this state yet; retry later'), 'failed', verified, 30)
      }
      // The API's record decides: a later state, or values a renamed copy put elsewhere, are handled as the API has them.
      if (known.state !== verified.state || known.orderNumber !== verified.orderNumber) {
        if (known.state !== verified.state) logger.info({ ...log, currentState: known.state }, 'the status API shows a later state; handling that instead')
        else logger.warn(log, "the delivered order_number is not the API's for this exchange_number; handling the API's record")
        return release(undefined).then(() => this.dispatch(known, kind, true, false))
      }
      handled = known
      // Another payment of the order may have been paid while the API was asked: the claim's answer is older.
      if (handled.state !== 'succeeded' && !paidBy && store.paidBy !== undefined) {
        try {
          paidBy = await answeredWithin(store.paidBy(request), checksWithin(this.storeWithinMs))
        } catch (error) {
          logger.error({ ...log, err: error }, 'the store failed to say whether the order was paid meanwhile')
          return release(refused(new ReceiverError('store_unavailable', 'the payment store is unavailable; retry later'), 'failed', verified, 5))
        }
      }
    }
    const name = EVENT_NAMES[handled.state]
    // An order paid stays paid: another attempt's failure or approval wait changes nothing the merchant must act on.
    if (handled.state !== 'succeeded' && paidBy) {
      logger.info({ ...log, paidBy }, `the order was paid already (exchange_number ${paidBy}); this ${handled.state} attempt runs no handler`)
      return this.completed({ ...request, seen: seenOf(handled) }, verified, log, acknowledged('stale', handled), claim.transaction === undefined ? request : undefined)
    }
    // Paid, but not fulfilled yet: a success of the order passed every check and its handlers failed (the book's
    // paid_failing). Its failure or 99 runs no handler either, and is not recorded: settled, it would close the order
    // as failed, and the sweeper would never bring the success again. Once the success is handled, a redelivery of
    // this one finds the order's paid mark (above).
    if (handled.state !== 'succeeded' && this.parts.useBook && claim.booked !== undefined && isPaidFailing(claim.booked)) {
      logger.info(log, `the order was paid already and its success's handlers are to run again; this ${handled.state} attempt runs no handler`)
      return release(acknowledged('stale', handled))
    }
    if (this.parts.expect !== undefined) {
      const error = await checkExpected(this.parts.expect, handled, checksWithin(this.storeWithinMs))
      if (error !== undefined) {
        logger[error.status >= 500 ? 'error' : 'warn']({ ...log, code: error.code, ...(error.cause === undefined ? {} : { err: error.cause }) }, `did not handle the result: ${error.message}`)
        return release(refused(error, error.status >= 500 ? 'failed' : 'rejected', verified, error.status === 503 ? 5 : undefined))
      }
    }
    const booked = this.parts.useBook ? claim.booked : undefined
    const problem = booked === undefined ? undefined : disagreement(booked, handled)
    if (problem !== undefined) {
      logger.warn({ ...log, code: 'result_mismatch' }, `did not handle the result: ${problem}`)
      return release(refused(mismatchError(problem), 'rejected', verified))
    }
    const handlers = this.parts.hooks.handlersFor(this.parts.handlers[name], name, { log })
    if (handlers.length === 0) {
      const error = new ReceiverError('no_handler', `no handler is registered for ${name}; the result was not recorded, retry later`)
      return release(refused(error, 'failed', handled))
    }
    const event = handlerEvent<TTransaction>(handled, verified, name, kind, claim, booked, confirmed || confirmer !== undefined)
    try {
      for (const handler of handlers) await handler(event)
    } catch (error) {
      const response = refused(new ReceiverError('handler_failed', `a ${name} handler failed; the claim was released so the next delivery runs it again`), 'failed', handled)
      // Whatever was thrown, the claim is released: reporting the failure must not keep it held for the lease.
      try {
        logger.error({ ...log, err: error }, `a ${name} handler threw; the payment will be handled again on redelivery`)
        this.parts.hooks.handlerFailed(error, event)
        this.parts.handlerFailed(response, error)
      } catch (reporting) {
        logger.error({ ...log, err: reporting }, `reporting a failed ${name} handler failed`)
      }
      return release(response, failureOf(error, handled, verified))
    }
    logger.info(log, `handled ${name}`)
    return this.completed({ ...request, seen: seenOf(handled) }, verified, log, acknowledged('processed', handled), claim.transaction === undefined ? request : undefined)
  }

  /**
   * Records the state handled (settling the order, or recording it from the result seen), then answers `answer`.
   * `again`: the claim, when it holds no transaction. Its handlers outran the lease and the store refused the
   * completion: when nobody took the payment over meanwhile, that claim is granted to the same owner again and the
   * completion follows, or the sender's redelivery would run the handlers a second time (a store whose lease ends
   * with its record, Redis for a first state, has nothing left to complete by). A transaction ended with its lease
   * rolled the handlers' writes back: completing then would record a state whose effects are gone.
   */
  private async completed(completion: Completion, verified: VerifiedPayment, log: object, answer: ReceiverResponse, again?: ClaimRequest): Promise<ReceiverResponse> {
    let done: boolean
    try {
      done = await answeredWithin(this.parts.store.complete(completion), this.storeWithinMs)
      if (!done && again !== undefined) done = await this.completedAgain(again, completion, log)
    } catch (error) {
      this.parts.logger.error({ ...log, err: error }, 'handlers ran but the store failed to record it; a redelivery will run them again')
      return refused(new ReceiverError('store_unavailable', 'the payment store is unavailable; retry later'), 'failed', verified, 5)
    }
    if (done) return answer
    this.parts.logger.error(log, `handlers ran longer than leaseMs (${this.parts.leaseMs} ms) and another delivery took the payment over`)
    return refused(new ReceiverError('lease_lost', 'the claim expired while the handlers ran'), 'failed', verified)
  }

  /**
   * The claim asked again as the same owner, and the completion after it, for handlers that outran the lease. A
   * claim granted but not completed (or answered late) is released at once: held, it would keep the sender's
   * redelivery waiting for a whole lease.
   */
  private async completedAgain(again: ClaimRequest, completion: Completion, log: object): Promise<boolean> {
    const { store, logger } = this.parts
    const claiming = store.claim(again)
    const releaseIfClaimed = () => claiming.then((late) => late.outcome === 'claimed' && store.release(again)).catch(() => undefined)
    let claim: Claim<TTransaction>
    try {
      claim = await answeredWithin(claiming, this.storeWithinMs)
    } catch (error) {
      void releaseIfClaimed()
      throw error
    }
    if (claim.outcome !== 'claimed') return false
    const done = await answeredWithin(store.complete(completion), this.storeWithinMs)
    if (!done) void releaseIfClaimed()
    else logger.warn(log, `handlers ran longer than leaseMs (${this.parts.leaseMs} ms); no other delivery took the payment over, so their completion was recorded`)
    return done
  }
}

/** The event handlers get: the payment as handled (the API's record when confirmed), and how it came. */
function handlerEvent<TTransaction>(
  handled: VerifiedPayment,
  delivered: VerifiedPayment,
  name: PaymentEventName,
  kind: ResultSource,
  claim: Extract<Claim<TTransaction>, { outcome: 'claimed' }>,
  booked: Extract<Claim<TTransaction>, { outcome: 'claimed' }>['booked'],
  confirmed: boolean,
): PaymentEvent<TTransaction> {
  const payment = handled.payment
  const fields = handled.fields
  const unsignedQuery = delivered.unsignedQuery
  return {
    id: `${handled.exchangeNumber}:${handled.state}`,
    name,
    state: handled.state,
    confirmed,
    previousState: claim.previousState,
    delivery: kind,
    payment,
    fields,
    rendering: delivered.rendering,
    unsignedQuery,
    credential: delivered.credential,
    transaction: claim.transaction,
    booked,
  } as PaymentEvent<TTransaction>
}

/** Shorter values are left in a message: taking out every "00" or "MY" would leave no sentence to read. */
const SHORTEST_HIDDEN = 3
const HIDDEN = '[field value]'

const present = (text: string | undefined) => (text === undefined || text === '' ? null : text)

/**
 * The result handled as the book keeps it (the API record's values when it was confirmed). The uid is the credential
 * set the receiver verified or confirmed it with, never the message's uid field read by name.
 */
export function seenOf(handled: VerifiedPayment): SeenResult {
  const amount = present(handled.text('transaction_amount'))
  // As the typed payment has them, the credentials' own values hidden: the buyer can type the Auth Token a result
  // echoed to them as their name or e-mail, and the book shows these on the console's pages.
  const { buyer } = handled.payment
  return {
    uid: handled.signerUid ?? handled.credential?.uid ?? null,
    amountSen: amount === null ? null : toSen(amount),
    buyerEmail: buyer.email,
    buyerName: buyer.name,
  }
}

/**
 * A handler's failure for the book: its error's name and message, on one line and cut short, with every value of the
 * result handled and of the one delivered taken out (a handler's message may quote the buyer's name or e-mail). The
 * handlers are given no secret to echo: their event names the credential set, never its tokens.
 */
export function failureOf(error: unknown, handled: VerifiedPayment, delivered: VerifiedPayment): FailureNote {
  let message = thrownMessage(error, true)
  const values = [handled, delivered].flatMap((result) => result.signedFields().map((field) => field.text))
  for (const value of new Set(values.filter((text) => text.length >= SHORTEST_HIDDEN).sort((a, b) => b.length - a.length)))
    message = message.split(value).join(HIDDEN)
  return { message: failureText(message), seen: seenOf(handled) }
}
