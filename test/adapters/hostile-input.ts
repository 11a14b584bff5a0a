/**
 * Input no adapter may crash on, be held up by, or run a handler for (issue 21's defects), written once and run by
 * the adapter contract against every framework and version over real HTTP.
 */
import { request as httpRequest } from 'node:http'
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { createReceiver } from '../../src/index.js'
import { samplePaymentFields } from '../../src/testing.js'
import { appsFor, errorOf, FORM, MAX_BODY_BYTES, type Open, post, type Reply, signed, TOKEN } from './harness.js'

interface RawPost {
  headers?: Record<string, string>
  /** The body, or the pieces to write one by one, `gapMs` apart. */
  body?: Buffer | string | (Buffer | string)[]
  gapMs?: number
}

/**
 * A POST with exactly the headers given (plus Content-Length of the whole body); resolves with the answer and
 * how many pieces had been written when it came.
 */
function rawPost(base: string, path: string, options: RawPost = {}): Promise<Reply & { written: number }> {
  const pieces = (Array.isArray(options.body) ? options.body : [options.body ?? '']).map((piece) => Buffer.from(piece))
  const length = pieces.reduce((sum, piece) => sum + piece.length, 0)
  const headers = { 'content-length': String(length), ...options.headers }
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(new URL(path, base), { method: 'POST', headers, agent: false }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('end', () => {
        outgoing.destroy()
        resolve({ status: response.statusCode ?? 0, headers: response.headers, text: Buffer.concat(chunks).toString('utf8'), written: at })
      })
      response.on('error', reject)
    })
    // The server may answer and close before the trickle ends: the answer is what counts.
    outgoing.on('error', () => undefined)
    const gap = options.gapMs ?? 0
    let at = 0
    const next = (): void => {
      if (outgoing.destroyed) return
      if (at === pieces.length) {
        outgoing.end()
        return
      }
      outgoing.write(pieces[at++])
      if (gap === 0) next()
      else setTimeout(next, gap)
    }
    next()
  })
}

