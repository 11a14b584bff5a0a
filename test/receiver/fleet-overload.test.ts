/**
 * A sale on a fleet (issue 37, point 3): three Express receivers over real HTTP share one Redis store and confirm
 * through an API slowed down as under load, and each payment's callback, its duplicate and the buyer's redirect
 * reach the three processes at the same moment. Whatever holds the claim, no buyer is shown an error page: the
 * redirect is sent on (303) or gets the page that says the payment is being confirmed and checks again. A delivery
 * that finds the payment held elsewhere waits for the holder (the store tells it when the lease ends); past that
 * wait, callbacks may be told to come back (409, 503, which the service retries); retried, every payment is
 * handled exactly once.
 */
import { randomUUID } from 'node:crypto'
import { once } from 'node:events'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import express from 'express'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fpxCallback, fpxRedirect } from '../../adapters/express.js'
import { createReceiver, type PaymentEvent } from '../../src/index.js'
import { WAITS_FOR_HOLDER_MS } from '../../src/receiver/dispatch.js'
import { redisStore } from '../../src/stores/redis/store.js'
import { faultyProxy, type FaultyProxy } from '../client/proxy.js'
import { DEMO, FORM, type Genuine, type Service, service } from '../security/genuine.js'
import { REDIS_URL, serviceAvailable } from '../stores/services.js'

const available = await serviceAvailable('Redis', REDIS_URL)
const PAYMENTS = 24
const API_DELAY_MS = 400

describe.skipIf(!available)('a fleet under a sale’s load', () => {
  let svc: Service
  let proxy: FaultyProxy
  const redis = new Redis(REDIS_URL)
  const prefix = `fpx-fleet-overload:${randomUUID()}:`
  const servers: Server[] = []
  const events: PaymentEvent[] = []
  const urls: string[] = []

  beforeAll(async () => {
    svc = await service()
    proxy = await faultyProxy(svc.emulator.url, 0, 503)
    for (let i = 0; i < 3; i++) {
      // Each its own receiver and store object, as in its own process; one Redis between them.
      const receiver = createReceiver({ environment: { baseUrl: proxy.baseUrl }, credentials: DEMO, store: redisStore({ client: redis, prefix }), logger: false })
      for (const name of ['payment.succeeded', 'payment.failed', 'payment.pending'] as const) receiver.on(name, (event) => void events.push(event))
      const app = express()
      app.post('/fpx/callback', fpxCallback(receiver))
      app.all('/fpx/redirect', fpxRedirect(receiver, { successUrl: (payment) => `/orders/${payment.orderNumber}`, failureUrl: '/checkout?failed=1' }))
      const server = app.listen(0, '127.0.0.1')
      await once(server, 'listening')
      servers.push(server)
      urls.push(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
    }
  })
  afterAll(async () => {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))))
    await proxy?.close()
    await svc?.stop()
    const keys = await redis.keys(`${prefix}*`)
    if (keys.length > 0) await redis.del(...keys)
    await redis.quit()
  })

  const post = async (url: string, body: string) => {
    const answer = await fetch(url, { method: 'POST', headers: { 'content-type': FORM }, body, redirect: 'manual' })
    return { status: answer.status, body: await answer.text() }
  }

  /** Each payment's callback to one process, its duplicate to the next, the redirect to the third, all at once. */
  const deliverAll = (paid: Genuine[]) =>
    Promise.all(
      paid.map(async (payment, i) => {
        const [callback, duplicate, redirect] = await Promise.all([
          post(`${urls[i % 3]}/fpx/callback`, payment.body),
          post(`${urls[(i + 1) % 3]}/fpx/callback`, payment.body),
          post(`${urls[(i + 2) % 3]}/fpx/redirect`, payment.body),
        ])
        return { payment, callbacks: [callback, duplicate], redirect }
      }),
    )
  const pay = async (count: number) => {
    const paid: Genuine[] = []
    for (let i = 0; i < count; i++) paid.push(await svc.pay(i % 4 === 3 ? 'reject' : 'approve'))
    return paid
  }
  const handledOnce = (paid: Genuine[]) => {
    const mine = events.filter((event) => paid.some((payment) => payment.exchangeNumber === event.payment.exchangeNumber))
    const handled = mine.map((event) => event.id).sort()
    expect(handled).toEqual([...new Set(handled)])
    expect(new Set(mine.map((event) => event.payment.exchangeNumber))).toEqual(new Set(paid.map((payment) => payment.exchangeNumber)))
  }

  it('waits for the process confirming a payment: every callback 200 and every buyer sent on, none told to come back', async () => {
    const paid = await pay(PAYMENTS)
    proxy.slowDown(API_DELAY_MS)
    const answers = await deliverAll(paid)
    proxy.slowDown(0)
    expect(answers.flatMap(({ callbacks }) => callbacks.map(({ status }) => status)).filter((status) => status !== 200)).toEqual([])
    expect(answers.map(({ redirect }) => redirect.status).filter((status) => status !== 303)).toEqual([])
    handledOnce(paid)
  }, 60_000)

  it('shows no buyer an error page when the confirmation outlasts the wait, and handles every payment once when the callbacks are retried', async () => {
    const paid = await pay(PAYMENTS / 2)
    proxy.slowDown(WAITS_FOR_HOLDER_MS + API_DELAY_MS)
    const answers = await deliverAll(paid)

    const errorPages = answers.filter(({ redirect }) => redirect.status >= 400)
    expect(errorPages.map(({ redirect }) => redirect.status)).toEqual([])
    const confirming = answers.filter(({ redirect }) => redirect.status === 200)
    for (const { redirect } of confirming) expect(redirect.body).toContain('Confirming your payment')
    for (const { redirect } of answers.filter(({ redirect }) => redirect.status === 303)) expect(redirect.body).toBe('')
    // The claim was held elsewhere past the wait for some of them, or the load did nothing and the test shows nothing.
    const toldToComeBack = answers.flatMap(({ callbacks }) => callbacks).filter(({ status }) => status !== 200)
    expect(confirming.length + toldToComeBack.length).toBeGreaterThan(0)
    for (const { status } of toldToComeBack) expect([409, 503]).toContain(status)

    // The service retries every callback not answered 200, until it is.
    proxy.slowDown(0)
    for (const { payment } of answers) {
      let status = 0
      for (let tries = 0; status !== 200 && tries < 20; tries++) {
        status = (await post(`${urls[0]}/fpx/callback`, payment.body)).status
        if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 200))
      }
      expect(status).toBe(200)
    }
    handledOnce(paid)
  }, 60_000)
})
