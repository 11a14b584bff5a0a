/**
 * A merchant on Express (4 or 5) taking FPX payments: `npm run example:express`, then open http://127.0.0.1:3000/.
 * Environment: FPX_BASE_URL, FPX_UID, FPX_AUTH_TOKEN, FPX_CHECKSUM_TOKEN, PORT, PUBLIC_URL, FPX_RECONCILE_EVERY_MS
 * (see examples/README.md).
 */
import { createServer } from 'node:http'
import express, { type NextFunction, type Request, type Response } from 'express'
import { reconcile } from 'fpx-collect/client'
import { fpxCallback, fpxConsole, fpxRedirect } from 'fpx-collect/express'
import { operators } from '../shared/operators.js'
import type { Page } from '../shared/pages.js'
import { listen, runIfMain } from '../shared/server.js'
import { createShop, type RunningShop, type Shop, type StartOptions } from '../shared/shop.js'

const DEFAULT_RECONCILE_EVERY_MS = 15 * 60_000
const CONSOLE_PATH = '/admin/payments'
// setInterval turns anything longer into 1 ms.
const MAX_TIMER_MS = 2 ** 31 - 1

function reconcileEvery(options: StartOptions): number {
  const configured = options.reconcileEveryMs ?? (process.env.FPX_RECONCILE_EVERY_MS || undefined)
  const everyMs = configured === undefined ? DEFAULT_RECONCILE_EVERY_MS : Number(configured)
  if (!Number.isInteger(everyMs) || everyMs < 0 || everyMs > MAX_TIMER_MS)
    throw new RangeError(`FPX_RECONCILE_EVERY_MS must be a whole number of milliseconds from 0 (off) to ${MAX_TIMER_MS}`)
  return everyMs
}

/**
 * Callbacks get lost (the app is down during a deploy) and buyers close the tab before the redirect: every so
 * often the app reads the service's transactions list and hands each result to the same receiver, whose
 * deduplication runs the handlers only for results it has not seen. Today and yesterday (Malaysian days) cover
 * a result lost just before midnight.
 */
function scheduleReconciliation(shop: Shop, everyMs: number): () => void {
  if (everyMs === 0) return () => {}
  let running = false
  const timer = setInterval(() => {
    // A slow service must not stack runs on top of each other.
    if (running) return
    running = true
    const now = new Date()
    reconcile({ client: shop.client, receiver: shop.receiver, from: new Date(now.getTime() - 86_400_000), to: now })
      .then((report) => {
        if (report.processed > 0 || report.problems.length > 0)
          shop.log(`reconciliation: ${report.examined} examined, ${report.processed} recovered, ${report.problems.length} problems`)
      })
      .catch((error: unknown) => shop.log(`reconciliation failed: ${error instanceof Error ? error.message : String(error)}`))
      .finally(() => (running = false))
  }, everyMs)
  // The timer alone must not keep the process running.
  timer.unref()
  return () => clearInterval(timer)
}

function send(response: Response, page: Page): void {
  response.status(page.status).set(page.headers).send(page.html)
}

export async function startExpressShop(options: StartOptions = {}): Promise<RunningShop> {
  let url = ''
  const everyMs = reconcileEvery(options)
  const shop = createShop(options, () => url)
  const app = express()

  // Before any body parser: the receiver verifies the bytes exactly as the service signed them.
  app.post('/fpx/callback', fpxCallback(shop.receiver))
  app.post('/fpx/redirect', fpxRedirect(shop.receiver, shop.redirect))

  // Express 4 does not catch a rejected promise itself: hand the error to next().
  app.get('/', (_request, response, next) => void shop.checkoutPage().then((page) => send(response, page), next))
  app.post('/checkout', express.urlencoded({ extended: false, limit: '8kb' }), (request, response, next) =>
    void shop.placeOrder(request.body).then((page) => send(response, page), next),
  )
  app.get('/orders', (_request, response) => send(response, shop.ordersPage()))
  app.get('/orders/:orderNumber', (request, response) => send(response, shop.orderPage(request.params.orderNumber)))

  // The operator's console (every payment's life, what is stuck, dead letters), for the shop's staff only: here
  // whoever opened the one-time sign-in link printed at start; a real shop asks its own staff sign-in.
  const staff = operators(CONSOLE_PATH)
  app.get('/admin/sign-in', (request, response) => staff.signIn(request, response))
  app.use(CONSOLE_PATH, fpxConsole(shop.receiver, { authorize: (request) => staff.authorize(request) }))

  // A page instead of Express's default stack trace; bad input (an undecodable path) keeps its 4xx status.
  app.use((error: { status?: number; message?: string }, _request: Request, response: Response, _next: NextFunction) => {
    const status = Number.isInteger(error.status) && error.status! >= 400 && error.status! < 500 ? error.status! : 500
    if (status === 500) shop.log(`ERROR unexpected: ${error.message ?? String(error)}`)
    response.status(status).type('text/plain').send(status === 500 ? 'Internal error' : 'Request refused')
  })

  const server = await listen(createServer(app), options.port, options.host)
  url = server.url
  const stopReconciling = scheduleReconciliation(shop, everyMs)
  return {
    url,
    orders: shop.orders,
    consoleLink: `${url}${staff.signInPath}`,
    close: () => {
      stopReconciling()
      return server.close()
    },
  }
}

runIfMain(import.meta.url, 'Express', startExpressShop, 3000)
