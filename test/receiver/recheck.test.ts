/**
 * The "being confirmed" page a redirect gets while its result cannot be confirmed yet: it follows a link of the
 * receiver's own, signed, that names the payment and nothing else (a result may echo the merchant's Auth Token,
 * and a URL lands in browser history and access logs); following it asks the API again and handles the payment.
 */
import { inspect } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { answerDelivery, createReceiver, type PaymentEvent } from '../../src/index.js'
import { memoryStore } from '../../src/stores/memory/store.js'
import { signCallback } from '../../src/testing.js'
import { faultyProxy } from '../client/proxy.js'
import { DEMO, FORM, type Service, service } from '../security/genuine.js'

let svc: Service
beforeAll(async () => {
  svc = await service()
})
afterAll(async () => {
  await svc.stop()
})

/** The query of the page's refresh link, as a browser would request it. */
function linkOf(body: string): string {
  const match = /<meta http-equiv="refresh" content="3;url=\?([^"]*)">/.exec(body)
  if (match === null) throw new Error(`no check-again link in ${body}`)
  return (match[1] as string).replaceAll('&#38;', '&').replaceAll('&amp;', '&')
}

describe('the check-again link of a redirect not confirmed yet', () => {
  it('names the payment only, and once the API answers, following it handles the payment and sends the buyer on', async () => {
    // The API fails its first answer (a real proxy in front of the emulator), then answers.
    const proxy = await faultyProxy(svc.emulator.url, 1000, 503)
    const receiver = createReceiver({ environment: { baseUrl: proxy.baseUrl }, credentials: DEMO, logger: false })
    const events: PaymentEvent[] = []
    receiver.on('payment.succeeded', (event) => void events.push(event))
    try {
      const genuine = await svc.pay('approve', { buyer_name: 'Siti Aminah' })
      // A result that echoes the merchant's Auth Token, as some real results do: it never reaches the page.
      const withToken = signCallback({ ...genuine.fields, token: DEMO.authToken }, DEMO.checksumToken).body
      const page = await answerDelivery(receiver, { kind: 'redirect', body: withToken, contentType: FORM, query: 'shop=42' }, { successUrl: '/paid' }, undefined)
      expect(page.status).toBe(200)
      expect(page.body).toContain('Confirming your payment')
      expect(events).toHaveLength(0)
      const link = linkOf(page.body)
      expect(page.body).not.toContain(DEMO.authToken)
      expect(page.body).not.toContain('Siti')
      const query = new URLSearchParams(link)
      expect([...query.keys()]).toEqual(['shop', 'fpx_recheck', 'fpx_exchange_number', 'fpx_uid', 'fpx_at', 'fpx_sig'])
      expect(query.get('fpx_exchange_number')).toBe(genuine.exchangeNumber)

      proxy.heal()
      const followed = await answerDelivery(receiver, { kind: 'redirect', body: '', query: link }, { successUrl: '/paid' }, undefined)
      expect(followed).toMatchObject({ status: 303, headers: { location: '/paid' } })
      expect(events).toHaveLength(1)
      expect(events[0]).toMatchObject({ confirmed: true, delivery: 'redirect', payment: { exchangeNumber: genuine.exchangeNumber } })
      // The redirect URL's own parameters, which the link kept, reach the handler as the redirect's would have.
      expect({ ...events[0]?.unsignedQuery }).toEqual({ shop: '42' })
      // Followed again (a reload): the payment is handled already, and the handler does not run again.
      expect(await answerDelivery(receiver, { kind: 'redirect', body: '', query: link }, { successUrl: '/paid' }, undefined)).toMatchObject({ status: 303 })
      expect(events).toHaveLength(1)
    } finally {
      await proxy.close()
    }
  })

  it('refuses a link this receiver did not make: another payment, another count, another signature', async () => {
    const proxy = await faultyProxy(svc.emulator.url, 1000, 503)
    const receiver = createReceiver({ environment: { baseUrl: proxy.baseUrl }, credentials: DEMO, logger: false })
    receiver.on('payment.succeeded', () => {})
    try {
      const genuine = await svc.pay('approve')
      const other = await svc.pay('approve')
      const page = await answerDelivery(receiver, { kind: 'redirect', body: genuine.body, contentType: FORM }, {}, undefined)
      const link = new URLSearchParams(linkOf(page.body))
      proxy.heal()
      const altered = (name: string, value: string) => {
        const copy = new URLSearchParams(link)
        copy.set(name, value)
        return copy.toString()
      }
      const later = String(Number(link.get('fpx_at')) + 3600)
      for (const query of [altered('fpx_exchange_number', other.exchangeNumber), altered('fpx_recheck', '1000'), altered('fpx_sig', '0'.repeat(64)), altered('fpx_uid', 'someone-else'), altered('fpx_at', later)]) {
        const answer = await receiver.handle({ kind: 'redirect', body: '', query })
        expect(answer).toMatchObject({ status: 401, error: { code: 'checksum_mismatch' } })
      }
      expect(proxy.requests.filter((request) => request.includes(other.exchangeNumber))).toHaveLength(0)
    } finally {
      await proxy.close()
    }
  })

  it('expires: a link older than half an hour is answered 410 without asking the API', async () => {
    const proxy = await faultyProxy(svc.emulator.url, 1000, 503)
    const receiver = createReceiver({ environment: { baseUrl: proxy.baseUrl }, credentials: DEMO, logger: false })
    receiver.on('payment.succeeded', () => {})
    try {
      const genuine = await svc.pay('approve')
      const page = await answerDelivery(receiver, { kind: 'redirect', body: genuine.body, contentType: FORM }, {}, undefined)
      const link = linkOf(page.body)
      const asked = proxy.requests.length
      const realNow = Date.now
      Date.now = () => realNow() + 31 * 60_000
      try {
        const answer = await answerDelivery(receiver, { kind: 'redirect', body: '', query: link }, {}, undefined)
        expect(answer.status).toBe(410)
        expect(answer.body).toContain('stopped checking')
      } finally {
        Date.now = realNow
      }
      expect(proxy.requests.length).toBe(asked)
    } finally {
      await proxy.close()
    }
  })

  it('is not offered by a signature-only receiver, which has no API to ask', async () => {
    // Its store fails the claim: the result is verified but cannot be handled yet.
    const store = memoryStore()
    const receiver = createReceiver({ checksumToken: DEMO.checksumToken, signatureOnly: true, logger: false, store: { ...store, claim: () => Promise.reject(new Error('store down')) } })
    receiver.on('payment.succeeded', () => {})
    const genuine = await svc.pay('approve')
    const page = await answerDelivery(receiver, { kind: 'redirect', body: genuine.body, contentType: FORM }, {}, undefined)
    expect(page.status).toBe(503)
    expect(page.body).toContain('Error code: store_unavailable')
    expect(page.body).not.toContain('fpx_sig')
  })
})

