/**
 * Issue 35's "a fault of ours is never the sender's fault", written once and run by the adapter contract against
 * every framework and version over real HTTP. A fault is injected at each step of a genuine delivery's path (the
 * body reader, verification, the store, confirmation over the API, what surrounds the handlers) into the default
 * receiver, which confirms over the emulator's API; each must answer 500 or 503 with a code that says the fault is
 * ours, never a 4xx, and log its cause without a secret. A request that really is malformed still gets its 4xx.
 */
import nodeCrypto from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import * as otel from '@opentelemetry/api'
import { afterAll, afterEach, beforeAll, expect, it, vi } from 'vitest'
import { createReceiver, type Logger, memoryStore, type Receiver, type ReceiverOptions, type ReceiverStore } from '../../src/index.js'
import { DEMO, type Genuine, type Service, service } from '../security/genuine.js'
import { errorOf, FORM, type Open, post, type Reply, type Started } from './harness.js'

interface Line {
  level: keyof Logger
  details: Record<string, unknown>
  message: string
}

/** A logger that keeps every line, for the test to find the cause in. */
function recordingLogger(): { logger: Logger; lines: Line[] } {
  const lines: Line[] = []
  const at = (level: keyof Logger) => (details: object, message: string) => void lines.push({ level, details: details as Record<string, unknown>, message })
  return { logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }, lines }
}

/** Everything a log line holds, errors' messages, stacks and causes included, as text to search for secrets. */
function everything(value: unknown, seen = new Set<unknown>()): string {
  if (value === null || typeof value !== 'object') return String(value)
  if (seen.has(value)) return ''
  seen.add(value)
  const own = Object.getOwnPropertyNames(value).map((name) => `${name}=${everything((value as Record<string, unknown>)[name], seen)}`)
  return `${own.join(' ')} ${value instanceof Error ? `${value.message} ${value.stack ?? ''} ${everything(value.cause, seen)}` : ''}`
}

/** Whether `error` is `cause`, or has it somewhere down its chain of causes. */
function carries(error: unknown, cause: unknown): boolean {
  for (let at = error, depth = 0; at !== undefined && at !== null && depth < 5; at = (at as { cause?: unknown }).cause, depth++) if (at === cause) return true
  return false
}

type Step = 'claim' | 'complete' | 'release' | 'appendTimeline'

/**
 * The memory store with a fault at the steps named: each throws (synchronously) or rejects with the error given, or
 * stalls (never answers, as a paused server or a network partition).
 */
function faultyStore(faults: Partial<Record<Step, { error: Error; how: 'throw' | 'reject' } | { how: 'stall' }>>): ReceiverStore {
  const store = memoryStore()
  const step = <A extends unknown[], R>(name: Step, real: (...args: A) => Promise<R>) => (...args: A): Promise<R> => {
    const fault = faults[name]
    if (fault === undefined) return real(...args)
    if (fault.how === 'stall') return new Promise<R>(() => {})
    if (fault.how === 'throw') throw fault.error
    return Promise.reject(fault.error)
  }
  return {
    ...store,
    claim: step('claim', store.claim.bind(store)),
    complete: step('complete', store.complete.bind(store)),
    release: step('release', store.release.bind(store)),
    appendTimeline: step('appendTimeline', store.appendTimeline!.bind(store)),
  }
}

/** The codes that say a fault is ours: the sender is asked to come back, and is told nothing was wrong with it. */
const OURS = ['internal_error', 'store_unavailable', 'confirmation_unavailable', 'credential_lookup_failed']

