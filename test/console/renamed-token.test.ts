import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { DEMO } from '../client/helpers.js'
import { type ConsoleRig, skipRedis, startConsoleRig } from './rig.js'
import { until } from './six-orders.js'

/**
 * A result may echo the Auth Token as `token` (spec: a field seen in signed messages), which the console hides by
 * its name. Names are not signed: the buyer, who holds the redirect, can resend it with `token` renamed to `tokens`
 * (still between `status_url` and `transaction_amount`, so the checksum still matches). The inbox keeps that copy's
 * fields, and the console must not print the Auth Token under its new name.
 */
describe.skipIf(skipRedis)('the console shows no Auth Token a renamed copy carries', () => {
  let rig: ConsoleRig

  beforeAll(async () => {
    rig = await startConsoleRig('express')
  }, 60_000)
  afterAll(async () => {
    await rig?.close()
  })

  it('leaves the token out of the delivered fields whatever its name', async () => {
    const fields = samplePaymentFields({ uid: DEMO.uid, token: DEMO.authToken })
    const genuine = new URLSearchParams(signCallback(fields, DEMO.checksumToken).body)
    // The buyer's copy: the same values in the same order, `token` renamed; the checksum is the genuine one.
    const copy = new URLSearchParams([...genuine].map(([name, value]) => [name === 'token' ? 'tokens' : name, value] as [string, string]))
    const answer = await fetch(`${rig.appUrl}/fpx/callback`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: copy.toString() })
    expect(answer.status).toBe(200)
    await until('the copy in the inbox', async () => (await rig.receiver.inbox.list({ orderNumber: fields.order_number as string })).length, 1)
    const page = await fetch(`${rig.consoleUrl}/payment?order=${encodeURIComponent(fields.order_number as string)}`, { headers: { cookie: `shop_operator=${rig.operatorCookie}` } })
    const text = await page.text()
    expect(page.status).toBe(200)
    expect(text).toContain('table class="delivered"')
    expect(text).toContain(fields.buyer_email as string)
    expect(text).not.toContain(DEMO.authToken)
  })
})
