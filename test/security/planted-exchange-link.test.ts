/**
 * The check-again link of a result whose exchange_number the buyer renamed: their own cancelled result, with
 * another payment's exchange_number typed as their name and renamed exchange_number. While that payment cannot be
 * confirmed yet (it is still at the bank) or in inbox mode (every redirect is queued and gets the page), the
 * redirect gets the checking page, whose link names that exchange_number; following it asked the API about the
 * other payment and handled its record: its handlers ran from the buyer's link, and the buyer was sent to the other
 * order's success URL. The link is bound to the order of the result it was made for.
 */
import { randomUUID } from 'node:crypto'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import express from 'express'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fpxCallback, fpxRedirect } from '../../adapters/express.js'
import type { PaymentEvent, ReceiverOptions, ReceiverStore } from '../../src/index.js'
import { redisStore } from '../../src/stores/redis/store.js'
import { formBody, indexOf, moved } from '../receiver/rearrange.js'
import { REDIS_URL, serviceAvailable } from '../stores/services.js'
import { DEMO, FORM, type Genuine, recorded, type Service, service } from './genuine.js'

let svc: Service
beforeAll(async () => {
  svc = await service()
})
afterAll(async () => {
  await svc.stop()
})

interface Shop {
  readonly url: string
  readonly events: PaymentEvent<unknown>[]
  close(): Promise<void>
}

async function shop(options: { store?: ReceiverStore<unknown>; inbox?: ReceiverOptions<unknown>['inbox'] } = {}): Promise<Shop> {
  const { receiver, events } = recorded({ environment: svc.environment, credentials: DEMO, ...options } as Partial<ReceiverOptions<unknown>>)
  const app = express()
  app.post('/fpx/callback', fpxCallback(receiver))
  app.all('/fpx/redirect', fpxRedirect(receiver, { successUrl: (payment) => `/orders/${payment.orderNumber}/paid`, failureUrl: '/checkout?failed=1' }))
  const server: Server = await new Promise((resolve) => {
    const started = app.listen(0, '127.0.0.1', () => resolve(started))
  })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    events,
    close: async () => {
      await new Promise((resolve) => server.close(resolve))
      await receiver.close?.()
    },
  }
}

function planted(own: Genuine): string {
  const pairs = moved(own.pairs, indexOf(own.pairs, 'buyer_name'), 'exchange_number')
  if (pairs === undefined) throw new Error('the copy could not be built')
  return formBody(pairs, own.checksum)
}

/** The checking page's link, as the browser follows it (GET, relative to the redirect route). */
function linkOf(page: string): string {
  const match = /<meta http-equiv="refresh" content="3;url=\?([^"]*)">/.exec(page)
  if (match === null) throw new Error(`no check-again link in ${page}`)
  return (match[1] as string).replaceAll('&#38;', '&')
}

/** Sends the copy as the buyer's redirect, follows its page's link once, and says what the buyer got. */
async function followCopy(app: Shop, copy: string, before?: () => Promise<unknown>): Promise<{ status: number; location: string; page: string }> {
  const first = await fetch(`${app.url}/fpx/redirect`, { method: 'POST', body: copy, headers: { 'content-type': FORM }, redirect: 'manual' })
  const firstPage = await first.text()
  expect(first.status).toBe(200)
  expect(firstPage).toContain('Confirming your payment')
  await before?.()
  const followed = await fetch(`${app.url}/fpx/redirect?${linkOf(firstPage)}`, { redirect: 'manual' })
  return { status: followed.status, location: followed.headers.get('location') ?? '', page: await followed.text() }
}

const redisUp = await serviceAvailable('Redis', REDIS_URL)

