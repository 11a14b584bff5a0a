/**
 * A merchant on Express (4 or 5) taking FPX payments: `npm run example:express`, then open http://127.0.0.1:3000/.
 * Environment: FPX_BASE_URL, FPX_UID, FPX_AUTH_TOKEN, FPX_CHECKSUM_TOKEN, PORT, PUBLIC_URL (see examples/README.md).
 */
import { createServer } from 'node:http'
import express, { type NextFunction, type Request, type Response } from 'express'
import { fpxCallback, fpxRedirect } from 'fpx-collect/express'
import type { Page } from '../shared/pages.js'
import { listen, runIfMain } from '../shared/server.js'
import { createShop, type RunningShop, type StartOptions } from '../shared/shop.js'

function send(response: Response, page: Page): void {
  response.status(page.status).set(page.headers).send(page.html)
}

export async function startExpressShop(options: StartOptions = {}): Promise<RunningShop> {
  let url = ''
  const shop = createShop(options, () => url)
  const app = express()

  // Before any body parser: the receiver verifies the bytes exactly as the service signed them.
  app.post('/fpx/callback', fpxCallback(shop.receiver))
  app.post('/fpx/redirect', fpxRedirect(shop.receiver, shop.redirect))

  app.get('/', (_request, response) => send(response, shop.checkoutPage()))
  app.post('/checkout', express.urlencoded({ extended: false, limit: '8kb' }), (request, response) =>
    send(response, shop.placeOrder(request.body)),
  )
  app.get('/orders', (_request, response) => send(response, shop.ordersPage()))
  app.get('/orders/:orderNumber', (request, response) => send(response, shop.orderPage(request.params.orderNumber)))

  // A page instead of Express's default stack trace; bad input (an undecodable path) keeps its 4xx status.
  app.use((error: { status?: number; message?: string }, _request: Request, response: Response, _next: NextFunction) => {
    const status = Number.isInteger(error.status) && error.status! >= 400 && error.status! < 500 ? error.status! : 500
    if (status === 500) shop.log(`ERROR unexpected: ${error.message ?? String(error)}`)
    response.status(status).type('text/plain').send(status === 500 ? 'Internal error' : 'Request refused')
  })

  const server = await listen(createServer(app), options.port, options.host)
  url = server.url
  return { url, orders: shop.orders, close: server.close }
}

runIfMain(import.meta.url, 'Express', startExpressShop, 3000)
