import type { RequestListener } from 'node:http'
import { Readable } from 'node:stream'
import { describe, expect, it, vi } from 'vitest'
import { fpxCallback, fpxRedirect, type WebHandler } from '../../adapters/web.js'
import { createReceiver } from '../../src/index.js'
import { samplePaymentFields } from '../../src/testing.js'
import { adapterContract } from './contract.js'
import { errorOf, FORM, MAX_BODY_BYTES, oversizeBody, pendingFields, post, recordedReceiver, serve, signed, tampered, TOKEN } from './harness.js'

/** Headers that describe the Node connection, not the message; the fetch Request sets its own framing. */
const CONNECTION_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'host'])

/** A tiny fetch-API server on node:http, as Hono's or Next.js's Node adapters do it. */
function bridge(routes: Record<string, WebHandler>): RequestListener {
  return (incoming, outgoing) => {
    const url = new URL(incoming.url ?? '/', `http://${incoming.headers.host ?? '127.0.0.1'}`)
    const handler = routes[url.pathname]
    if (handler === undefined || incoming.method !== 'POST') {
      outgoing.writeHead(404).end()
      return
    }
    const headers = new Headers()
    for (const [name, value] of Object.entries(incoming.headers))
      if (typeof value === 'string' && !CONNECTION_HEADERS.has(name)) headers.set(name, value)
    const body = Readable.toWeb(incoming) as ReadableStream<Uint8Array>
    handler(new Request(url, { method: 'POST', headers, body, duplex: 'half' })).then(
      async (response) => {
        outgoing.statusCode = response.status
        response.headers.forEach((value, name) => outgoing.setHeader(name, value))
        outgoing.end(Buffer.from(await response.arrayBuffer()))
      },
      (error: unknown) => outgoing.writeHead(500).end(String(error)),
    )
  }
}

describe('web adapter over HTTP', () => {
  adapterContract((receiver, redirect) =>
    serve(bridge({ '/fpx/callback': fpxCallback(receiver), '/fpx/redirect': fpxRedirect(receiver, redirect) })),
  )
})

describe('web adapter over HTTP, with a receiver function that throws (the app cannot make its receiver)', () => {
  it('answers 500 internal_error (JSON for a callback, the error page for the browser) and logs the cause', async () => {
    const cause = new Error('FPX_CHECKSUM_TOKEN is not set')
    const getReceiver = (): never => {
      throw cause
    }
    const errors: unknown[][] = []
    const spy = vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void errors.push(args))
    const started = await serve(bridge({ '/fpx/callback': fpxCallback(getReceiver), '/fpx/redirect': fpxRedirect(getReceiver, { successUrl: '/paid' }) }))
    try {
      const callback = await post(started.url, '/fpx/callback', signed())
      expect([callback.status, errorOf(callback).code]).toEqual([500, 'internal_error'])
      const page = await post(started.url, '/fpx/redirect', signed())
      expect([page.status, page.headers['content-type']]).toEqual([500, 'text/html; charset=utf-8'])
      expect(page.text).toContain('internal_error')
      expect(errors.filter((args) => (args[1] as { err?: unknown } | undefined)?.err === cause)).toHaveLength(2)
    } finally {
      spy.mockRestore()
      await started.close()
    }
  })
})