/** Call inside the adapter contract's describe block, with the same `open`. */
export function hostileInputContract(open: Open): void {
  const start = appsFor(open)

  // A rejection left unhandled is what killed the Express process: none may happen during these tests.
  const unhandled: unknown[] = []
  const onUnhandled = (reason: unknown) => void unhandled.push(reason)
  beforeEach(() => {
    unhandled.length = 0
    process.on('unhandledRejection', onUnhandled)
  })
  afterEach(async () => {
    await new Promise((resolve) => setTimeout(resolve, 20))
    process.off('unhandledRejection', onUnhandled)
    expect(unhandled).toEqual([])
  })

  it('redirects to a URL built from a signed order number with CR/LF or non-Latin-1 text, percent-encoded, and keeps serving', async () => {
    const { url, runs } = await start({ successUrl: (payment: { orderNumber: string }) => `/orders/${payment.orderNumber}` })
    const orders = ['ORD-1\r\nSet-Cookie: owned=1', 'ORD-订单-2', 'ORD-3\u0000\u007f\u00e9']
    const replies = []
    for (const order of orders) replies.push(await post(url, '/fpx/redirect', signed(samplePaymentFields({ order_number: order }))))
    expect(replies.map((reply) => [reply.status, reply.headers.location, reply.headers['set-cookie']])).toEqual([
      [303, '/orders/ORD-1%0D%0ASet-Cookie:%20owned=1', undefined],
      [303, '/orders/ORD-%E8%AE%A2%E5%8D%95-2', undefined],
      [303, '/orders/ORD-3%00%7F%C3%A9', undefined],
    ])
    // Each result was handled once and stays handled: its redelivery is a duplicate.
    expect(runs.map((run) => run.payment.orderNumber)).toEqual(orders)
    const again = await post(url, '/fpx/callback', signed(samplePaymentFields({ order_number: orders[0] })))
    expect(again.status).toBe(200)
  })

  it("answers 500 when the app's onResult gives a header the framework refuses, the payment staying handled", async () => {
    const { url, runs } = await start({ onResult: () => ({ status: 200, headers: { 'x-order': 'a\r\nb' }, body: 'page' }) })
    const delivery = signed()
    const reply = await post(url, '/fpx/redirect', delivery)
    expect(reply.status).toBe(500)
    expect(runs).toHaveLength(1)
    // The server is still up, and the payment is not handled again.
    const callback = await post(url, '/fpx/callback', delivery)
    expect([callback.status, callback.text]).toEqual([200, 'OK'])
    expect(runs).toHaveLength(1)
  })

  it('refuses any Content-Encoding but identity with 415 unsupported_encoding, running nothing', async () => {
    const { url, runs } = await start()
    const { body, contentType } = signed()
    const cases: [string, Buffer | string][] = [
      ['gzip', gzipSync(body)],
      ['deflate', deflateSync(body)],
      ['br', brotliCompressSync(body)],
      ['x-unknown', body],
      // Plain bytes merely labelled gzip: verifiable as they are, yet never taken.
      ['gzip', body],
      ['identity, gzip', body],
      ['GZIP', body],
    ]
    for (const [encoding, bytes] of cases) {
      const reply = await rawPost(url, '/fpx/callback', { headers: { 'content-type': contentType, 'content-encoding': encoding }, body: bytes })
      expect([encoding, reply.status, errorOf(reply).code]).toEqual([encoding, 415, 'unsupported_encoding'])
    }
    const page = await rawPost(url, '/fpx/redirect', { headers: { 'content-type': contentType, 'content-encoding': 'gzip' }, body })
    expect([page.status, page.headers['content-type']]).toEqual([415, expect.stringMatching(/^text\/html/)])
    expect(page.text).toContain('unsupported_encoding')
    expect(runs).toHaveLength(0)
    const identity = await rawPost(url, '/fpx/callback', { headers: { 'content-type': contentType, 'content-encoding': 'identity' }, body })
    expect([identity.status, identity.text]).toEqual([200, 'OK'])
    expect(runs).toHaveLength(1)
  })

  it('refuses a signed amount whose sen would not be an exact integer with 400 invalid_fields', async () => {
    const { url, runs } = await start()
    for (const amount of ['90071992547409.92', '10000000000000.00', '99999999999999999999']) {
      const reply = await post(url, '/fpx/callback', signed(samplePaymentFields({ transaction_amount: amount })))
      expect([amount, reply.status, errorOf(reply).code]).toEqual([amount, 400, 'invalid_fields'])
    }
    expect(runs).toHaveLength(0)
    const largest = await post(url, '/fpx/callback', signed(samplePaymentFields({ transaction_amount: '9999999999999.99' })))
    expect(largest.status).toBe(200)
    expect(runs.map((run) => run.payment.amountSen)).toEqual([999999999999999])
  })

  it('links only an http(s) receipt_url on the built-in result page', async () => {
    const { url } = await start()
    // exchange_number 1, so that the genuine receipt address below names it, as the service's does.
    const page = async (receipt: string) =>
      (await post(url, '/fpx/redirect', signed(samplePaymentFields({ exchange_number: '1', receipt_url: receipt })))).text
    const hostile = ['javascript:alert(document.cookie)', 'data:text/html,<script>alert(1)</script>', 'JaVaScRiPt:alert(1)', 'not a url']
    for (const receipt of hostile) {
      // Refused unconfirmed (no service sends such an address), or shown without a link: never a link.
      const text = await page(receipt)
      expect(text).not.toContain('Download the receipt')
      expect(text).not.toContain('javascript:')
    }
    expect(await page('https://pay.example.test/v1/receipt/1.pdf')).toContain('<a href="https://pay.example.test/v1/receipt/1.pdf">Download the receipt</a>')
  })

  it('answers 408 body_timeout to a body trickled in past bodyTimeoutMs, and the handler never runs', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, maxBodyBytes: MAX_BODY_BYTES, bodyTimeoutMs: 300 })
    let runs = 0
    receiver.on('payment.succeeded', () => void runs++)
    const app = await open(receiver, {})
    try {
      const { body } = signed()
      const pieces = [...body.slice(0, 40)].concat(body.slice(40))
      const reply = await rawPost(app.url, '/fpx/callback', { headers: { 'content-type': FORM }, body: pieces, gapMs: 60 })
      expect([reply.status, errorOf(reply).code]).toEqual([408, 'body_timeout'])
      // Answered while the body was still trickling in, not once it ended.
      expect(reply.written).toBeLessThan(pieces.length)
      expect(runs).toBe(0)
      // A body that arrives in time is taken.
      const onTime = await rawPost(app.url, '/fpx/callback', { headers: { 'content-type': FORM }, body: [body.slice(0, 10), body.slice(10)], gapMs: 50 })
      expect([onTime.status, onTime.text]).toEqual([200, 'OK'])
      expect(runs).toBe(1)
    } finally {
      await app.close()
    }
  })
}
