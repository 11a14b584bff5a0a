/*
 * OpenTelemetry through @opentelemetry/api, an optional peer dependency: a span per delivery and counters and
 * a histogram by outcome. The API is loaded with a dynamic import at the first delivery (or handed over in the
 * `telemetry` option); when it is missing, or telemetry is turned off, nothing is recorded.
 *
 * The shapes below are the few parts of the API used, written out so that this package's type declarations
 * never name a package the merchant may not have installed.
 */
import type { Logger } from '../core/logger.js'
import { printable } from '../core/result/errors.js'
import type { VerifiedPayment } from '../core/result/verify.js'
import type { TimelineSource } from '../contract/timeline.js'
import type { DeliveryResult } from '../contract/delivery-result.js'

type Attributes = Record<string, string | number | boolean>

export interface SpanLike {
  /** Part of every Span; optional here so that a hand-made span without it still works. */
  spanContext?(): { traceId: string }
  setAttribute(key: string, value: string | number | boolean): unknown
  setAttributes(attributes: Attributes): unknown
  setStatus(status: { code: number; message?: string }): unknown
  recordException(exception: unknown): unknown
  isRecording(): boolean
  end(): void
}

export interface TracerLike {
  startSpan(name: string, options?: { kind?: number; attributes?: Attributes }, context?: unknown): SpanLike
}

export interface MeterLike {
  createCounter(name: string, options?: { description?: string; unit?: string }): { add(value: number, attributes?: Attributes): void }
  createHistogram(
    name: string,
    options?: { description?: string; unit?: string; advice?: { explicitBucketBoundaries?: number[] } },
  ): { record(value: number, attributes?: Attributes): void }
  /** Part of every Meter; optional here so that a hand-made meter without it still works (book-metrics.ts). */
  createObservableGauge?(
    name: string,
    options?: { description?: string; unit?: string },
  ): { addCallback(callback: (result: { observe(value: number, attributes?: Attributes): void }) => void | Promise<void>): void }
}

/** What the receiver uses of `@opentelemetry/api` (pass `import * as api from '@opentelemetry/api'`). */
export interface OpenTelemetryApi {
  trace: {
    getTracer(name: string, version?: string): TracerLike
    setSpan(context: unknown, span: SpanLike): unknown
    getActiveSpan(): SpanLike | undefined
  }
  context: {
    active(): unknown
    with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(context: unknown, fn: F, thisArg?: unknown, ...args: A): ReturnType<F>
  }
  metrics: { getMeter(name: string, version?: string): MeterLike }
}

export interface TelemetryOptions {
  /**
   * The API object; by default `@opentelemetry/api` is imported at the first delivery, if installed. To send spans
   * elsewhere, pass `tracerProvider`.
   */
  api?: OpenTelemetryApi
  /** Spans go to this provider instead of the globally registered one. */
  tracerProvider?: { getTracer(name: string, version?: string): TracerLike }
  /** Metrics go to this provider instead of the globally registered one. */
  meterProvider?: { getMeter(name: string, version?: string): MeterLike }
}

export const INSTRUMENTATION_NAME = 'fpx-collect'
export const SPAN_NAME = 'fpx.receive'
export const ATTR = {
  source: 'fpx.source',
  outcome: 'fpx.outcome',
  state: 'fpx.state',
  previousState: 'fpx.previous_state',
  exchangeNumber: 'fpx.exchange_number',
  orderNumber: 'fpx.order_number',
  errorCode: 'fpx.error.code',
  status: 'http.response.status_code',
} as const
export const METRIC = { deliveries: 'fpx.receiver.deliveries', duration: 'fpx.receiver.duration' } as const

const OPTIONAL_API: string = '@opentelemetry/api'
const INVALID_TRACE_ID = '00000000000000000000000000000000'
const SPAN_KIND_INTERNAL = 0
const STATUS_ERROR = 2
const BUCKETS_S = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

export class Telemetry {
  private api: OpenTelemetryApi | undefined
  private tracer: TracerLike | undefined
  private deliveries: ReturnType<MeterLike['createCounter']> | undefined
  private duration: ReturnType<MeterLike['createHistogram']> | undefined
  private meter: MeterLike | undefined
  private readonly waitingForMeter: ((meter: MeterLike) => void)[] = []
  private loading: Promise<void> | undefined

  constructor(
    private readonly options: TelemetryOptions | boolean | undefined,
    private readonly logger: Logger,
  ) {
    const given = typeof options === 'object' && options !== null ? options : {}
    if (options !== false && given.api !== undefined) this.use(given.api, given)
  }

