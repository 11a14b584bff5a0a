/**
 * Faults of the merchant's app around the receiver, over real HTTP on every adapter: the app's onResult throws
 * (an Error, or anything else: a string, undefined), rejects, or answers something HTTP cannot carry; a successUrl
 * function throws or answers no URL text; the app's logger throws or rejects. Each adapter answers the same: a
 * fault of the app is a 500 with a code, the cause logged, never a 4xx, never the framework's own error page, and
 * never a fall-through to another route.
 */
import { afterEach, beforeEach, expect, it } from 'vitest'
import { createReceiver, type Logger } from '../../src/index.js'
import { samplePaymentFields } from '../../src/testing.js'
import { type AnyRedirectOptions, errorOf, FORM, MAX_BODY_BYTES, type Open, post, type Reply, signed, type Started, tampered, TOKEN } from './harness.js'

interface Line {
  level: keyof Logger
  details: Record<string, unknown>
  message: string
}

/** Call inside the adapter contract's describe block, with the same `open`. */
export function appFaultContract(open: Open): void {
  const started: Started[] = []
  const unhandled: unknown[] = []
  const onUnhandled = (reason: unknown) => void unhandled.push(reason)
  beforeEach(() => {
    unhandled.length = 0
    process.on('unhandledRejection', onUnhandled)
  })
  afterEach(async () => {
    await new Promise((resolve) => setTimeout(resolve, 20))
    process.off('unhandledRejection', onUnhandled)
    await Promise.all(started.splice(0).map((app) => app.close()))
    expect(unhandled).toEqual([])
  })

  async function app(redirect: AnyRedirectOptions, logger?: Logger | false) {
    const lines: Line[] = []
    const at = (level: keyof Logger) => (details: object, message: string) => void lines.push({ level, details: details as Record<string, unknown>, message })
    const receiver = createReceiver({
      signatureOnly: true,
      checksumToken: TOKEN,
      maxBodyBytes: MAX_BODY_BYTES,
      logger: logger ?? { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') },
    })
    const runs: string[] = []
    receiver.onAny((event) => void runs.push(event.id))
    const server = await open(receiver, redirect)
    started.push(server)
    return { url: server.url, runs, lines }
  }

  /** The buyer's page for a fault of the app: 500, HTML, the code on it; the payment stays handled. */
  async function expectAppFault(url: string, reply: Reply, runs: string[], delivery: ReturnType<typeof signed>): Promise<void> {
    expect([reply.status, reply.headers['content-type']], reply.text).toEqual([500, 'text/html; charset=utf-8'])
    expect(reply.text).toContain('internal_error')
    expect(reply.text).not.toMatch(/at .*\(.*:\d+:\d+\)/)
    expect(runs).toHaveLength(1)
    // The server still serves, and the payment is not handled again.
    const again = await post(url, '/fpx/callback', delivery)
    expect([again.status, again.text]).toEqual([200, 'OK'])
    expect(runs).toHaveLength(1)
  }

  const throwables: [string, () => unknown][] = [
    ['an Error', () => new Error('template page.html not found')],
    ["the string 'route'", () => 'route'],
    ["the string 'router'", () => 'router'],
    ['undefined', () => undefined],
    ['null', () => null],
  ]

  it.each(throwables)("onResult throws %s: 500 internal_error page, the cause logged", async (_name, make) => {
    const thrown = make()
    const { url, runs, lines } = await app({
      onResult: () => {
        throw thrown
      },
    })
    const delivery = signed()
    const reply = await post(url, '/fpx/redirect', delivery)
    await expectAppFault(url, reply, runs, delivery)
    const logged = lines.filter((line) => line.level === 'error' && 'err' in line.details)
    expect(logged.map((line) => line.details.err)).toEqual([thrown])
    expect(logged[0]!.message).toContain('onResult')
  })

  it.each(throwables)('onResult rejects with %s: 500 internal_error page, the cause logged', async (_name, make) => {
    const thrown = make()
    const { url, runs, lines } = await app({ onResult: () => Promise.reject(thrown) })
    const delivery = signed()
    await expectAppFault(url, await post(url, '/fpx/redirect', delivery), runs, delivery)
    expect(lines.filter((line) => line.level === 'error' && 'err' in line.details).map((line) => line.details.err)).toEqual([thrown])
  })

  it('onResult throws for a refused redirect: still 500 internal_error, not the refusal', async () => {
    const { url, runs } = await app({
      onResult: () => {
        throw new Error('boom')
      },
    })
    const reply = await post(url, '/fpx/redirect', { body: tampered(signed().body), contentType: FORM })
    expect([reply.status, reply.headers['content-type']]).toEqual([500, 'text/html; charset=utf-8'])
    expect(reply.text).toContain('internal_error')
    expect(runs).toHaveLength(0)
  })

  // successUrl, failureUrl and pendingUrl may be functions of the app too: one that fails is answered as onResult's.
  const failingUrls: [string, () => unknown][] = [
    ['throws an Error', () => {
      throw new Error('orders table is missing')
    }],
    ['throws null', () => {
      throw null
    }],
    ['answers a number', () => 42],
    ['rejects', async () => {
      throw new Error('orders table is missing')
    }],
  ]

  it('successUrl may be async (an order page looked up in the app\'s database): 303 to the URL it resolves to', async () => {
    const { url, runs } = await app({ successUrl: async (payment) => `/orders/${payment.orderNumber}` })
    const reply = await post(url, '/fpx/redirect', signed(samplePaymentFields({ order_number: 'ORD-ASYNC-1' })))
    expect([reply.status, reply.headers.location]).toEqual([303, '/orders/ORD-ASYNC-1'])
    expect(runs).toHaveLength(1)
  })

  it.each(failingUrls)('successUrl %s: 500 internal_error page, the cause logged, the payment handled once', async (_name, successUrl) => {
    const { url, runs, lines } = await app({ successUrl: successUrl as never })
    const delivery = signed()
    await expectAppFault(url, await post(url, '/fpx/redirect', delivery), runs, delivery)
    expect(lines.filter((line) => line.level === 'error' && 'err' in line.details)).toHaveLength(1)
  })

  const unsendable: [string, unknown][] = [
    ['nothing', undefined],
    ['null', null],
    ['status 99', { status: 99, body: 'x' }],
    ['status 1000', { status: 1000, body: 'x' }],
    ["status '200'", { status: '200', body: 'x' }],
    ['status 200.5', { status: 200.5, body: 'x' }],
    ['a header value with CR/LF', { headers: { 'x-order': 'a\r\nb' }, body: 'x' }],
    ['a header value with a control character', { headers: { 'x-order': 'a\u0001b' }, body: 'x' }],
    ['a header value outside Latin-1', { headers: { 'x-order': '订单' }, body: 'x' }],
    ['a header name with a space', { headers: { 'x order': 'a' }, body: 'x' }],
    ['a header value that is a number', { headers: { 'x-order': 1 }, body: 'x' }],
    ['a body that is an object', { body: { page: 'x' } }],
    ['a body that is a number', { body: 42 }],
  ]

  it.each(unsendable)('onResult answers %s: 500 internal_error page on every adapter, logged', async (_name, answer) => {
    const { url, runs, lines } = await app({ onResult: () => answer as never })
    const delivery = signed()
    await expectAppFault(url, await post(url, '/fpx/redirect', delivery), runs, delivery)
    expect(lines.filter((line) => line.level === 'error' && line.message.includes('onResult'))).toHaveLength(1)
  })

  const loggers: [string, () => Logger][] = [
    [
      'throws',
      () => {
        const fail = () => {
          throw new Error('log sink down')
        }
        return { debug: fail, info: fail, warn: fail, error: fail }
      },
    ],
    [
      'rejects (an async logger)',
      () => {
        const fail = async () => {
          throw new Error('log sink down')
        }
        return { debug: fail, info: fail, warn: fail, error: fail } as unknown as Logger
      },
    ],
    [
      'never answers (an async logger)',
      () => {
        const hang = () => new Promise<void>(() => {})
        return { debug: hang, info: hang, warn: hang, error: hang } as unknown as Logger
      },
    ],
  ]

  it.each(loggers)('the logger %s: every answer is the one it would be without it', async (_name, make) => {
    const { url, runs } = await app({ successUrl: '/paid' }, make())
    const delivery = signed()
    const callback = await post(url, '/fpx/callback', delivery)
    expect([callback.status, callback.text]).toEqual([200, 'OK'])
    const forged = await post(url, '/fpx/callback', { body: tampered(signed().body), contentType: FORM })
    expect([forged.status, errorOf(forged).code]).toEqual([401, 'checksum_mismatch'])
    const page = await post(url, '/fpx/redirect', signed())
    expect([page.status, page.headers.location]).toEqual([303, '/paid'])
    expect(runs).toHaveLength(2)
  })

  it.each(loggers)('the logger %s while onResult throws: still the 500 internal_error page', async (_name, make) => {
    const { url, runs } = await app(
      {
        onResult: () => {
          throw 'route'
        },
      },
      make(),
    )
    const delivery = signed()
    await expectAppFault(url, await post(url, '/fpx/redirect', delivery), runs, delivery)
  })
}
