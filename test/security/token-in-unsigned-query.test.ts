/**
 * The redirect URL's own query parameters come before the service's fields and are not signed (unsignedQuery): the
 * buyer, who holds a result that echoes the Auth Token (`token`), can put the token's value there, as a value or a
 * name, and the result still verifies. The handlers' event hides the token in `fields` because handlers log events;
 * it must be hidden in `unsignedQuery` too, and in the "being confirmed" page, whose check-again link keeps the
 * URL's own parameters.
 */
import { describe, expect, it } from 'vitest'
import { fpxRedirect } from '../../adapters/web.js'
import { createReceiver, type PaymentEvent } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

const AUTH = 'Zq7mNb3Xk9Lp2Rt5Vw8Y'
const CHECKSUM = '0123456789abcdef'.repeat(4)
const UID = '0c0ffee0-d3e0-4a11-8f00-00000000d3e0'
const SET = { uid: UID, authToken: AUTH, checksumToken: CHECKSUM }

const genuine = () => signCallback(samplePaymentFields({ uid: UID, token: AUTH }), CHECKSUM, { format: 'form' }).body

const leading: [string, string][] = [
  ['as the value of a parameter of its own', `shop=42&back=${AUTH}`],
  ['as the name of a parameter of its own', `shop=42&${AUTH}=1`],
]

describe('the Auth Token in the redirect URL\'s own query parameters, before a genuine result', () => {
  it.each(leading)('%s: not in the event the handlers get', async (_name, own) => {
    const receiver = createReceiver({ signatureOnly: true, credentials: SET, logger: false })
    const events: PaymentEvent<unknown>[] = []
    receiver.onAny((event) => void events.push(event))
    const response = await receiver.handle({ kind: 'redirect', body: '', query: `${own}&${genuine()}` })
    expect(response.status).toBe(200)
    expect(events).toHaveLength(1)
    expect(events[0]?.unsignedQuery.shop).toBe('42')
    expect(JSON.stringify(events[0]?.unsignedQuery)).not.toContain(AUTH)
    expect(JSON.stringify(events)).not.toContain(AUTH)
  })

  it.each(leading)('%s: not in the "being confirmed" page', async (_name, own) => {
    // The API is not there: the buyer gets the page that checks again.
    const receiver = createReceiver({ environment: { baseUrl: 'http://127.0.0.1:9' }, credentials: SET, logger: false })
    receiver.onAny(() => {})
    const answer = await fpxRedirect(receiver)(new Request(`http://shop.test/fpx/return?${own}&${genuine()}`))
    const page = await answer.text()
    expect(page).toContain('shop=42')
    expect(page).not.toContain(AUTH)
    expect(JSON.stringify([...answer.headers])).not.toContain(AUTH)
  })
})

describe('the Auth Token added to a check-again link the buyer follows', () => {
  it('is not repeated in the next link of the "being confirmed" page', async () => {
    const receiver = createReceiver({ environment: { baseUrl: 'http://127.0.0.1:9' }, credentials: SET, logger: false })
    receiver.onAny(() => {})
    const redirect = fpxRedirect(receiver)
    const first = await (await redirect(new Request(`http://shop.test/fpx/return?shop=42&${genuine()}`))).text()
    const link = /<a href="\?([^"]+)">/.exec(first)?.[1]?.replaceAll('&#38;', '&')
    expect(link).toContain('fpx_sig=')
    // The link's own parameters are not signed: the buyer adds one.
    const answer = await redirect(new Request(`http://shop.test/fpx/return?${link}&back=${AUTH}&${AUTH}=1`))
    const page = await answer.text()
    expect(page).toContain('fpx_sig=')
    expect(page).toContain('shop=42')
    expect(page).not.toContain(AUTH)
  })
})