/** Call inside the adapter contract's describe block, with the same `open`. */
export function faultContract(open: Open): void {
  let svc: Service
  let apiDown: Server
  let apiDownUrl = ''
  const started: Started[] = []
  beforeAll(async () => {
    svc = await service()
    // The service's API on a bad day: every request answered 503.
    apiDown = createServer((_request, response) => response.writeHead(503, { 'content-type': 'text/plain' }).end('down for maintenance'))
    await new Promise<void>((resolve) => apiDown.listen(0, '127.0.0.1', resolve))
    apiDownUrl = `http://127.0.0.1:${(apiDown.address() as AddressInfo).port}/api`
  })
  afterAll(async () => {
    await svc.stop()
    await new Promise((resolve) => apiDown.close(resolve))
  })
  afterEach(async () => {
    vi.restoreAllMocks()
    await Promise.all(started.splice(0).map((app) => app.close()))
  })

  /**
   * An app on a receiver made from `options` (confirming over the emulator unless they say otherwise), with a
   * recording logger and a handler that counts its runs; `wrap` may change the receiver the adapter is given.
   */
  async function app(options: Partial<ReceiverOptions> = {}, wrap: (receiver: Receiver) => Receiver = (receiver) => receiver) {
    const { logger, lines } = recordingLogger()
    const receiver = createReceiver({ environment: svc.environment, credentials: DEMO, logger, ...options } as ReceiverOptions)
    const runs: string[] = []
    receiver.onAny((event) => void runs.push(event.id))
    const server = await open(wrap(receiver), {})
    started.push(server)
    return { url: server.url, receiver, runs, lines }
  }

  /** The answer is ours (5xx, a code of ours), and an error line carries the injected cause; no line holds a secret. */
  function expectOurs(reply: Reply, code: string, lines: Line[], cause: unknown): void {
    expect(reply.status, reply.text).toBeGreaterThanOrEqual(500)
    expect(errorOf(reply).code).toBe(code)
    expect(OURS).toContain(code)
    expect(lines.some((line) => line.level === 'error' && carries(line.details.err, cause)), JSON.stringify(lines.map((line) => line.message))).toBe(true)
    const logged = everything(lines)
    for (const secret of [DEMO.authToken, DEMO.checksumToken]) expect(logged).not.toContain(secret)
  }

  const deliver = (url: string, genuine: Genuine) => post(url, '/fpx/callback', { body: genuine.body, contentType: FORM })

  it('fault: the body reader fails with a platform error (a missing API), not the client: 500 internal_error, logged', async () => {
    const cause = new TypeError('timer.unref is not a function')
    // The adapter's own reader runs (the body is read), then the platform fails, as workerd's timers once did.
    const { url, runs, lines } = await app({}, (receiver) => ({
      ...receiver,
      handle: (delivery) =>
        receiver.handle({
          ...delivery,
          ...(delivery.readBody === undefined ? {} : { readBody: async (limit: number) => (await delivery.readBody!(limit), Promise.reject(cause)) }),
        }),
    }))
    const reply = await deliver(url, await svc.pay('approve'))
    expectOurs(reply, 'internal_error', lines, cause)
    expect(runs).toHaveLength(0)
  })

  it('fault: the platform HMAC throws during verification: 500 internal_error, logged', async () => {
    const { url, runs, lines } = await app()
    const genuine = await svc.pay('approve')
    const cause = new TypeError('HMAC is not available')
    vi.spyOn(nodeCrypto, 'createHmac').mockImplementation(() => {
      throw cause
    })
    const reply = await deliver(url, genuine)
    vi.restoreAllMocks()
    expectOurs(reply, 'internal_error', lines, cause)
    expect(runs).toHaveLength(0)
  })

  it("fault: the merchant's credential lookup rejects: 500 credential_lookup_failed, logged", async () => {
    const cause = new Error('connect ECONNREFUSED 127.0.0.1:5432')
    const { url, runs, lines } = await app({ credentials: undefined, resolveCredentials: () => Promise.reject(cause) } as Partial<ReceiverOptions>)
    const reply = await deliver(url, await svc.pay('approve'))
    expectOurs(reply, 'credential_lookup_failed', lines, cause)
    expect(runs).toHaveLength(0)
  })

  it('fault: a platform API missing when the receiver first draws a random id: 500 internal_error, logged', async () => {
    const { url, runs, lines } = await app()
    const genuine = await svc.pay('approve')
    const cause = new TypeError('crypto.randomUUID is not a function')
    vi.spyOn(globalThis.crypto, 'randomUUID').mockImplementation(() => {
      throw cause
    })
    const reply = await deliver(url, genuine)
    vi.restoreAllMocks()
    expectOurs(reply, 'internal_error', lines, cause)
    expect(runs).toHaveLength(0)
  })

  it.each(['throw', 'reject'] as const)('fault: the store %ss on claim: 503 store_unavailable, logged, no handler', async (how) => {
    const cause = how === 'throw' ? new TypeError("Cannot read properties of undefined (reading 'eval')") : new Error('connect ECONNREFUSED 127.0.0.1:6379')
    const { url, runs, lines } = await app({ store: faultyStore({ claim: { error: cause, how } }) })
    const reply = await deliver(url, await svc.pay('approve'))
    expectOurs(reply, 'store_unavailable', lines, cause)
    expect(reply.headers['retry-after']).toBeDefined()
    expect(runs).toHaveLength(0)
  })

  it.each(['claim', 'complete'] as const)('fault: the store stops answering on %s: 503 store_unavailable within half the lease, logged', async (at) => {
    const { url, runs, lines } = await app({ store: faultyStore({ [at]: { how: 'stall' } }), leaseMs: 400 })
    const genuine = await svc.pay('approve')
    const started = performance.now()
    const reply = await deliver(url, genuine)
    expect(performance.now() - started).toBeLessThan(5000)
    expect([reply.status, errorOf(reply).code]).toEqual([503, 'store_unavailable'])
    expect(reply.headers['retry-after']).toBeDefined()
    expect(lines.some((line) => line.level === 'error' && /did not answer within 200 ms/.test(String((line.details.err as Error | undefined)?.message)))).toBe(true)
    // A stalled claim runs no handler; a stalled completion comes after the handlers ran once.
    expect(runs).toEqual(at === 'claim' ? [] : [`${genuine.exchangeNumber}:succeeded`])
  })

  it.each(['throw', 'reject'] as const)(
    'fault: the store %ss while a delivery waits for the payment held elsewhere: the same 409 in_progress either way, logged, no handler',
    async (how) => {
      const cause = new Error('Connection is closed.')
      const base = memoryStore()
      // Another process holds the payment (the claim answers busy), and waiting for its end fails.
      const store: ReceiverStore = {
        ...base,
        claim: async () => ({ outcome: 'busy', retryAfterMs: 1000 }),
        awaitLeaseEnd: () => {
          if (how === 'throw') throw cause
          return Promise.reject(cause)
        },
      }
      const { url, runs, lines } = await app({ store })
      const reply = await deliver(url, await svc.pay('approve'))
      expect([reply.status, errorOf(reply).code]).toEqual([409, 'in_progress'])
      expect(reply.headers['retry-after']).toBeDefined()
      expect(lines.some((line) => (line.level === 'warn' || line.level === 'error') && line.details.err === cause)).toBe(true)
      expect(runs).toHaveLength(0)
    },
  )

  it.each(['throw', 'reject'] as const)('fault: the store %ss on complete, after the handlers: 503 store_unavailable, logged', async (how) => {
    const cause = new Error('READONLY You can\'t write against a read only replica.')
    const { url, runs, lines } = await app({ store: faultyStore({ complete: { error: cause, how } }) })
    const genuine = await svc.pay('approve')
    const reply = await deliver(url, genuine)
    expectOurs(reply, 'store_unavailable', lines, cause)
    expect(runs).toEqual([`${genuine.exchangeNumber}:succeeded`])
  })

  it("fault: the service's API is down (503): 503 confirmation_unavailable; the store's release failing too changes nothing; both logged", async () => {
    const releaseFault = new Error('connection reset')
    const { url, runs, lines } = await app({ environment: { baseUrl: apiDownUrl }, store: faultyStore({ release: { error: releaseFault, how: 'reject' } }) })
    const reply = await deliver(url, await svc.pay('approve'))
    expect(reply.status).toBe(503)
    expect(errorOf(reply).code).toBe('confirmation_unavailable')
    expect(lines.some((line) => line.level === 'error' && (line.details.err as { status?: number } | undefined)?.status === 503)).toBe(true)
    expectOurs(reply, 'confirmation_unavailable', lines, releaseFault)
    expect(runs).toHaveLength(0)
  })

  it('fault: the timeline write fails after the answer: the answer stays 200, the failure is logged', async () => {
    const cause = new Error('OOM command not allowed when used memory > maxmemory')
    const { url, receiver, runs, lines } = await app({ store: faultyStore({ appendTimeline: { error: cause, how: 'reject' } }) })
    const genuine = await svc.pay('approve')
    const reply = await deliver(url, genuine)
    expect([reply.status, reply.text]).toEqual([200, 'OK'])
    await receiver.flush()
    expect(lines.some((line) => line.level === 'error' && line.details.err === cause)).toBe(true)
    expect(runs).toEqual([`${genuine.exchangeNumber}:succeeded`])
  })

  it('fault: the tracer throws when a span starts: the answer stays 200, the failure is logged', async () => {
    const cause = new TypeError("Cannot read properties of undefined (reading 'startSpan')")
    const tracerProvider = { getTracer: () => ({ startSpan: () => { throw cause } }) }
    const { url, runs, lines } = await app({ telemetry: { api: otel as never, tracerProvider } })
    const genuine = await svc.pay('approve')
    const reply = await deliver(url, genuine)
    expect([reply.status, reply.text]).toEqual([200, 'OK'])
    expect(lines.some((line) => line.level === 'error' && line.details.err === cause)).toBe(true)
    expect(runs).toEqual([`${genuine.exchangeNumber}:succeeded`])
  })

  it('a request that really is malformed still gets its 4xx, and nothing is logged as an error', async () => {
    const { url, runs, lines } = await app()
    const malformed = await post(url, '/fpx/callback', { body: 'checksum=%zz', contentType: FORM })
    const genuine = await svc.pay('approve')
    const altered = await post(url, '/fpx/callback', { body: genuine.body.replace('transaction_amount=10.00', 'transaction_amount=1.00'), contentType: FORM })
    expect([malformed.status, errorOf(malformed).code]).toEqual([400, 'invalid_encoding'])
    expect([altered.status, errorOf(altered).code]).toEqual([401, 'checksum_mismatch'])
    expect(lines.filter((line) => line.level === 'error')).toEqual([])
    expect(runs).toHaveLength(0)
  })
}