describe('web adapter called with Request objects', () => {
  const ORIGIN = 'https://shop.example.test'

  function request(path: string, init: { body?: string | ReadableStream<Uint8Array> | null; contentType?: string } = {}): Request {
    const headers = init.contentType === undefined ? undefined : { 'content-type': init.contentType }
    const streaming = init.body instanceof ReadableStream ? { duplex: 'half' as const } : {}
    return new Request(`${ORIGIN}${path}`, { method: 'POST', body: init.body ?? null, headers, ...streaming })
  }

  /** A long body that records how far it was read: past the limit, the reader should stop and cancel it. */
  function long(): { stream: ReadableStream<Uint8Array>; pulled: () => number; cancelled: () => boolean } {
    const piece = new TextEncoder().encode(`${signed().body}&`)
    let pulls = 0
    let cancelled = false
    const stream = new ReadableStream<Uint8Array>({
      pull: (controller) => {
        pulls += 1
        if (pulls > 10_000) controller.close()
        else controller.enqueue(piece)
      },
      cancel: () => void (cancelled = true),
    })
    return { stream, pulled: () => pulls, cancelled: () => cancelled }
  }

  it('answers a signed callback 200 OK once, a duplicate 200, a tampered one 401', async () => {
    const { receiver, runs } = recordedReceiver()
    const callback = fpxCallback(receiver)
    const delivery = signed()
    const first = await callback(request('/fpx/callback', delivery))
    expect([first.status, await first.text(), first.headers.get('content-type')]).toEqual([200, 'OK', 'text/plain; charset=utf-8'])
    const again = await callback(request('/fpx/callback', delivery))
    expect([again.status, await again.text()]).toEqual([200, 'OK'])
    const forged = await callback(request('/fpx/callback', { body: tampered(signed().body), contentType: FORM }))
    expect(forged.status).toBe(401)
    expect(await forged.json()).toMatchObject({ error: { code: 'checksum_mismatch' } })
    expect(runs).toHaveLength(1)
  })

  it('verifies a JSON callback and a streamed body', async () => {
    const { receiver, runs } = recordedReceiver()
    const callback = fpxCallback(receiver)
    expect((await callback(request('/fpx/callback', signed(undefined, { format: 'json' })))).status).toBe(200)
    const delivery = signed()
    const bytes = new TextEncoder().encode(delivery.body)
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < bytes.length; at += 100) controller.enqueue(bytes.subarray(at, at + 100))
        controller.close()
      },
    })
    expect((await callback(request('/fpx/callback', { body: stream, contentType: FORM }))).status).toBe(200)
    expect(runs).toHaveLength(2)
  })

  it('refuses an oversize body with 413, reading a stream no further than the limit', async () => {
    const { receiver, runs } = recordedReceiver()
    const callback = fpxCallback(receiver)
    const declared = await callback(request('/fpx/callback', { body: oversizeBody(), contentType: FORM }))
    const body = long()
    const streamed = await callback(request('/fpx/callback', { body: body.stream, contentType: FORM }))
    for (const response of [declared, streamed]) {
      expect(response.status).toBe(413)
      expect(await response.json()).toMatchObject({ error: { code: 'body_too_large', message: `the body is larger than ${MAX_BODY_BYTES} bytes` } })
    }
    expect(body.pulled()).toBeLessThan(20)
    expect(body.cancelled()).toBe(true)
    expect(runs).toHaveLength(0)
  })

  it("files a body stream's failure as the sender's only when the connection was cut: a platform fault is ours (500)", async () => {
    const lines: [string, Record<string, unknown>][] = []
    const logger = { debug() {}, info() {}, warn: (details: object) => void lines.push(['warn', details as Record<string, unknown>]), error: (details: object) => void lines.push(['error', details as Record<string, unknown>]) }
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, logger })
    receiver.onAny(() => {})
    /** A body whose first piece arrives, then the stream fails with `error`. */
    const failing = (error: unknown) =>
      new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(signed().body.slice(0, 40)))
          controller.error(error)
        },
      })
    const platform = new TypeError('timer.unref is not a function')
    const cases: [unknown, number, string][] = [
      [platform, 500, 'internal_error'],
      [Object.assign(new Error('aborted'), { code: 'ECONNRESET' }), 400, 'malformed_body'],
      [new DOMException('The connection was closed.', 'AbortError'), 400, 'malformed_body'],
    ]
    for (const [error, status, code] of cases) {
      const response = await fpxCallback(receiver)(request('/fpx/callback', { body: failing(error), contentType: FORM }))
      expect([response.status, ((await response.json()) as { error: { code: string } }).error.code]).toEqual([status, code])
    }
    // Each cause logged: ours as an error, a cut connection as a warning (the reader's error wraps it).
    const logged = lines.filter(([, details]) => details.err !== undefined)
    expect(logged.map(([level, details]) => [level, (details.err as Error).cause ?? details.err])).toEqual(cases.map(([error, status]) => [status === 500 ? 'error' : 'warn', error]))
  })

  it('refuses other content types with 415', async () => {
    const { receiver } = recordedReceiver()
    const response = await fpxCallback(receiver)(request('/fpx/callback', { body: signed().body, contentType: 'multipart/form-data; boundary=x' }))
    expect(response.status).toBe(415)
  })

  it('takes the fields from the query string when there is no body', async () => {
    const { receiver, runs } = recordedReceiver()
    const fields = samplePaymentFields()
    const response = await fpxCallback(receiver)(request(`/fpx/callback?${signed(fields).body}`))
    expect([response.status, await response.text()]).toEqual([200, 'OK'])
    expect(runs.map((run) => run.payment.orderNumber)).toEqual([fields.order_number])
  })

  it("verifies a GET redirect whose fields follow the URL's own query", async () => {
    const { receiver, runs } = recordedReceiver()
    const handler = fpxRedirect(receiver, { successUrl: '/paid' })
    const response = await handler(new Request(`${ORIGIN}/fpx/redirect?shop=42&${signed().body}`))
    expect([response.status, response.headers.get('location')]).toEqual([303, '/paid'])
    expect(runs.map((run) => ({ ...run.unsignedQuery }))).toEqual([{ shop: '42' }])
  })

  it('explains a body the app already read instead of calling it malformed', async () => {
    const { receiver, runs } = recordedReceiver()
    const used = request('/fpx/callback', signed())
    await used.formData()
    const response = await fpxCallback(receiver)(used)
    expect(response.status).toBe(500)
    const { error } = (await response.json()) as { error: { code: string; message: string } }
    expect(error.code).toBe('body_already_parsed')
    expect(error.message).toContain('request.formData()')
    // Advice in the fetch API's terms: there is no body parser to move and no rawBody to keep.
    expect(error.message).toContain('await request.clone().formData()')
    expect(error.message).not.toMatch(/rawBody|body parser/)
    expect(runs).toHaveLength(0)
    // Following it: the app reads a clone, fpx-collect the original.
    const fields = samplePaymentFields()
    const original = request('/fpx/callback', signed(fields))
    expect((await original.clone().formData()).get('exchange_number')).toBe(fields.exchange_number)
    expect((await fpxCallback(receiver)(original)).status).toBe(200)
    expect(runs).toHaveLength(1)
  })

  it('takes a function that answers the receiver, called per request and never before the first (a build without secrets)', async () => {
    const { receiver, runs } = recordedReceiver()
    let calls = 0
    const getReceiver = () => {
      calls += 1
      return receiver
    }
    const callback = fpxCallback(getReceiver)
    const redirect = fpxRedirect(getReceiver, { successUrl: '/paid' })
    expect(calls).toBe(0)
    const delivery = signed()
    expect((await callback(request('/fpx/callback', delivery))).status).toBe(200)
    // The redirect route shares the receiver the function keeps answering: the result is handled once.
    expect((await redirect(request('/fpx/redirect', delivery))).status).toBe(303)
    expect(calls).toBe(2)
    expect(runs).toHaveLength(1)
  })

  it('redirects with 303 and no body, after the callback without a second run', async () => {
    const { receiver, runs } = recordedReceiver()
    const redirect = fpxRedirect(receiver, { successUrl: `${ORIGIN}/paid`, pendingUrl: (payment) => `/wait/${payment.exchangeNumber}` })
    const delivery = signed()
    expect((await fpxCallback(receiver)(request('/fpx/callback', delivery))).status).toBe(200)
    const paid = await redirect(request('/fpx/redirect', delivery))
    expect([paid.status, paid.headers.get('location'), paid.body]).toEqual([303, `${ORIGIN}/paid`, null])
    const fields = pendingFields()
    const pending = await redirect(request('/fpx/redirect', signed(fields)))
    expect([pending.status, pending.headers.get('location')]).toEqual([303, `/wait/${fields.exchange_number}`])
    expect(runs.map((run) => [run.state, run.delivery])).toEqual([
      ['succeeded', 'callback'],
      ['pending', 'redirect'],
    ])
  })

  it('shows the result page, or an HTML error page for a forged redirect, and passes the Request to onResult', async () => {
    const { receiver, runs } = recordedReceiver()
    const page = await fpxRedirect(receiver)(request('/fpx/redirect', signed(samplePaymentFields({ order_number: 'A&B<1>' }))))
    expect([page.status, page.headers.get('content-type')]).toEqual([200, 'text/html; charset=utf-8'])
    expect(await page.text()).toContain('A&#38;B&#60;1&#62;')
    const forged = await fpxRedirect(receiver)(request('/fpx/redirect', { body: tampered(signed().body), contentType: FORM }))
    expect([forged.status, forged.headers.get('content-type')]).toEqual([401, 'text/html; charset=utf-8'])
    expect(await forged.text()).toContain('could not be verified')
    const seen: string[] = []
    const own = fpxRedirect(receiver, { onResult: (result, context) => (seen.push(context.url), { body: result.response.outcome }) })
    expect(await (await own(request('/fpx/redirect?from=bank', signed()))).text()).toBe('processed')
    expect(seen).toEqual([`${ORIGIN}/fpx/redirect?from=bank`])
    expect(runs).toHaveLength(2)
  })
})
