import type { PaymentState } from '../core/payment.js'
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
  private readonly verifiedAfter: number
  private readonly answeredAfter: number

  constructor(
    readonly exchangeNumber: string | null,
    readonly orderNumber: string | null,
    readonly state: PaymentState | null,
    readonly source: TimelineSource,
    private readonly attemptTag: string,
    private readonly attemptNumber: number,
    readonly verified: boolean,
    readonly receivedAt: number,
    verifiedAt: number,
    answeredAt: number,
    readonly closing: TimelineEvent,
    readonly code: string | null,
    readonly status: number,
    readonly message: string | null,
  ) {
    this.verifiedAfter = verifiedAt - receivedAt
    this.answeredAfter = answeredAt - receivedAt
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
 * A store that keeps DeliveryTraces as they are has, under this key, the appendTimeline it stands in for and a
 * method taking entries and traces in the order they happened. Internal: a Symbol (no part of the store interface
 * merchants implement), not enumerable (a copy made with `{ ...store }` has none), and used only while the store's
 * appendTimeline is still that one: a wrapper that replaces appendTimeline gets entries, as it always did.
 */
export const APPEND_TRACES = Symbol('fpx-collect.appendTraces')

export type TraceAppender = (items: readonly (TimelineEntry | DeliveryTrace)[]) => Promise<void>

interface TraceSupport {
  readonly appendTimeline: unknown
  readonly appendTraces: TraceAppender
}

/** Gives `store` the trace path for as long as its appendTimeline is `appendTimeline`. */
export function acceptTraces<T extends object>(store: T & { appendTimeline?: unknown }, appendTraces: TraceAppender): T {
  const support: TraceSupport = { appendTimeline: store.appendTimeline, appendTraces }
  Object.defineProperty(store, APPEND_TRACES, { value: support, enumerable: false })
  return store
}

/** The store's trace path, if it has one and still uses the appendTimeline it came with. */
export function traceAppender(store: { appendTimeline?: unknown }): TraceAppender | undefined {
  const support = (store as { [APPEND_TRACES]?: TraceSupport })[APPEND_TRACES]
  return support !== undefined && support.appendTimeline === store.appendTimeline ? support.appendTraces : undefined
}