describe("a check-again link made for a result whose exchange_number is another payment's", () => {
  it('the other payment still at the bank: once it is paid, following the link neither runs its handler nor shows its order', async () => {
    const victimOrder = `VICTIM-${randomUUID().slice(0, 8)}`
    const victim = await svc.emulator.pay({ order_number: victimOrder, transaction_amount: '900.00' })
    const own = await svc.pay('cancel', { buyer_name: victim })
    const app = await shop()
    try {
      const followed = await followCopy(app, planted(own), () => svc.emulator.complete(victim, 'approve'))
      expect(followed.location).not.toContain(victimOrder)
      expect(followed.page).not.toContain(victimOrder)
      expect(followed.status).not.toBe(500)
      expect(app.events.filter((event) => event.payment.exchangeNumber === victim)).toEqual([])
    } finally {
      await app.close()
    }
  })

  it.skipIf(!redisUp)('inbox mode: following the link neither runs the other payment\'s handler nor shows its order', async () => {
    const redis = new Redis(REDIS_URL)
    const prefix = `fpx-planted-link:${randomUUID()}:`
    const victim = await svc.pay('approve', { transaction_amount: '900.00' })
    const own = await svc.pay('cancel', { buyer_name: victim.exchangeNumber })
    const app = await shop({ store: redisStore({ client: redis, prefix }) as ReceiverStore<unknown>, inbox: { pollMs: 20, backoff: { baseMs: 50, maxMs: 200 } } })
    try {
      const followed = await followCopy(app, planted(own))
      expect(followed.location).not.toContain(victim.orderNumber)
      expect(followed.page).not.toContain(victim.orderNumber)
      expect(followed.status).not.toBe(500)
      expect(app.events.filter((event) => event.payment.exchangeNumber === victim.exchangeNumber)).toEqual([])
      // The buyer's own genuine result still gets its checking page, and its link takes them on.
      const genuine = await followCopy(app, own.body)
      expect([genuine.status, genuine.location]).toEqual([303, '/checkout?failed=1'])
    } finally {
      await app.close()
      const keys = await redis.keys(`${prefix}*`)
      if (keys.length > 0) await redis.del(...keys)
      await redis.quit()
    }
  })

  it.skipIf(!redisUp)("inbox mode: a copy of the other payment's state first does not keep that payment's own result from being handled", async () => {
    const redis = new Redis(REDIS_URL)
    const prefix = `fpx-planted-link:${randomUUID()}:`
    const victim = await svc.pay('approve', { transaction_amount: '900.00' })
    // The buyer's own payment succeeds too: the copy's inbox entry stands for the other payment's success.
    const own = await svc.pay('approve', { buyer_name: victim.exchangeNumber })
    const app = await shop({ store: redisStore({ client: redis, prefix }) as ReceiverStore<unknown>, inbox: { pollMs: 20, backoff: { baseMs: 50, maxMs: 200 } } })
    try {
      const first = await fetch(`${app.url}/fpx/redirect`, { method: 'POST', body: planted(own), headers: { 'content-type': FORM }, redirect: 'manual' })
      expect(await first.text()).not.toContain(victim.orderNumber)
      await new Promise((resolve) => setTimeout(resolve, 300))
      const callback = await fetch(`${app.url}/fpx/callback`, { method: 'POST', body: victim.body, headers: { 'content-type': FORM } })
      expect(callback.status).toBe(200)
      const deadline = Date.now() + 5000
      const victims = () => app.events.filter((event) => event.payment.exchangeNumber === victim.exchangeNumber)
      while (victims().length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
      await new Promise((resolve) => setTimeout(resolve, 300))
      expect(victims()).toHaveLength(1)
      expect(victims()[0]?.payment).toMatchObject({ orderNumber: victim.orderNumber, amountSen: 90_000, state: 'succeeded' })
    } finally {
      await app.close()
      const keys = await redis.keys(`${prefix}*`)
      if (keys.length > 0) await redis.del(...keys)
      await redis.quit()
    }
  })

  it('a link made before links named their order (its first HMAC only) is answered as expired, a forged one as a forgery', async () => {
    const unknown = await svc.emulator.pay({ transaction_amount: '12.00' })
    const own = await svc.pay('cancel', { buyer_name: unknown })
    const app = await shop()
    try {
      // The buyer's own result, renamed so that its exchange_number is a payment still at the bank: the checking page.
      const first = await fetch(`${app.url}/fpx/redirect`, { method: 'POST', body: planted(own), headers: { 'content-type': FORM }, redirect: 'manual' })
      const link = new URLSearchParams(linkOf(await first.text()))
      const signature = link.get('fpx_sig') ?? ''
      expect(signature).toHaveLength(128)
      const follow = async (sig: string) => {
        link.set('fpx_sig', sig)
        const answer = await fetch(`${app.url}/fpx/redirect?${link}`, { redirect: 'manual' })
        await answer.text()
        return answer.status
      }
      expect(await follow(signature.slice(0, 64))).toBe(410)
      expect(await follow(`${signature.slice(0, 63)}${signature[63] === '0' ? '1' : '0'}`)).toBe(401)
    } finally {
      await app.close()
    }
  })
})
