/**
 * A merchant on Fastify 5 taking FPX payments: `npm run example:fastify`, then open http://127.0.0.1:3002/.
 * (fpx-collect/fastify also runs on Fastify 4; the @fastify/formbody 9 used for the checkout form does not.)
 * Environment: FPX_BASE_URL, FPX_UID, FPX_AUTH_TOKEN, FPX_CHECKSUM_TOKEN, PORT, PUBLIC_URL (see examples/README.md).
 */
import formbody from '@fastify/formbody'
import Fastify, { type FastifyReply } from 'fastify'
import { fpxCollect } from 'fpx-collect/fastify'
import type { Page } from '../shared/pages.js'
import { runIfMain, urlOf } from '../shared/server.js'
import { createShop, type RunningShop, type StartOptions } from '../shared/shop.js'

function render(reply: FastifyReply, page: Page): FastifyReply {
  return reply.code(page.status).headers(page.headers).send(page.html)
}

export async function startFastifyShop(options: StartOptions = {}): Promise<RunningShop> {
  let url = ''
  const shop = createShop(options, () => url)
  const app = Fastify()

  // The app's own form parser for the checkout; the plugin keeps its routes out of its reach.
  await app.register(formbody)
  await app.register(fpxCollect, {
    receiver: shop.receiver,
    callbackPath: '/fpx/callback',
    redirectPath: '/fpx/redirect',
    ...shop.redirect,
  })

  app.get('/', async (_request, reply) => render(reply, await shop.checkoutPage()))
  app.post('/checkout', { bodyLimit: 8 * 1024 }, async (request, reply) => render(reply, await shop.placeOrder(request.body)))
  app.get('/orders', (_request, reply) => render(reply, shop.ordersPage()))
  app.get<{ Params: { orderNumber: string } }>('/orders/:orderNumber', (request, reply) =>
    render(reply, shop.orderPage(request.params.orderNumber)),
  )

  await app.listen({ port: options.port ?? 0, host: options.host ?? '127.0.0.1' })
  url = urlOf(app.server.address())
  return { url, orders: shop.orders, close: () => app.close() }
}

runIfMain(import.meta.url, 'Fastify', startFastifyShop, 3002)