describe('a result that echoes the Auth Token', () => {
  it('shows its token field as [redacted] to the handlers and in the answer', async () => {
    const receiver = createReceiver({ environment: svc.environment, credentials: DEMO, logger: false, timeline: false })
    const seen: PaymentEvent[] = []
    receiver.on('payment.succeeded', (event) => void seen.push(event))
    const genuine = await svc.pay('approve')
    const withToken = signCallback({ ...genuine.fields, token: DEMO.authToken }, DEMO.checksumToken).body
    const verified = await receiver.verify({ body: withToken, contentType: FORM })
    expect(verified.fields.token).toBe('[redacted]')
    expect(JSON.stringify(verified)).not.toContain(DEMO.authToken)
    // As console.log and loggers that inspect objects print it: the parsed message is not shown.
    expect(inspect(verified, { depth: 10, showHidden: true })).not.toContain(DEMO.authToken)
    const answer = await receiver.handle({ kind: 'callback', body: withToken, contentType: FORM })
    expect(answer.outcome).toBe('processed')
    expect(JSON.stringify(answer)).not.toContain(DEMO.authToken)
    expect(inspect(answer, { depth: 10, showHidden: true })).not.toContain(DEMO.authToken)
    expect(JSON.stringify(seen[0]?.fields ?? {})).not.toContain(DEMO.authToken)
    expect(inspect(seen[0], { depth: 10, showHidden: true })).not.toContain(DEMO.authToken)
  })
})
