/*
 * What operators see of each delivery, wrapped around the receiver's flow: the timeline entries (written
 * behind the answer) and the OpenTelemetry span and metrics. With neither (a store without a timeline, no
 * OpenTelemetry), the flow runs as it is, with nothing added.
 */
import { performance } from 'node:perf_hooks'
import type { RawDelivery } from '../core/body.js'
import type { Logger } from '../core/logger.js'
import type { VerifiedPayment } from '../core/verify.js'
import type { TimelineSource } from '../stores/timeline.js'
import type { DeliveryResult } from './delivery-result.js'
import type { Telemetry } from './telemetry.js'
import type { TimelineRecorder } from './timeline.js'

/** Accepts a result; the delivery passed in, when given, replaces the one the function was made for. */
export type Accept = (delivery?: RawDelivery) => VerifiedPayment | Promise<VerifiedPayment>
export type Receive<S extends TimelineSource, R extends DeliveryResult> = (
  source: S,
  what: string,
  accept: () => VerifiedPayment | Promise<VerifiedPayment>,
) => Promise<R>
export type ObservedReceive<S extends TimelineSource, R extends DeliveryResult> = (
  source: S,
  what: string,
  accept: Accept,
  delivery?: RawDelivery,
) => Promise<R>

/** A delivery whose body, if read lazily (readBody), is kept for a second look should it be refused. */
function keepingBody(delivery: RawDelivery): { delivery: RawDelivery; body: () => RawDelivery } {
  const read = delivery.readBody
  if (delivery.body != null || read === undefined) return { delivery, body: () => delivery }
  let kept: Uint8Array | string | undefined
  return {
    delivery: { ...delivery, readBody: async (maxBytes) => (kept = await read(maxBytes)) },
    body: () => ({ ...delivery, readBody: undefined, body: kept ?? null }),
  }
}

export function observe<S extends TimelineSource, R extends DeliveryResult>(
  receive: Receive<S, R>,
  parts: { timeline: TimelineRecorder; telemetry: Telemetry; logger: Logger },
): ObservedReceive<S, R> {
  const { timeline, telemetry, logger } = parts
  return (source, what, accept, delivery) => {
    const span = telemetry.start(source)
    if (span === undefined && !timeline.enabled) return receive(source, what, accept)
    const receivedAt = Date.now()
    const started = span === undefined ? 0 : performance.now()
    const seen = delivery === undefined || !timeline.enabled ? undefined : keepingBody(delivery)
    let verified: VerifiedPayment | undefined
    let verifiedAt = 0
    const watched = async () => {
      verified = await accept(seen?.delivery)
      verifiedAt = Date.now()
      return verified
    }
    const run = () => receive(source, what, watched)
    return (span === undefined ? run() : span.run(run)).then((response) => {
      // The answer is decided: nothing below may change it or make handle() throw.
      try {
        span?.end(response, verified, (performance.now() - started) / 1000)
      } catch (error) {
        logger.error({ err: error }, 'telemetry: recording the delivery failed')
      }
      if (timeline.enabled)
        timeline.recordDelivery({
          source,
          attempt: timeline.nextAttempt(),
          receivedAt,
          verifiedAt,
          answeredAt: Date.now(),
          verified,
          refused: verified === undefined ? seen?.body() : undefined,
          response,
        })
      return response
    })
  }
}