  /**
   * Sets OpenTelemetry up at the first delivery, not when the receiver is made (a Worker's module scope allows no
   * I/O): @opentelemetry/api is imported if installed.
   */
  ready(): Promise<void> {
    if (this.options === false || this.api !== undefined) return Promise.resolve()
    // A specifier bundlers leave alone: the package is optional, and a Worker's bundle must build without it.
    const optional = OPTIONAL_API
    this.loading ??= import(optional).then(
      (api) => this.use(api as unknown as OpenTelemetryApi, typeof this.options === 'object' && this.options !== null ? this.options : {}),
      () => {
        // Asked for explicitly: say so where it will be seen. By default, its absence is the normal case.
        if (this.options === undefined) this.logger.debug({}, 'telemetry: @opentelemetry/api is not installed; no spans or metrics')
        else this.logger.warn({}, 'telemetry: @opentelemetry/api is not installed, so no spans or metrics are produced; npm install @opentelemetry/api')
      },
    )
    return this.loading
  }

  /** Runs `use` with the meter once OpenTelemetry is set up (at once if it is). */
  withMeter(use: (meter: MeterLike) => void): void {
    if (this.meter !== undefined) use(this.meter)
    else this.waitingForMeter.push(use)
  }

  private use(api: OpenTelemetryApi, options: TelemetryOptions): void {
    try {
      this.tracer = (options.tracerProvider ?? api.trace).getTracer(INSTRUMENTATION_NAME)
      const meter = (options.meterProvider ?? api.metrics).getMeter(INSTRUMENTATION_NAME)
      this.deliveries = meter.createCounter(METRIC.deliveries, {
        description: 'Payment results received (deliveries and reconciled records), by outcome',
        unit: '{delivery}',
      })
      this.duration = meter.createHistogram(METRIC.duration, {
        description: 'Time from receiving a payment result to the answer, handlers included',
        unit: 's',
        advice: { explicitBucketBoundaries: BUCKETS_S },
      })
      this.api = api
      this.meter = meter
      for (const use of this.waitingForMeter.splice(0)) use(meter)
    } catch (error) {
      this.logger.error({ err: error }, 'telemetry: could not set up OpenTelemetry; no spans or metrics')
    }
  }

  /** Runs `work` inside the delivery's span, so the handlers' own spans (database, HTTP) nest under it. */
  async traced<R extends DeliveryResult>(source: TimelineSource, work: () => Promise<R>, verified: () => VerifiedPayment | undefined): Promise<R> {
    await this.ready()
    const api = this.api
    let span: SpanLike | undefined
    let carries = false
    try {
      span = api === undefined ? undefined : this.tracer?.startSpan(SPAN_NAME, { kind: SPAN_KIND_INTERNAL, attributes: { [ATTR.source]: source } })
      // A span that records nothing and has no trace to carry on (no SDK, no active trace) is not made active: the
      // handlers then see no span at all, as without OpenTelemetry.
      carries = span !== undefined && (span.isRecording() || span.spanContext?.().traceId !== INVALID_TRACE_ID)
    } catch (error) {
      // A tracer's fault never costs the delivery its answer.
      this.logger.error({ err: error }, 'telemetry: starting the delivery span failed; the delivery goes on without it')
      span = undefined
    }
    const started = Date.now()
    const response = !carries || span === undefined || api === undefined ? await work() : await api.context.with(api.trace.setSpan(api.context.active(), span), work)
    try {
      this.end(span, source, response, verified(), (Date.now() - started) / 1000)
    } catch (error) {
      this.logger.error({ err: error }, 'telemetry: recording the delivery failed')
    }
    return response
  }

  /** Records the delivery's outcome on its span (then ends it) and in the metrics. */
  private end(span: SpanLike | undefined, source: TimelineSource, response: DeliveryResult, verified: VerifiedPayment | undefined, seconds: number): void {
    try {
      const attributes: Attributes = { [ATTR.source]: source, [ATTR.outcome]: response.outcome }
      if (verified !== undefined) attributes[ATTR.state] = verified.state
      if (response.error !== undefined) attributes[ATTR.errorCode] = response.error.code
      this.deliveries?.add(1, attributes)
      this.duration?.record(seconds, { [ATTR.source]: source, [ATTR.outcome]: response.outcome })
      if (span !== undefined && span.isRecording()) {
        span.setAttributes({ ...attributes, [ATTR.status]: response.status })
        if (verified !== undefined) {
          span.setAttribute(ATTR.exchangeNumber, verified.exchangeNumber)
          span.setAttribute(ATTR.orderNumber, verified.orderNumber)
        }
        if (response.status >= 500) span.setStatus({ code: STATUS_ERROR, message: response.error?.code ?? 'failed' })
      }
    } finally {
      span?.end()
    }
  }

  /** Notes a handler's error on the delivery's span, when one is active. */
  recordException(error: unknown): void {
    try {
      const span = this.api?.trace.getActiveSpan()
      if (span !== undefined && span.isRecording()) span.recordException(error instanceof Error ? error : printable(error))
    } catch (failure) {
      // A revoked Proxy fails even instanceof: the handler's failure is reported elsewhere all the same.
      this.logger.error({ err: failure }, 'telemetry: recording a handler error on the span failed')
    }
  }
}
