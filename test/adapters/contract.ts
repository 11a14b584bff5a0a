/**
 * What every adapter must do, written once and run against each framework and version over real HTTP.
 * A framework file supplies `open`: start an app on 127.0.0.1:0 with POST /fpx/callback and POST /fpx/redirect.
 */
import { expect, it } from 'vitest'
import { samplePaymentFields } from '../../src/testing.js'
import {
  appsFor,
  errorOf,
  FORM,
  failedFields,
  type Open,
  oversizeBody,
  type PostOptions,
  pendingFields,
  post,
  signed,
  tampered,
} from './harness.js'
import { formBody, indexOf, moved, type Pairs, signedPairs } from '../receiver/rearrange.js'
import { confirmedAttackContract } from './confirmed-attacks.js'
import { appFaultContract } from './app-faults.js'
import { faultContract } from './faults.js'
import { hostileInputContract } from './hostile-input.js'

const EVIL_ORDER = `<b>ORD-1</b> & "quoted" 'single'`

/** The behaviour every adapter shares. Call inside a describe block. */
export function adapterContract(open: Open): void {
  const start = appsFor(open)
  hostileInputContract(open)
  confirmedAttackContract(open)
  faultContract(open)
  appFaultContract(open)

  it('answers a signed callback 200 OK and runs the handler once', async () => {
    const { url, runs } = await start()
    const fields = samplePaymentFields()
    const reply = await post(url, '/fpx/callback', signed(fields))
    expect(reply.status).toBe(200)
    expect(reply.text).toBe('OK')
    expect(reply.headers['content-type']).toMatch(/^text\/plain/)
    expect(runs.map((run) => [run.name, run.delivery, run.payment.orderNumber])).toEqual([['payment.succeeded', 'callback', fields.order_number]])
  })

  it('acknowledges a duplicate callback without running the handler again', async () => {
    const { url, runs } = await start()
    const delivery = signed()
    expect((await post(url, '/fpx/callback', delivery)).status).toBe(200)
    const again = await post(url, '/fpx/callback', delivery)
    expect([again.status, again.text]).toEqual([200, 'OK'])
    expect(runs).toHaveLength(1)
  })

  it('refuses a tampered callback with 401 and runs nothing', async () => {
    const { url, runs } = await start()
    const reply = await post(url, '/fpx/callback', { body: tampered(signed().body), contentType: FORM })
    expect(reply.status).toBe(401)
    expect(errorOf(reply).code).toBe('checksum_mismatch')
    expect(runs).toHaveLength(0)
  })

  it('refuses a genuine result replayed with a value moved into exchange_number, on either route, and takes the genuine one', async () => {
    const { url, runs } = await start()
    const fields = samplePaymentFields({ buyer_name: 'EX-PLANTED' })
    const genuine = signed(fields)
    const { pairs, checksum } = signedPairs(genuine.body)
    const replay = { body: formBody(moved(pairs, indexOf(pairs, 'buyer_name'), 'exchange_number') as Pairs, checksum), contentType: FORM }
    const callback = await post(url, '/fpx/callback', replay)
    expect([callback.status, errorOf(callback).code]).toEqual([400, 'needs_confirmation'])
    // The buyer's browser gets a page, not JSON, with the same status.
    expect((await post(url, '/fpx/redirect', replay)).status).toBe(400)
    expect((await post(url, '/fpx/callback', genuine)).status).toBe(200)
    expect(runs.map((run) => run.payment.exchangeNumber)).toEqual([fields.exchange_number])
  })

  it('refuses a body over maxBodyBytes with 413, with or without Content-Length', async () => {
    const { url, runs } = await start()
    const declared = await post(url, '/fpx/callback', { body: oversizeBody(), contentType: FORM })
    const chunked = await post(url, '/fpx/callback', { body: oversizeBody(), contentType: FORM, chunked: true })
    for (const reply of [declared, chunked]) {
      expect(reply.status).toBe(413)
      expect(errorOf(reply).code).toBe('body_too_large')
    }
    expect(runs).toHaveLength(0)
  })

  it('accepts a chunked body within the limit', async () => {
    const { url, runs } = await start()
    const reply = await post(url, '/fpx/callback', { ...signed(), chunked: true })
    expect([reply.status, reply.text]).toEqual([200, 'OK'])
    expect(runs).toHaveLength(1)
  })

  it('refuses a content type other than form or JSON with 415', async () => {
    const { url, runs } = await start()
    const reply = await post(url, '/fpx/callback', { body: signed().body, contentType: 'text/plain' })
    expect(reply.status).toBe(415)
    expect(errorOf(reply).code).toBe('unsupported_media_type')
    expect(runs).toHaveLength(0)
  })

  it('takes the fields from the query string when the body is empty', async () => {
    const { url, runs } = await start()
    const fields = samplePaymentFields()
    const reply = await post(url, `/fpx/callback?${signed(fields).body}`)
    expect([reply.status, reply.text]).toEqual([200, 'OK'])
    expect(runs.map((run) => run.payment.orderNumber)).toEqual([fields.order_number])
  })

  it("verifies fields appended after the callback URL's own query and hands that query over unsigned", async () => {
    const { url, runs } = await start()
    const fields = samplePaymentFields()
    const reply = await post(url, `/fpx/callback?shop=42&lang=ms&${signed(fields).body}`)
    expect([reply.status, reply.text]).toEqual([200, 'OK'])
    // Fields in the body, the redirect URL's own query beside them.
    const beside = await post(url, '/fpx/redirect?securepay_return=1', signed())
    expect(beside.status).toBe(200)
    expect(runs.map((run) => [run.delivery, { ...run.unsignedQuery }, 'shop' in run.fields])).toEqual([
      ['callback', { shop: '42', lang: 'ms' }, false],
      ['redirect', { securepay_return: '1' }, false],
    ])
    expect(runs[0]!.payment.orderNumber).toBe(fields.order_number)
    // A service field name before the signed fields is never taken as the URL's own.
    const smuggled = await post(url, `/fpx/callback?fpx_debit_auth_code=99&${signed(samplePaymentFields({ fpx_debit_auth_code: undefined })).body}`)
    expect([smuggled.status, errorOf(smuggled).code]).toEqual([401, 'checksum_mismatch'])
    expect(runs).toHaveLength(2)
  })

  it('answers every request of a mixed concurrent batch', async () => {
    const { url, runs } = await start({ successUrl: '/thanks' })
    const valid = signed()
    const cases: [PostOptions & { path?: string }, number][] = [
      [valid, 200],
      [valid, 200],
      [{ ...signed(), chunked: true }, 200],
      [{ body: tampered(signed().body), contentType: FORM }, 401],
      [{ body: oversizeBody(), contentType: FORM }, 413],
      [{ body: oversizeBody(), contentType: FORM, chunked: true }, 413],
      [{ body: signed().body, contentType: 'application/xml' }, 415],
      [{ body: 'checksum=%zz', contentType: FORM }, 400],
      [{}, 400],
      [{ ...signed(), path: '/fpx/redirect' }, 303],
      [{ body: tampered(signed().body), contentType: FORM, path: '/fpx/redirect' }, 401],
    ]
    const replies = await Promise.all(cases.map(([options]) => post(url, options.path ?? '/fpx/callback', options)))
    expect(replies.map((reply) => reply.status)).toEqual(cases.map(([, status]) => status))
    expect(runs).toHaveLength(3)
  })

  it('redirects the browser with 303 to the URL for the payment state', async () => {
    const { url, runs } = await start({ successUrl: '/paid', failureUrl: '/failed', pendingUrl: '/pending' })
    const paid = await post(url, '/fpx/redirect', signed())
    const failed = await post(url, '/fpx/redirect', signed(failedFields()))
    const pending = await post(url, '/fpx/redirect', signed(pendingFields()))
    expect([paid, failed, pending].map((reply) => [reply.status, reply.headers.location])).toEqual([
      [303, '/paid'],
      [303, '/failed'],
      [303, '/pending'],
    ])
    expect(runs.map((run) => [run.state, run.delivery])).toEqual([
      ['succeeded', 'redirect'],
      ['failed', 'redirect'],
      ['pending', 'redirect'],
    ])
    expect(runs[1]!.payment.failureCode).toBe('1C')
  })

  it('computes redirect URLs from the payment when they are functions', async () => {
    const to = (where: string) => (payment: { orderNumber: string }) => `/${where}?order=${encodeURIComponent(payment.orderNumber)}`
    const { url } = await start({ successUrl: to('paid'), failureUrl: to('failed'), pendingUrl: to('pending') })
    const cases = [samplePaymentFields(), failedFields(), pendingFields()]
    const replies = await Promise.all(cases.map((fields) => post(url, '/fpx/redirect', signed(fields))))
    expect(replies.map((reply) => [reply.status, reply.headers.location])).toEqual([
      [303, `/paid?order=${encodeURIComponent(String(cases[0]!.order_number))}`],
      [303, `/failed?order=${encodeURIComponent(String(cases[1]!.order_number))}`],
      [303, `/pending?order=${encodeURIComponent(String(cases[2]!.order_number))}`],
    ])
  })

  it('shows the built-in result page, HTML-escaped, when no URLs are given', async () => {
    const { url, runs } = await start()
    const reply = await post(url, '/fpx/redirect', signed(samplePaymentFields({ order_number: EVIL_ORDER })))
    expect(reply.status).toBe(200)
    expect(reply.headers['content-type']).toMatch(/^text\/html/)
    expect(reply.text).toContain('Payment successful')
    expect(reply.text).toContain('&#60;b&#62;ORD-1&#60;/b&#62; &#38; &#34;quoted&#34; &#39;single&#39;')
    expect(reply.text).not.toContain('<b>')
    expect(runs).toHaveLength(1)
  })

  it("answers with the app's onResult when given", async () => {
    const seen: [string, string | undefined, boolean][] = []
    const { url, runs } = await start({
      onResult: ({ response, payment }, context: unknown) => {
        seen.push([response.outcome, payment?.orderNumber, context !== undefined && context !== null])
        return { status: 202, headers: { 'x-own': 'yes' }, body: `own page for ${payment?.orderNumber ?? 'nobody'}` }
      },
    })
    const fields = samplePaymentFields()
    const reply = await post(url, '/fpx/redirect', signed(fields))
    expect([reply.status, reply.headers['x-own'], reply.text]).toEqual([202, 'yes', `own page for ${fields.order_number}`])
    const forged = await post(url, '/fpx/redirect', { body: tampered(signed().body), contentType: FORM })
    expect(forged.text).toBe('own page for nobody')
    expect(seen).toEqual([
      ['processed', fields.order_number, true],
      ['rejected', undefined, true],
    ])
    expect(runs).toHaveLength(1)
  })

  it('shows a forged redirect an HTML error page with 401 and runs nothing', async () => {
    const { url, runs } = await start({ successUrl: '/paid', failureUrl: '/failed' })
    const reply = await post(url, '/fpx/redirect', { body: tampered(signed(failedFields()).body, 'payment_status', 'true'), contentType: FORM })
    expect(reply.status).toBe(401)
    expect(reply.headers['content-type']).toMatch(/^text\/html/)
    expect(reply.headers.location).toBeUndefined()
    expect(reply.text).toContain('could not be verified')
    expect(() => JSON.parse(reply.text) as unknown).toThrow()
    expect(runs).toHaveLength(0)
  })

  it('redirects after its callback without running the handler again', async () => {
    const { url, runs } = await start({ successUrl: '/paid' })
    const delivery = signed()
    expect((await post(url, '/fpx/callback', delivery)).status).toBe(200)
    const reply = await post(url, '/fpx/redirect', delivery)
    expect([reply.status, reply.headers.location]).toEqual([303, '/paid'])
    expect(runs.map((run) => run.delivery)).toEqual(['callback'])
  })
}
