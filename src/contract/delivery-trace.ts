import { detached } from './detached.js'
import type { PaymentState } from '../core/payment.js'
import { offerOwnPath, ownPath } from './own-path.js'
import type { TimelineEntry, TimelineEvent, TimelineSource } from './timeline.js'

/**
 * One delivery's part of the timeline as one plain record: `received`, then `verified` (when it was), then the
 * event that ended it. The memory store keeps this and makes the entries when the timeline is read, which is
 * rare: three entries and three Dates per delivery, kept for the retention, were most of the timeline's cost
 * (in allocation and in what the GC has to walk). Other stores get the entries.
 * Kept lean for the same reason: the attempt is its recorder's tag and a counter, joined when read, and the
 * later two times are offsets from the first, small integers where a timestamp is a boxed number of its own.
 */
export class DeliveryTrace {
  exchangeNumber: string | null
  orderNumber: string | null
  /** Milliseconds from receipt to verification (0 for a refused delivery) and to the answer. */
  readonly verifiedAfter: number
  readonly answeredAfter: number

  constructor(
    exchangeNumber: string | null,
    orderNumber: string | null,
    readonly state: PaymentState | null,
    readonly source: TimelineSource,
    readonly attemptTag: string,
    readonly attemptNumber: number,
    readonly verified: boolean,
    readonly receivedAt: number,
    verifiedAt: number,
    answeredAt: number,
    readonly closing: TimelineEvent,
    readonly code: string | null,
    readonly status: number,
    readonly message: string | null,
  ) {
    this.exchangeNumber = exchangeNumber
    this.orderNumber = orderNumber
    // A refused delivery has no verification time: 0, not an offset from the epoch that would need boxing.
    this.verifiedAfter = verified ? verifiedAt - receivedAt : 0
    this.answeredAfter = answeredAt - receivedAt
  }

  /**
   * Its numbers as strings of their own, no longer views of the body they were read from, which they would keep
   * alive (core/detached.ts). The receiver's trace of a verified delivery holds its order number so already.
   */
  keepNumbers(): void {
    if (this.exchangeNumber !== null) this.exchangeNumber = detached(this.exchangeNumber)
    if (this.orderNumber !== null) this.orderNumber = detached(this.orderNumber)
  }

  /** How many entries it stands for. */
  get size(): number {
    return this.verified ? 3 : 2
  }

  get attempt(): string {
    return `${this.attemptTag}-${this.attemptNumber}`
  }

  get answeredAt(): number {
    return this.receivedAt + this.answeredAfter
  }

  entries(): TimelineEntry[] {
    const attempt = this.attempt
    const entries = [this.entry(this.receivedAt, 'received', attempt, null, null, null)]
    if (this.verified) entries.push(this.entry(this.receivedAt + this.verifiedAfter, 'verified', attempt, null, null, null))
    entries.push(this.entry(this.answeredAt, this.closing, attempt, this.code, this.status, this.message))
    return entries
  }

  // Literals, not spreads of a common base: V8 copies spread objects on a slow path, many times slower.
  private entry(at: number, event: TimelineEvent, attempt: string, code: string | null, status: number | null, message: string | null): TimelineEntry {
    return {
      at: new Date(at),
      event,
      exchangeNumber: this.exchangeNumber,
      orderNumber: this.orderNumber,
      state: this.state,
      source: this.source,
      attempt,
      verified: this.verified,
      code,
      status,
      message,
    }
  }
}

/**
 * Where a store in this process (the memory store) offers to take DeliveryTraces whole (see own-path.ts), in place
 * of appendTimeline: at once, with no promise, so that the receiver's write after each answer costs no promise
 * chain. Throws what it cannot keep.
 */
const APPEND_TRACES = Symbol('fpx-collect.appendTraces')
const STANDS_FOR = ['appendTimeline']

export type TraceAppender = (items: readonly (TimelineEntry | DeliveryTrace)[]) => void

/** Gives `store` the trace path for as long as its appendTimeline is the one it has now. */
export function acceptTraces<T extends object>(store: T, appendTraces: TraceAppender): T {
  return offerOwnPath(store, APPEND_TRACES, STANDS_FOR, appendTraces)
}

/** The store's trace path, if it has one and still uses the appendTimeline it came with. */
export function traceAppender(store: object): TraceAppender | undefined {
  return ownPath<TraceAppender>(store, APPEND_TRACES, STANDS_FOR)
}
