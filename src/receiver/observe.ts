/*
 * What operators see of each delivery, wrapped around the receiver's flow: the timeline entries (written
 * behind the answer) and the OpenTelemetry span and metrics. With neither (a store without a timeline, no
 * OpenTelemetry), the flow runs as it is, with nothing added. Per delivery this makes one Watch and one callback
 * for its answer: closures made for every delivery were most of what observing cost besides the timeline's
 * entries themselves.
 */
import { performance } from 'node:perf_hooks'
import type { RawDelivery } from '../core/result/body.js'
import type { Logger } from '../core/logger.js'
import type { VerifiedPayment } from '../core/result/verify.js'
import type { TimelineSource } from '../contract/timeline.js'
import type { DeliveryResult } from '../contract/delivery-result.js'
import type { SpanLike, Telemetry } from './telemetry.js'
import type { DeliveryRecord, TimelineRecorder } from './timeline.js'

/** Accepts a result: verifies `delivery` (when the result came as a delivery) or trusts what it was made for. */
export type Accept = (delivery: RawDelivery | undefined) => VerifiedPayment | Promise<VerifiedPayment>

/** Told when the result was accepted, before it is dispatched. */
export interface AcceptWatcher {
  accepted(verified: VerifiedPayment): void
}

/** The flow being observed: its answer at once when nothing had to wait (dispatch.ts), else a promise. */
export type Receive<S extends TimelineSource, R extends DeliveryResult> = (
  source: S,
  what: string,
  accept: Accept,
  delivery: RawDelivery | undefined,
  watcher: AcceptWatcher | undefined,
) => R | Promise<R>
export type ObservedReceive<S extends TimelineSource, R extends DeliveryResult> = (
  source: S,
  what: string,
  accept: Accept,
  delivery?: RawDelivery,
) => Promise<R>

/**
 * One delivery being observed: when it came, when and what was accepted, its span; once answered, the record the
 * timeline takes (one object per delivery, not a second one made for the timeline).
 */
class Watch implements AcceptWatcher, DeliveryRecord {
  verified: VerifiedPayment | undefined = undefined
  verifiedAt = 0
  /** A lazily read body, kept for a second look should the delivery be refused. */
  kept: Uint8Array | string | undefined = undefined
  attempt = 0
  answeredAt = 0
  /** Always undefined: a refused delivery's record is a copy that says what it carried (refusedDelivery). */
  readonly refused: RawDelivery | undefined = undefined
  /** Set once answered, before the timeline sees it. */
  response!: DeliveryResult

  constructor(
    readonly source: TimelineSource,
    readonly receivedAt: number,
    readonly started: number,
    readonly span: SpanLike | undefined,
    readonly delivery: RawDelivery | undefined,
  ) {}

  accepted(verified: VerifiedPayment): void {
    this.verified = verified
    this.verifiedAt = Date.now()
  }

  /** What a refused delivery carried, to read the numbers its body claims. */
  refusedDelivery(): RawDelivery | undefined {
    const delivery = this.delivery
    if (delivery === undefined || delivery.body != null || delivery.readBody === undefined) return delivery
    return { ...delivery, readBody: undefined, body: this.kept ?? null }
  }
}

function refusalRecord(watch: Watch): DeliveryRecord {
  const { source, attempt, receivedAt, verifiedAt, answeredAt, response } = watch
  return { source, attempt, receivedAt, verifiedAt, answeredAt, verified: undefined, refused: watch.refusedDelivery(), response }
}

/** A delivery whose body, if read lazily (readBody), is kept in `watch` should it be refused. */
function keepingBody(delivery: RawDelivery, watch: Watch): RawDelivery {
  const read = delivery.readBody
  if (delivery.body != null || read === undefined) return delivery
  return { ...delivery, readBody: async (maxBytes) => (watch.kept = await read(maxBytes)) }
}

export function observe<S extends TimelineSource, R extends DeliveryResult>(
  receive: Receive<S, R>,
  parts: { timeline: TimelineRecorder; telemetry: Telemetry; logger: Logger },
): ObservedReceive<S, R> {
  const { timeline, telemetry, logger } = parts

  function answered(watch: Watch, response: R): R {
    // The answer is decided: nothing below may change it or make handle() throw.
    if (watch.span !== undefined || telemetry.metering) {
      try {
        telemetry.end(watch.span, watch.source, response, watch.verified, (performance.now() - watch.started) / 1000)
      } catch (error) {
        logger.error({ err: error }, 'telemetry: recording the delivery failed')
      }
    }
    if (timeline.enabled) {
      watch.attempt = timeline.nextAttemptNumber()
      watch.answeredAt = Date.now()
      watch.response = response
      // A refusal waits in the recorder's queue for a while: as a record of its own, which keeps neither the span
      // nor a lazily read delivery's reader alive.
      timeline.recordDelivery(watch.verified === undefined ? refusalRecord(watch) : watch)
    }
    return response
  }

  return (source, what, accept, delivery) => {
    const span = telemetry.start(source)
    if (span === undefined && !timeline.enabled && !telemetry.metering) return Promise.resolve(receive(source, what, accept, delivery, undefined))
    const watch = new Watch(
      source,
      Date.now(),
      telemetry.metering ? performance.now() : 0,
      span,
      delivery === undefined || !timeline.enabled ? undefined : delivery,
    )
    const seen = watch.delivery === undefined ? delivery : keepingBody(watch.delivery, watch)
    const result = span === undefined ? receive(source, what, accept, seen, watch) : telemetry.run(span, () => receive(source, what, accept, seen, watch))
    if (result instanceof Promise) return result.then((response) => answered(watch, response))
    // Answered at once: one promise for the caller, and no trip through the microtask queue of its own.
    try {
      return Promise.resolve(answered(watch, result))
    } catch (error) {
      return Promise.reject(error)
    }
  }
}
