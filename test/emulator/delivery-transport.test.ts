import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { messageChecksum } from '../../src/core/result/checksum.js'
import { callbackRequestUrl } from '../../src/emulator/delivery.js'
import type { EmulatorOptions } from '../../src/emulator/index.js'
import { DEMO, type Emulator, launch } from './harness.js'
import { settled } from './delivery-merchant.js'

/**
 * How callbacks travel and what acknowledges them: a merchant endpoint (plain node:http, so nothing parses for
 * us) records each request exactly as it arrived and answers with the status the test sets.
 */
interface Received {
  url: string
  body: string
  contentType: string | undefined
}

const received: Received[] = []
let answer = 200
let location = '/thank-you'
let server: Server
let base: string

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      received.push({ url: req.url ?? '', body: Buffer.concat(chunks).toString('utf8'), contentType: req.headers['content-type'] })
      res.writeHead(answer, answer >= 300 && answer < 400 ? { location } : {}).end(answer < 300 ? 'OK' : '')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))
afterEach(() => {
  received.length = 0
  answer = 200
  location = '/thank-you'
})

const FAST = { attempts: 3, initialDelayMs: 5, maxDelayMs: 10, timeoutMs: 5000 }

async function withEmulator(options: EmulatorOptions, run: (emulator: Emulator, logged: string[]) => Promise<void>): Promise<void> {
  const logged: string[] = []
  const emulator = await launch({ log: (line) => logged.push(line), ...options })
  try {
    await run(emulator, logged)
  } finally {
    await emulator.stop()
  }
}

/** Creates a payment whose callback goes to `path` on the merchant endpoint, approves it, and waits for the delivery to settle. */
async function deliver(emulator: Emulator, path: string): Promise<{ exchangeNumber: string; delivery: Record<string, unknown> & { state: string } }> {
  const exchangeNumber = await emulator.pay({ callback_url: `${base}${path}` })
  await emulator.complete(exchangeNumber, 'approve')
  const [delivery] = await settled(emulator, exchangeNumber)
  return { exchangeNumber, delivery: delivery as unknown as Record<string, unknown> & { state: string } }
}

/** The fields a callback carried, checked against the demo Checksum Token as a merchant would. */
function signedFields(text: string): Record<string, string> {
  const fields = Object.fromEntries(new URLSearchParams(text))
  const { checksum, ...rest } = fields
  expect(messageChecksum(rest, DEMO.checksumToken)).toBe(checksum)
  return fields
}

describe('what acknowledges a callback', () => {
  it('a 302 (WordPress plugins redirect after handling) counts as delivered, with a warning', async () => {
    await withEmulator({ delivery: FAST }, async (emulator, logged) => {
      answer = 302
      const { exchangeNumber, delivery } = await deliver(emulator, '/?wc-api=securepay')
      expect(delivery.state).toBe('delivered')
      expect(received).toHaveLength(1)
      const message =
        'callback_url answered 302 (a redirect to /thank-you); counted as delivered only because a 3xx is tolerated outside strict mode ' +
        '(delivery.redirectCountsAsDelivered). A callback route should answer 2xx: a 3xx may mean the route sits behind a log-in ' +
        'redirect and never handled the result'
      expect(delivery.warnings).toEqual([message])
      const { warnings } = (await (await emulator.control(`/warnings?exchange_number=${exchangeNumber}`)).json()) as { warnings: Record<string, unknown>[] }
      expect(warnings).toEqual([expect.objectContaining({ source: 'delivery', where: `callback ${String(delivery.id)}`, message })])
      expect(logged.some((line) => line.includes(message))).toBe(true)
    })
  })

  it("a route behind a log-in redirect: the emulator's log names the page, never the query that may quote the result", async () => {
    await withEmulator({ delivery: FAST }, async (emulator, logged) => {
      answer = 303
      location = `${base}/login?next=${encodeURIComponent('/fpx/callback?exchange_number=X&checksum=abc')}`
      const { exchangeNumber, delivery } = await deliver(emulator, '/fpx/callback')
      expect(delivery.state).toBe('delivered')
      const line = logged.find((entry) => entry.includes(exchangeNumber))
      expect(line).toContain('fpx-collect emulator: warning: callback_url answered 303 (a redirect to /login)')
      expect(line).toContain('may mean the route sits behind a log-in redirect and never handled the result')
      expect(line).toContain('counted as delivered only because a 3xx is tolerated')
      expect(line).not.toContain('next=')
    })
  })

  it('strict mode counts only 2xx: a 302 is retried until the attempts run out', async () => {
    await withEmulator({ strict: true, delivery: FAST }, async (emulator) => {
      answer = 302
      const { delivery } = await deliver(emulator, '/cb')
      expect(delivery.state).toBe('failed')
      expect((delivery.attempts as { status: number }[]).map((attempt) => attempt.status)).toEqual([302, 302, 302])
      expect(delivery.warnings).toEqual([])
    })
  })

  it('redirectCountsAsDelivered: false makes a lenient emulator count only 2xx; true makes a strict one take 3xx', async () => {
    await withEmulator({ delivery: { ...FAST, redirectCountsAsDelivered: false } }, async (emulator) => {
      answer = 303
      expect((await deliver(emulator, '/cb')).delivery.state).toBe('failed')
    })
    await withEmulator({ strict: true, delivery: { ...FAST, redirectCountsAsDelivered: true } }, async (emulator) => {
      answer = 301
      expect((await deliver(emulator, '/cb')).delivery.state).toBe('delivered')
    })
  })

  it('a 4xx is still a failure', async () => {
    await withEmulator({ delivery: FAST }, async (emulator) => {
      answer = 404
      expect((await deliver(emulator, '/cb')).delivery.state).toBe('failed')
    })
  })
})

