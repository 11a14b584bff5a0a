import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import express from 'express'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fpxCallback, fpxConsole } from '../../adapters/express.js'
import { createReceiver, memoryStore } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { DEMO } from '../client/helpers.js'
import { type ConsoleRig, skipRedis, startConsoleRig } from './rig.js'

/**
 * A refused delivery is kept with the order and exchange_number it claimed, and the refusals page shows them. The
 * buyer holds a genuine result that echoes the Auth Token as `token`; names are not signed, so they can resend it
 * with every name changed and the token's value under `order_number` (the values still in the signed order: the
 * checksum matches). It is refused (no exchange_number, no payment_status), and the token must not be what the
 * page then shows as the claimed order, nor the claimed exchange_number of a forged one.
 */
/** A genuine result echoing the Auth Token, resent with the token's value under `order_number`. */
function tokenAsOrder(): URLSearchParams {
  const fields = samplePaymentFields({ uid: DEMO.uid, token: DEMO.authToken })
  const genuine = new URLSearchParams(signCallback(fields, DEMO.checksumToken).body)
  const names = Object.keys(fields).sort()
  const at = names.indexOf('token')
  // The same values in the same order: names before the token's sort before `order_number`, names after it after.
  const renamed = new Map(names.map((name, i) => [name, i < at ? `a${String(i).padStart(3, '0')}` : i === at ? 'order_number' : `z${String(i).padStart(3, '0')}`]))
  return new URLSearchParams([...genuine].map(([name, value]) => [name === 'checksum' ? name : (renamed.get(name) as string), value] as [string, string]))
}

describe.skipIf(skipRedis)('the refusals page shows no Auth Token a refused copy claims as its numbers', () => {
  let rig: ConsoleRig

  beforeAll(async () => {
    rig = await startConsoleRig('express')
  }, 60_000)
  afterAll(async () => {
    await rig?.close()
  })

  it('leaves the token out of the claimed numbers', async () => {
    const copy = tokenAsOrder()
    const fields = samplePaymentFields({ uid: DEMO.uid })
    const answer = await fetch(`${rig.appUrl}/fpx/callback`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: copy.toString() })
    expect(answer.status).toBeGreaterThanOrEqual(400)
    expect(await answer.text()).not.toContain(DEMO.authToken)
    // And a forged one, the token typed under exchange_number.
    const forged = signCallback({ ...fields, exchange_number: DEMO.authToken, token: 'x' }, 'ff'.repeat(32))
    const refused = await fetch(`${rig.appUrl}/fpx/callback`, { method: 'POST', headers: { 'content-type': forged.contentType }, body: forged.body })
    expect(refused.status).toBe(401)
    expect(rig.receiver.refusals().total).toBe(2)

    const page = await fetch(`${rig.consoleUrl}/refusals`, { headers: { cookie: `shop_operator=${rig.operatorCookie}` } })
    const text = await page.text()
    expect(page.status).toBe(200)
    expect(text).toContain('data-code="checksum_mismatch"')
    expect(text).not.toContain(DEMO.authToken)
    expect(JSON.stringify(rig.receiver.refusals())).not.toContain(DEMO.authToken)
  })
})

describe('a partner receiver’s refusals page shows no Auth Token a refused copy claims as its order', () => {
  it('leaves it out with the set its resolver gave, asking the resolver once', async () => {
    const asked: string[] = []
    const receiver = createReceiver({
      environment: { baseUrl: 'http://127.0.0.1:9' },
      resolveCredentials: (uid: string) => (asked.push(uid), uid === DEMO.uid ? DEMO : undefined),
      store: memoryStore(),
      logger: false,
      sweep: false,
    } as never)
    const app = express()
    app.post('/fpx/callback', fpxCallback(receiver))
    app.use('/admin/payments', fpxConsole(receiver, { authorize: () => 'Siti' }))
    const server = createServer(app)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    try {
      // The uid sorts after the token, so it keeps its name (z…): here it is put back under `uid` for the resolver.
      const copy = tokenAsOrder()
      const uidName = [...copy].find(([, value]) => value === DEMO.uid)?.[0] as string
      const body = new URLSearchParams([...copy].map(([name, value]) => [name === uidName ? 'uid' : name, value] as [string, string]))
      const answer = await fetch(`${url}/fpx/callback`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: body.toString() })
      expect(answer.status).toBeGreaterThanOrEqual(400)
      expect(asked).toEqual([DEMO.uid])
      const text = await (await fetch(`${url}/admin/payments/refusals`)).text()
      expect(text).toContain('<td class="claimed">-<br></td>')
      expect(text).not.toContain(DEMO.authToken)
    } finally {
      await receiver.close()
      await new Promise((resolve) => server.close(resolve))
    }
  })
})
