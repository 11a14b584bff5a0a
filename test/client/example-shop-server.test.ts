import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startExpressShop } from '../../examples/express/app.js'
import { startFastifyShop } from '../../examples/fastify/app.js'
import { startKoaShop } from '../../examples/koa/app.js'
import { configFromEnv, type RunningShop, type ShopConfig, type StartOptions } from '../../examples/shared/shop.js'
import { startWebShop } from '../../examples/web/app.js'
import { DEMO, type Emulator, launch } from './helpers.js'

/**
 * The example shops creating payments the production way (paymentCreation 'server'): the shop's server calls
 * createPayment and the buyer's browser follows a 303 to the service's page, so no page of the shop carries the
 * Auth Token. Every framework's app, because each writes the redirect's status and Location itself.
 */
let emulator: Emulator
beforeAll(async () => {
  emulator = await launch()
})
afterAll(() => emulator.stop())

const BUYER = { name: 'Tan Mei Ling', email: 'mei@example.com', phone: '+60129876543', amount: '42.50', product: 'Teh tarik set' }

function checkout(url: string): Promise<Response> {
  return fetch(`${url}/checkout`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(BUYER),
    redirect: 'manual',
  })
}

const SHOPS: Array<[string, (options: StartOptions) => Promise<RunningShop>]> = [
  ['Express', (options) => startExpressShop({ ...options, reconcileEveryMs: 0 })],
  ['Koa', startKoaShop],
  ['Fastify', startFastifyShop],
  ['fetch API', startWebShop],
]

describe.each(SHOPS)('the %s example shop with paymentCreation server', (_name, start) => {
  it('creates the payment itself, sends the buyer to the service with a 303, and never shows the Auth Token', async () => {
    const log: string[] = []
    const config: ShopConfig = { baseUrl: emulator.baseUrl, ...DEMO, paymentCreation: 'server' }
    const shop = await start({ config, log: (line) => log.push(line) })
    try {
      const answer = await checkout(shop.url)
      const page = await answer.text()
      expect(answer.status).toBe(303)
      const location = answer.headers.get('location') ?? ''
      const exchangeNumber = new RegExp(`^${emulator.baseUrl}/pay/([^/]+)$`).exec(location)?.[1]
      expect(exchangeNumber, location).toBeDefined()
      expect(page + JSON.stringify([...answer.headers])).not.toContain(DEMO.authToken)
      expect((await fetch(location)).status).toBe(200)

      const [order] = shop.orders.list()
      expect(order).toMatchObject({ amount: '42.50', state: 'awaiting payment' })
      expect(page).toContain(order!.orderNumber)
      await emulator.complete(exchangeNumber!, 'approve')
      await expect.poll(() => shop.orders.get(order!.orderNumber)?.state, { timeout: 10_000 }).toBe('paid')
      expect(log.join('\n')).not.toContain(DEMO.authToken)
    } finally {
      await shop.close()
    }
  })
})

describe('the example shop when createPayment fails', () => {
  it('answers a page that says the payment did not start, keeps why on the order and in the log, without secrets', async () => {
    // Answers the bank list and refuses the payment, as a service that is down for payments would.
    const service = createServer((request, response) => {
      if (request.url?.startsWith('/api/public/')) response.writeHead(200, { 'content-type': 'application/json' }).end('{"fpx_bankList":[]}')
      else response.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'maintenance', code: 'down' }))
    })
    await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve))
    const baseUrl = `http://127.0.0.1:${(service.address() as AddressInfo).port}/api`
    const log: string[] = []
    const shop = await startWebShop({ config: { baseUrl, ...DEMO, paymentCreation: 'server' }, log: (line) => log.push(line) })
    try {
      const answer = await checkout(shop.url)
      const page = await answer.text()
      expect(answer.status).toBe(502)
      expect(page).toContain('could not be started')
      const [order] = shop.orders.list()
      expect(order).toMatchObject({ state: 'awaiting payment', note: 'the payment could not be started' })
      expect(log).toContain(`order ${order!.orderNumber}: the payment could not be started: POST /v1/payments answered 503 (down): maintenance`)
      expect(page + log.join('\n')).not.toContain(DEMO.authToken)
    } finally {
      await shop.close()
      await new Promise((resolve) => service.close(resolve))
    }
  })
})

describe('FPX_PAYMENT_CREATION', () => {
  it('chooses the way from the environment, and names the allowed values for any other', () => {
    expect(configFromEnv({ FPX_PAYMENT_CREATION: 'server' }).paymentCreation).toBe('server')
    expect(configFromEnv({ FPX_PAYMENT_CREATION: 'browser-form' }).paymentCreation).toBe('browser-form')
    expect(configFromEnv({}).paymentCreation).toBeUndefined()
    expect(() => configFromEnv({ FPX_PAYMENT_CREATION: 'browser' })).toThrow(/server or browser-form/)
  })
})