describe('callbackTransport', () => {
  it('both (default): the signed fields in a form-encoded body and the same fields after callback_url\'s own query', async () => {
    await withEmulator({ delivery: FAST }, async (emulator) => {
      const { exchangeNumber, delivery } = await deliver(emulator, '/fpx/callback?shop=42')
      expect(delivery.transport).toBe('both')
      const [request] = received
      expect(request?.url.startsWith('/fpx/callback?shop=42&')).toBe(true)
      expect(request?.contentType).toBe('application/x-www-form-urlencoded')
      const fromBody = signedFields(request?.body ?? '')
      expect(fromBody.exchange_number).toBe(exchangeNumber)
      expect(signedFields(request?.url.slice('/fpx/callback?shop=42&'.length) ?? '')).toEqual(fromBody)
    })
  })

  it('body: the signed fields in the body only, callback_url untouched', async () => {
    await withEmulator({ delivery: { ...FAST, callbackTransport: 'body' } }, async (emulator) => {
      const { exchangeNumber, delivery } = await deliver(emulator, '/fpx/callback?shop=42')
      expect(delivery.transport).toBe('body')
      const [request] = received
      expect(request?.url).toBe('/fpx/callback?shop=42')
      expect(request?.contentType).toBe('application/x-www-form-urlencoded')
      expect(signedFields(request?.body ?? '').exchange_number).toBe(exchangeNumber)
    })
  })

  it('query: an empty POST, the fields appended after callback_url\'s own query', async () => {
    await withEmulator({ delivery: { ...FAST, callbackTransport: 'query' } }, async (emulator) => {
      const { exchangeNumber, delivery } = await deliver(emulator, '/?securepay_return=dGltZW91dD0w&shop=42')
      expect(delivery).toMatchObject({ transport: 'query', callback_url: `${base}/?securepay_return=dGltZW91dD0w&shop=42` })
      const [request] = received
      expect(request?.body).toBe('')
      const query = (request?.url ?? '').slice('/?'.length)
      expect(query.startsWith('securepay_return=dGltZW91dD0w&shop=42&')).toBe(true)
      const serviceFields = query.slice('securepay_return=dGltZW91dD0w&shop=42&'.length)
      expect(signedFields(serviceFields).exchange_number).toBe(exchangeNumber)
    })
  })

  it('query without a query of its own starts one; both sends body and query', async () => {
    await withEmulator({ delivery: { ...FAST, callbackTransport: 'query' } }, async (emulator) => {
      await deliver(emulator, '/fpx/callback')
      expect(received[0]?.url.startsWith('/fpx/callback?')).toBe(true)
      signedFields(received[0]?.url.slice('/fpx/callback?'.length) ?? '')
    })
    received.length = 0
    await withEmulator({ delivery: { ...FAST, callbackTransport: 'both' } }, async (emulator) => {
      await deliver(emulator, '/fpx/callback?shop=42')
      const [request] = received
      const fromQuery = signedFields(request?.url.slice('/fpx/callback?shop=42&'.length) ?? '')
      expect(signedFields(request?.body ?? '')).toEqual(fromQuery)
    })
  })

  it('can be chosen in the configuration file', async () => {
    await withEmulator({ config: { delivery: { ...FAST, callbackTransport: 'query' } } }, async (emulator) => {
      const { delivery } = await deliver(emulator, '/cb')
      expect(delivery.transport).toBe('query')
      expect(received[0]?.body).toBe('')
    })
  })

  it('the configuration file refuses an unknown transport', async () => {
    await expect(launch({ config: { delivery: { callbackTransport: 'header' as 'body' } } })).rejects.toThrow(/callbackTransport/)
  })

  it('keeps a fragment after the appended fields and does not double a trailing ? or &', () => {
    expect(callbackRequestUrl('https://shop.test/cb?a=1#top', 'query', 'x=1')).toBe('https://shop.test/cb?a=1&x=1#top')
    expect(callbackRequestUrl('https://shop.test/cb?', 'query', 'x=1')).toBe('https://shop.test/cb?x=1')
    expect(callbackRequestUrl('https://shop.test/cb?a=1&', 'both', 'x=1')).toBe('https://shop.test/cb?a=1&x=1')
    expect(callbackRequestUrl('https://shop.test/cb?a=1', 'body', 'x=1')).toBe('https://shop.test/cb?a=1')
  })
})
