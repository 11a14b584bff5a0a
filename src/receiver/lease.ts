/*
 * What the steps of a delivery's dispatch share (dispatch.ts, claiming.ts): its lease, and a step's result, which
 * is there at once or once the step had to wait.
 */
import type { PaymentState } from '../core/payment.js'
import { ReceiverError } from '../core/result/errors.js'
import type { VerifiedPayment } from '../core/result/verify.js'
import { detached } from '../contract/detached.js'
import type { OwningClaimRequest } from '../contract/local-claims.js'
import type { BookedPayment } from '../contract/payment-book.js'
import type { ReceiverResponse, ResultSource } from './events.js'
import { refused } from './responses.js'

/** A step's result: at once, or once it had to wait. */
export type Step<T> = T | Promise<T>

/** One claim's lease, and what the steps after the claim learn of the payment: one object per delivery. */
export class Lease<TTransaction> implements OwningClaimRequest {
  exchangeNumber: string
  readonly state: PaymentState
  previousState: PaymentState | null = null
  transaction: TTransaction | undefined = undefined
  booked: BookedPayment | undefined = undefined
  /** Set while handlers run in this process for a store that cannot tell its waiters itself. */
  running: InFlight | undefined = undefined

  constructor(
    readonly verified: VerifiedPayment,
    readonly kind: ResultSource,
    readonly owner: string,
    readonly leaseMs: number,
  ) {
    this.exchangeNumber = verified.exchangeNumber
    this.state = verified.state
  }

  /**
   * A store in this process keeps the number as a string of its own, made only when it takes the claim
   * (contract/local-claims.ts); the completion and the timeline then hand it that very string.
   */
  ownExchangeNumber(): string {
    return (this.exchangeNumber = this.verified.keepExchangeNumber(detached))
  }

  get log(): { exchangeNumber: string; state: PaymentState; delivery: ResultSource } {
    return { exchangeNumber: this.exchangeNumber, state: this.state, delivery: this.kind }
  }
}

/** A delivery whose handlers run in this process, for its duplicates to wait on. */
export interface InFlight {
  waiting?: Promise<void>
  wake?: () => void
}

/** The store failed: 503, for the sender to retry. */
export function unavailable(verified: VerifiedPayment, retryAfter?: string): ReceiverResponse {
  const response = refused(new ReceiverError('store_unavailable', 'the payment store is unavailable; retry later'), 'failed', verified)
  if (retryAfter !== undefined) response.headers['retry-after'] = retryAfter
  return response
}
