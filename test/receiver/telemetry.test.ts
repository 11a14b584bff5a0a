import { AsyncLocalStorage } from 'node:async_hooks'
import * as api from '@opentelemetry/api'
import { type DataPoint, type Histogram, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics'
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createReceiver, type Receiver } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

const TOKEN = 'ab'.repeat(32)

/** A reader the test pulls from: collect() returns what the meters recorded so far. */
class PullReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

/** The context manager an OpenTelemetry SDK for Node registers (AsyncLocalStorage), so spans nest across awaits. */
class AsyncContextManager implements api.ContextManager {
  private readonly storage = new AsyncLocalStorage<api.Context>()
  active(): api.Context {
    return this.storage.getStore() ?? api.ROOT_CONTEXT
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(context: api.Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    return this.storage.run(context, () => fn.call(thisArg, ...args))
  }
  bind<T>(_context: api.Context, target: T): T {
    return target
  }
  enable(): this {
    return this
  }
  disable(): this {
    this.storage.disable()
    return this
  }
}

function deliver(receiver: Receiver, fields: Record<string, unknown>, token = TOKEN) {
  const signed = signCallback(fields as never, token)
  return receiver.handle({ kind: 'callback', body: Buffer.from(signed.body), contentType: signed.contentType })
}

describe('OpenTelemetry', () => {
  let exporter: InMemorySpanExporter
  let tracerProvider: BasicTracerProvider
  let reader: PullReader
  let meterProvider: MeterProvider
  beforeEach(() => {
    exporter = new InMemorySpanExporter()
    tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
    reader = new PullReader()
    meterProvider = new MeterProvider({ readers: [reader] })
    api.context.setGlobalContextManager(new AsyncContextManager())
  })
  afterEach(async () => {
    api.context.disable()
    api.trace.disable()
    api.metrics.disable()
    await Promise.all([tracerProvider.shutdown(), meterProvider.shutdown()])
  })

  async function metrics(): Promise<Map<string, DataPoint<unknown>[]>> {
    const { resourceMetrics } = await reader.collect()
    const found = new Map<string, DataPoint<unknown>[]>()
    for (const scope of resourceMetrics.scopeMetrics)
      for (const metric of scope.metrics) found.set(metric.descriptor.name, metric.dataPoints as DataPoint<unknown>[])
    return found
  }

  const receiveSpans = () => exporter.getFinishedSpans().filter((span) => span.name === 'fpx.receive')

  it('makes one span per delivery, with the outcome, and nests the handlers’ spans under it', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, telemetry: { api, tracerProvider, meterProvider } })
    let fail = true
    receiver.on('payment.succeeded', async () => {
      const span = tracerProvider.getTracer('app').startSpan('orders.markPaid')
      await new Promise((resolve) => setTimeout(resolve, 1))
      span.end()
      if (fail) throw new Error('the ERP is down')
    })
    const fields = samplePaymentFields()
    expect(await deliver(receiver, fields)).toMatchObject({ status: 500 })
    fail = false
    expect(await deliver(receiver, fields)).toMatchObject({ status: 200, outcome: 'processed' })
    expect(await deliver(receiver, fields)).toMatchObject({ status: 200, outcome: 'duplicate' })
    expect(await deliver(receiver, fields, 'cd'.repeat(32))).toMatchObject({ status: 401 })

    const spans = receiveSpans()
    expect(spans.map((span) => span.attributes['fpx.outcome'])).toEqual(['failed', 'processed', 'duplicate', 'rejected'])
    const [failed, processed, duplicate, rejected] = spans as [ReadableSpan, ReadableSpan, ReadableSpan, ReadableSpan]
    expect(processed.attributes).toMatchObject({
      'fpx.source': 'callback',
      'fpx.state': 'succeeded',
      'fpx.exchange_number': fields.exchange_number,
      'fpx.order_number': fields.order_number,
      'http.response.status_code': 200,
    })
    expect(processed.status.code).toBe(api.SpanStatusCode.UNSET)
    expect(failed.attributes).toMatchObject({ 'fpx.error.code': 'handler_failed', 'http.response.status_code': 500 })
    expect(failed.status).toMatchObject({ code: api.SpanStatusCode.ERROR, message: 'handler_failed' })
    expect(failed.events.map((event) => [event.name, event.attributes?.['exception.message']])).toEqual([['exception', 'the ERP is down']])
    expect(duplicate.attributes['fpx.outcome']).toBe('duplicate')
    // A refusal says what was refused, never the numbers of a message nobody vouched for.
    expect(rejected.attributes).toMatchObject({ 'fpx.error.code': 'checksum_mismatch', 'http.response.status_code': 401 })
    expect(rejected.attributes['fpx.exchange_number']).toBeUndefined()
    expect(rejected.status.code).toBe(api.SpanStatusCode.UNSET)

    const children = exporter.getFinishedSpans().filter((span) => span.name === 'orders.markPaid')
    expect(children).toHaveLength(2)
    expect(children.map((child) => child.parentSpanContext?.spanId)).toEqual([failed.spanContext().spanId, processed.spanContext().spanId])
  })

  it('counts deliveries by outcome and records their duration', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, telemetry: { api, tracerProvider, meterProvider } })
    receiver.onAny(() => {})
    const fields = samplePaymentFields()
    await deliver(receiver, fields)
    await deliver(receiver, fields)
    await deliver(receiver, fields)
    await deliver(receiver, samplePaymentFields(), 'cd'.repeat(32))
    await receiver.handleTrusted(samplePaymentFields())

    const found = await metrics()
    const counts = (found.get('fpx.receiver.deliveries') ?? []).map((point) => [point.attributes, point.value])
    expect(counts).toEqual(
      expect.arrayContaining([
        [{ 'fpx.source': 'callback', 'fpx.outcome': 'processed', 'fpx.state': 'succeeded' }, 1],
        [{ 'fpx.source': 'callback', 'fpx.outcome': 'duplicate', 'fpx.state': 'succeeded' }, 2],
        [{ 'fpx.source': 'callback', 'fpx.outcome': 'rejected', 'fpx.error.code': 'checksum_mismatch' }, 1],
        [{ 'fpx.source': 'reconcile', 'fpx.outcome': 'processed', 'fpx.state': 'succeeded' }, 1],
      ]),
    )
    expect(counts).toHaveLength(4)
    const durations = (found.get('fpx.receiver.duration') ?? []) as DataPoint<Histogram>[]
    expect(durations.reduce((sum, point) => sum + point.value.count, 0)).toBe(5)
    for (const point of durations) expect(point.value.max).toBeLessThan(10)
  })

  it('imports @opentelemetry/api by itself and uses the registered providers; telemetry: false turns it off', async () => {
    api.trace.setGlobalTracerProvider(tracerProvider)
    api.metrics.setGlobalMeterProvider(meterProvider)
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    const off = createReceiver({ signatureOnly: true, checksumToken: TOKEN, telemetry: false })
    for (const each of [receiver, off]) each.onAny(() => {})
    // The import resolves in the background, right after creation.
    await new Promise((resolve) => setTimeout(resolve, 50))
    await deliver(receiver, samplePaymentFields())
    await deliver(off, samplePaymentFields())
    expect(receiveSpans()).toHaveLength(1)
    const counted = (await metrics()).get('fpx.receiver.deliveries') ?? []
    expect(counted.reduce((sum, point) => sum + (point.value as number), 0)).toBe(1)
  })

  /** The API, its tracer counting the spans it is asked for. */
  function countingApi(): { api: typeof api; started: () => number } {
    let started = 0
    const trace = Object.create(api.trace, {
      getTracer: {
        value: (name: string) => {
          const tracer = api.trace.getTracer(name)
          return { startSpan: (...args: Parameters<api.Tracer['startSpan']>) => (started++, tracer.startSpan(...args)) }
        },
      },
    }) as typeof api.trace
    return { api: { ...api, trace }, started: () => started }
  }

  it('keeps making spans with the tracer of a provider registered when it was created, after api.trace.disable()', async () => {
    api.trace.setGlobalTracerProvider(tracerProvider)
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, telemetry: { api } })
    receiver.onAny(() => {})
    await deliver(receiver, samplePaymentFields())
    api.trace.disable()
    await deliver(receiver, samplePaymentFields())
    expect(receiveSpans()).toHaveLength(2)
  })

  it('with no provider registered, hands a trace active around handle() on to the handlers', async () => {
    const counting = countingApi()
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, telemetry: { api: counting.api } })
    const seen: (string | undefined)[] = []
    receiver.on('payment.succeeded', () => {
      seen.push(api.trace.getActiveSpan()?.spanContext().traceId)
    })
    const parent = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: api.TraceFlags.SAMPLED }
    const active = api.trace.setSpanContext(api.ROOT_CONTEXT, parent)
    expect(await api.context.with(active, () => deliver(receiver, samplePaymentFields()))).toMatchObject({ status: 200 })
    expect(await deliver(receiver, samplePaymentFields())).toMatchObject({ status: 200 })
    expect(seen).toEqual([parent.traceId, undefined])
    expect(counting.started()).toBe(2)
  })
})
