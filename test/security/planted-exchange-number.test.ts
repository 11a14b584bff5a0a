/**
 * A hostile buyer who knows another payment's exchange_number (a receipt, a status address, a shared screenshot)
 * types it as their name, pays nothing (cancels at the bank), and sends their genuine signed result to the redirect
 * route with their name renamed exchange_number: the checksum still matches, since it signs values, not names. The
 * receiver confirms the value it reads as exchange_number and handles the API's record of it, which is that
 * payment's genuine record (as the sweeper would); but the buyer's page showed it: the cancelled buyer was sent to the
 * other order's success URL (its order number in the Location), or shown its order and amount.
 */
import type { AddressInfo } from 'node:net'
import type { Server } from 'node:http'
import express from 'express'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fpxCallback, fpxRedirect } from '../../adapters/express.js'
import { formBody, indexOf, moved } from '../receiver/rearrange.js'
import { DEMO, FORM, type Genuine, recorded, type Service, service } from './genuine.js'

let svc: Service
beforeAll(async () => {
  svc = await service()
})
afterAll(async () => {
  await svc.stop()
})

async function shop(): Promise<{ url: string; events: ReturnType<typeof recorded>['events']; close(): Promise<void> }> {
  const { receiver, events } = recorded({ environment: svc.environment, credentials: DEMO })
  const app = express()
  app.post('/fpx/callback', fpxCallback(receiver))
  app.all('/fpx/redirect', fpxRedirect(receiver, { successUrl: (payment) => `/orders/${payment.orderNumber}/paid`, failureUrl: '/checkout?failed=1' }))
  const server: Server = await new Promise((resolve) => {
    const started = app.listen(0, '127.0.0.1', () => resolve(started))
  })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { url, events, close: () => new Promise((resolve) => server.close(() => resolve())) }
}

/** The buyer's own cancelled result with their name (the other payment's exchange_number) renamed exchange_number. */
function planted(own: Genuine): string {
  const pairs = moved(own.pairs, indexOf(own.pairs, 'buyer_name'), 'exchange_number')
  if (pairs === undefined) throw new Error('the copy could not be built')
  return formBody(pairs, own.checksum)
}

describe("a redirect whose exchange_number is another payment's, typed by the buyer as their name", () => {
  it.each([
    ['handled already', true],
    ['not delivered yet', false],
  ])('the other payment %s: no page or success URL of its order, and no handler gets anything but its own record', async (_name, handledFirst) => {
    const victim = await svc.pay('approve', { transaction_amount: '900.00', buyer_name: 'Someone Else' })
    const own = await svc.pay('cancel', { buyer_name: victim.exchangeNumber })
    const app = await shop()
    try {
      if (handledFirst) {
        const callback = await fetch(`${app.url}/fpx/callback`, { method: 'POST', body: victim.body, headers: { 'content-type': FORM } })
        expect(callback.status).toBe(200)
      }
      const before = app.events.length
      const reply = await fetch(`${app.url}/fpx/redirect`, { method: 'POST', body: planted(own), headers: { 'content-type': FORM }, redirect: 'manual' })
      const page = await reply.text()
      expect(reply.headers.get('location') ?? '').not.toContain(victim.orderNumber)
      expect(page).not.toContain(victim.orderNumber)
      expect(reply.status).not.toBe(500)
      expect(reply.status).toBe(400)
      // At most the other payment's own record was handled, once, as the API has it: never the buyer's values.
      const theirs = app.events.slice(before)
      expect(theirs.length).toBeLessThanOrEqual(handledFirst ? 0 : 1)
      for (const event of theirs) expect(event.payment).toMatchObject({ exchangeNumber: victim.exchangeNumber, orderNumber: victim.orderNumber, amountSen: 90_000, state: 'succeeded' })
      // The buyer's own genuine result still gets its own page.
      const genuine = await fetch(`${app.url}/fpx/redirect`, { method: 'POST', body: own.body, headers: { 'content-type': FORM }, redirect: 'manual' })
      expect([genuine.status, genuine.headers.get('location')]).toEqual([303, '/checkout?failed=1'])
      expect(app.events.map((event) => event.payment.exchangeNumber)).toContain(own.exchangeNumber)
      expect(app.events.filter((event) => event.payment.exchangeNumber === victim.exchangeNumber).length).toBeLessThanOrEqual(1)
    } finally {
      await app.close()
    }
  })
})
