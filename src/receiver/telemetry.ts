/*
 * OpenTelemetry through @opentelemetry/api, an optional peer dependency: a span per delivery and counters and
 * a histogram by outcome. The API is loaded with a dynamic import when the receiver is created (or handed over
 * in the `telemetry` option); when it is missing, or telemetry is turned off, nothing here runs at all.
 *
 * The shapes below are the few parts of the API used, written out so that this package's type declarations
 * never name a package the merchant may not have installed.
 */
import type { Logger } from '../core/logger.js'
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
    /** Part of every API since 1.0; optional here so that a hand-made API without it still works (quietTracing). */
    getTracerProvider?(): unknown
  }
  context: {
    active(): unknown
    with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(context: unknown, fn: F, thisArg?: unknown, ...args: A): ReturnType<F>
  }
  metrics: { getMeter(name: string, version?: string): MeterLike }
  /** The API's no-op meter (since 1.3): its instruments are singletons, so a no-op meter can be recognised. */
  createNoopMeter?(): MeterLike
  /** The API's global tracer provider's class, and the context nothing is set in (both since 1.0; see quietTracing). */
  ProxyTracerProvider?: new () => { getDelegate(): unknown }
  ROOT_CONTEXT?: unknown
}

export interface TelemetryOptions {
  /**
   * The API object; by default `@opentelemetry/api` is imported when the receiver is created, if installed. A
   * hand-made one's `trace.getTracer()` hands out the tracers of its `trace.getTracerProvider()`, as the API's does;
   * to send spans elsewhere, pass `tracerProvider`.
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

const SPAN_KIND_INTERNAL = 0
const STATUS_ERROR = 2
const BUCKETS_S = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

// What the no-op tracer's spans carry when no parent span is active: nothing can ever see such a span.
const INVALID_TRACE_ID = '00000000000000000000000000000000'

/** The span options of each source, made once: the tracer only reads them. */
const spanOptions = new Map<TimelineSource, { kind: number; attributes: Attributes }>()
function optionsFor(source: TimelineSource): { kind: number; attributes: Attributes } {
  let options = spanOptions.get(source)
  if (options === undefined) spanOptions.set(source, (options = { kind: SPAN_KIND_INTERNAL, attributes: { [ATTR.source]: source } }))
  return options
}

/**
 * A test, for a delivery starting now, of whether a span of the receiver's tracer would be seen by anyone: not while
 * the API's proxy provider it came from has no TracerProvider behind it (its tracers are then the API's no-op ones,
 * whose spans record nothing) and no context is active (a no-op span still carries an active parent's trace onward,
 * to the handlers' own calls). Then no span is made: with @opentelemetry/api installed and no SDK (a common case:
 * many packages depend on the API), making, entering and ending one no-op span per delivery was ~2 % of handle()
 * (docs/benchmarks.md). Undefined, and spans always made, when a provider was registered already (the tracer is
 * its own, and records whatever the global registry does later), or the API object lacks what the test reads.
 * Read right after the tracer was taken from `api.trace`.
 */
function quietTracing(api: OpenTelemetryApi): (() => boolean) | undefined {
  const { ProxyTracerProvider, ROOT_CONTEXT } = api
  if (ProxyTracerProvider === undefined || ROOT_CONTEXT === undefined || typeof api.trace.getTracerProvider !== 'function') return undefined
  try {
    // A proxy with no provider behind it hands out the API's no-op provider: the one a registered provider replaces.
    const unregistered = new ProxyTracerProvider().getDelegate()
    // Not the global provider read anew per delivery: `api.trace.disable()` swaps that for a new proxy, while the
    // receiver's tracer still belongs to this one. Another copy of the API's proxy (another class): spans are made.
    const provider = api.trace.getTracerProvider()
    if (!(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== unregistered) return undefined
    return () => provider.getDelegate() === unregistered && api.context.active() === ROOT_CONTEXT
  } catch {
    // A hand-made API this test cannot read: spans are made, as they always were.
    return undefined
  }
}

export class Telemetry {
  private api: OpenTelemetryApi | undefined
  private tracer: TracerLike | undefined
  /** Whether a span of the global tracer would go unseen now; undefined for a tracerProvider given in the options. */
  private quiet: (() => boolean) | undefined
  private deliveries: ReturnType<MeterLike['createCounter']> | undefined
  private duration: ReturnType<MeterLike['createHistogram']> | undefined

  constructor(
    options: TelemetryOptions | boolean | undefined,
    private readonly logger: Logger,
  ) {
    if (options === false) return
    const given = typeof options === 'object' && options !== null ? options : {}
    if (given.api !== undefined) {
      this.use(given.api, given)
      return
    }
    // Loaded once, in the background: deliveries before it resolves are simply not traced.
    import('@opentelemetry/api').then(
      (api) => this.use(api as unknown as OpenTelemetryApi, given),
      () => {
        // Asked for explicitly: say so where it will be seen. By default, its absence is the normal case.
        if (options === undefined) logger.debug({}, 'telemetry: @opentelemetry/api is not installed; no spans or metrics')
        else logger.warn({}, 'telemetry: @opentelemetry/api is not installed, so no spans or metrics are produced; npm install @opentelemetry/api')
      },
    )
  }

  /**
   * Whether the metrics go anywhere: with the API's no-op meter (no MeterProvider was registered when the receiver
   * was made, and the API's meters never change provider later), nothing is measured or built for them.
   */
  get metering(): boolean {
    return this.meters
  }

  private meters = false
  private meter: MeterLike | undefined
  private waitingForMeter: ((meter: MeterLike) => void)[] = []

  /** Runs `use` with the meter once OpenTelemetry is set up (at once if it is), if metrics go anywhere. */
  withMeter(use: (meter: MeterLike) => void): void {
    if (this.meter !== undefined) use(this.meter)
    else if (this.api === undefined) this.waitingForMeter.push(use)
  }

  private use(api: OpenTelemetryApi, options: TelemetryOptions): void {
    try {
      this.tracer = (options.tracerProvider ?? api.trace).getTracer(INSTRUMENTATION_NAME)
      this.quiet = options.tracerProvider === undefined ? quietTracing(api) : undefined
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
      const noop = api.createNoopMeter?.()
      this.meters = noop === undefined || this.deliveries !== noop.createCounter(METRIC.deliveries) || this.duration !== noop.createHistogram(METRIC.duration)
      this.api = api
      if (this.meters) this.meter = meter
      for (const use of this.waitingForMeter.splice(0)) if (this.meter !== undefined) use(this.meter)
    } catch (error) {
      this.logger.error({ err: error }, 'telemetry: could not set up OpenTelemetry; no spans or metrics')
    }
  }

  /** The delivery's span, when OpenTelemetry is in use; end it with end(). */
  start(source: TimelineSource): SpanLike | undefined {
    if (this.api === undefined || this.quiet?.() === true) return undefined
    return this.tracer?.startSpan(SPAN_NAME, optionsFor(source))
  }

  /**
   * Runs `work` with the span active, so the handlers' own spans (database, HTTP) nest under it. A span of the
   * no-op tracer with no parent (no SDK, no active trace) records nothing and cannot parent anything: `work` then
   * runs as it is, without a context made for it.
   */
  run<T>(span: SpanLike, work: () => T): T {
    const api = this.api as OpenTelemetryApi
    if (!span.isRecording() && span.spanContext?.().traceId === INVALID_TRACE_ID) return work()
    return api.context.with(api.trace.setSpan(api.context.active(), span), work)
  }

  /** Records the delivery's outcome on its span (then ends it) and in the metrics. */
  end(span: SpanLike | undefined, source: TimelineSource, response: DeliveryResult, verified: VerifiedPayment | undefined, seconds: number): void {
    try {
      const recording = span !== undefined && span.isRecording()
      // Nothing is built for instruments and spans that would drop it (the API without an SDK).
      if (!this.meters && !recording) return
      const attributes: Attributes = { [ATTR.source]: source, [ATTR.outcome]: response.outcome }
      if (verified !== undefined) attributes[ATTR.state] = verified.state
      if (response.error !== undefined) attributes[ATTR.errorCode] = response.error.code
      if (this.meters) {
        this.deliveries?.add(1, attributes)
        this.duration?.record(seconds, { [ATTR.source]: source, [ATTR.outcome]: response.outcome })
      }
      if (recording) {
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
    const span = this.api?.trace.getActiveSpan()
    if (span !== undefined && span.isRecording()) span.recordException(error instanceof Error ? error : String(error))
  }
}
