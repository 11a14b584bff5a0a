/**
 * A merchant on Koa (2 or 3) taking FPX payments: `npm run example:koa`, then open http://127.0.0.1:3001/.
 * Environment: FPX_BASE_URL, FPX_UID, FPX_AUTH_TOKEN, FPX_CHECKSUM_TOKEN, PORT, PUBLIC_URL (see examples/README.md).
 */
import { createServer } from 'node:http'
import { bodyParser } from '@koa/bodyparser'
import Router from '@koa/router'
import { fpxCallback, fpxRedirect } from 'fpx-collect/koa'
import Koa, { type Context } from 'koa'
import type { Page } from '../shared/pages.js'
import { listen, runIfMain } from '../shared/server.js'
import { createShop, type RunningShop, type StartOptions } from '../shared/shop.js'

function render(context: Context, page: Page): void {
  context.status = page.status
  context.set(page.headers)
  context.body = page.html
}

export async function startKoaShop(options: StartOptions = {}): Promise<RunningShop> {
  let url = ''
  const shop = createShop(options, () => url)
  const router = new Router()

  // The receiver reads the raw bytes itself, so only the checkout route gets a body parser.
  router.post('/fpx/callback', fpxCallback(shop.receiver))
  router.post('/fpx/redirect', fpxRedirect(shop.receiver, shop.redirect))

  router.get('/', async (context) => render(context, await shop.checkoutPage()))
  router.post('/checkout', bodyParser({ enableTypes: ['form'], formLimit: '8kb' }), async (context) =>
    render(context, await shop.placeOrder(context.request.body)),
  )
  router.get('/orders', (context) => render(context, shop.ordersPage()))
  router.get('/orders/:orderNumber', (context) => render(context, shop.orderPage(context.params.orderNumber ?? '')))

  const app = new Koa()
  app.use(router.routes()).use(router.allowedMethods())
  const server = await listen(createServer(app.callback()), options.port, options.host)
  url = server.url
  return { url, orders: shop.orders, close: server.close }
}

runIfMain(import.meta.url, 'Koa', startKoaShop, 3001)
