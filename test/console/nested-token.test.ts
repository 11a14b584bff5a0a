import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { DEMO } from '../client/helpers.js'
import { type ConsoleRig, skipRedis, startConsoleRig } from './rig.js'
import { until } from './six-orders.js'

/**
 * renamed-token.test.ts renames `token` to `tokens`; the receiver now hides the Auth Token by value. A bracket name
 * does the same and more: `tokens[x]` (or `tokens[]`) sorts to the same place, and the `flat` rendering of a nested
 * message signs exactly the genuine string, so the checksum matches; the value then arrives nested (`tokens: {x}`),
 * where a check of top-level strings alone does not look.
 */
describe.skipIf(skipRedis)('the console shows no Auth Token a copy carries nested under a bracket name', () => {
  let rig: ConsoleRig

  beforeAll(async () => {
    rig = await startConsoleRig('express')
  }, 60_000)
  afterAll(async () => {
    await rig?.close()
  })

  /** Each copy of the genuine result, its values in the same signed order. */
  const copies: Record<string, (genuine: URLSearchParams) => [string, string][]> = {
    'tokens[x]': (genuine) => [...genuine].map(([name, value]) => [name === 'token' ? 'tokens[x]' : name, value]),
    'tokens[]': (genuine) => [...genuine].map(([name, value]) => [name === 'token' ? 'tokens[]' : name, value]),
    'tokens[a][b]': (genuine) => [...genuine].map(([name, value]) => [name === 'token' ? 'tokens[a][b]' : name, value]),
    // Two neighbours joined into one value: `status_url` and `token` as `status_urls` = `<url>|<token>`.
    'status_urls, joined with its neighbour': (genuine) =>
      [...genuine].flatMap(([name, value]): [string, string][] =>
        name === 'token' ? [] : name === 'status_url' ? [['status_urls', `${value}|${genuine.get('token')}`]] : [[name, value]],
      ),
  }

  for (const [renamed, copyOf] of Object.entries(copies))
    it(`leaves the token out of the delivered fields when it comes as ${renamed}`, async () => {
      const fields = samplePaymentFields({ uid: DEMO.uid, token: DEMO.authToken, order_number: `NESTED-${renamed.length}-${Date.now()}` })
      const genuine = new URLSearchParams(signCallback(fields, DEMO.checksumToken).body)
      const copy = new URLSearchParams(copyOf(genuine))
      const answer = await fetch(`${rig.appUrl}/fpx/callback`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: copy.toString() })
      expect(answer.status).toBe(200)
      await until('the copy in the inbox', async () => (await rig.receiver.inbox.list({ orderNumber: fields.order_number as string })).length, 1)
      const page = await fetch(`${rig.consoleUrl}/payment?order=${encodeURIComponent(fields.order_number as string)}`, { headers: { cookie: `shop_operator=${rig.operatorCookie}` } })
      const text = await page.text()
      expect(page.status).toBe(200)
      expect(text).toContain('table class="delivered"')
      expect(text).not.toContain(DEMO.authToken)
      const [item] = await rig.receiver.inbox.show(fields.exchange_number as string)
      expect(item).toBeDefined()
      expect(JSON.stringify(item?.fields)).not.toContain(DEMO.authToken)
    })
})
