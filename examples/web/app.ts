/**
 * A merchant on the fetch API (`Request` → `Response`), as in Next.js route handlers, Hono, Bun or Deno:
 * `shopHandler` is the whole app. Node.js 20 has no fetch-API server, so `npm run example:web` serves it from
 * node:http through a small bridge; then open http://127.0.0.1:3003/.
 * Environment: FPX_BASE_URL, FPX_UID, FPX_AUTH_TOKEN, FPX_CHECKSUM_TOKEN, PORT, PUBLIC_URL (see examples/README.md).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { Readable } from 'node:stream'
import { fpxCallback, fpxRedirect } from 'fpx-collect/web'
import type { Page } from '../shared/pages.js'
import { listen, runIfMain } from '../shared/server.js'
import { createShop, type RunningShop, type Shop, type StartOptions } from '../shared/shop.js'

const CHECKOUT_LIMIT = 8 * 1024

function html(page: Page): Response {
  return new Response(page.html, { status: page.status, headers: page.headers })
}

function orderNumberIn(pathname: string): string | undefined {
  const match = /^\/orders\/([^/]+)$/.exec(pathname)
  try {
    return match?.[1] === undefined ? undefined : decodeURIComponent(match[1])
  } catch {
    return undefined
  }
}

export function shopHandler(shop: Shop): (request: Request) => Promise<Response> {
  const callback = fpxCallback(shop.receiver)
  const redirect = fpxRedirect(shop.receiver, shop.redirect)
  return async (request) => {
    const { pathname } = new URL(request.url)
    if (request.method === 'POST') {
      // The adapter reads the body itself, with the receiver's size limit.
      if (pathname === '/fpx/callback') return callback(request)
      if (pathname === '/fpx/redirect') return redirect(request)
      if (pathname === '/checkout') {
        const length = Number(request.headers.get('content-length') ?? Infinity)
        if (!(length <= CHECKOUT_LIMIT)) return new Response('Form too large', { status: 413 })
        const form = new URLSearchParams(await request.text())
        return html(await shop.placeOrder(Object.fromEntries(form)))
      }
    }
    if (request.method === 'GET') {
      if (pathname === '/') return html(await shop.checkoutPage())
      if (pathname === '/orders') return html(shop.ordersPage())
      const orderNumber = orderNumberIn(pathname)
      if (orderNumber !== undefined) return html(shop.orderPage(orderNumber))
    }
    return new Response('Not found', { status: 404 })
  }
}

/** The bridge: node:http's request as a fetch-API Request, and the Response written back. */
function toRequest(incoming: IncomingMessage, origin: string): Request {
  const headers = new Headers()
  for (let i = 0; i < incoming.rawHeaders.length; i += 2) headers.append(incoming.rawHeaders[i]!, incoming.rawHeaders[i + 1]!)
  const method = incoming.method ?? 'GET'
  const body = method === 'GET' || method === 'HEAD' ? null : (Readable.toWeb(incoming) as ReadableStream<Uint8Array>)
  // The origin is the server's own, never the Host header, which the client chooses.
  return new Request(new URL(incoming.url ?? '/', origin), { method, headers, body, duplex: 'half' } as RequestInit)
}

async function respond(response: Response, outgoing: ServerResponse): Promise<void> {
  outgoing.writeHead(response.status, Object.fromEntries(response.headers))
  outgoing.end(Buffer.from(await response.arrayBuffer()))
}

export async function startWebShop(options: StartOptions = {}): Promise<RunningShop> {
  let url = ''
  const shop = createShop(options, () => url)
  const handle = shopHandler(shop)
  const server = createServer((incoming, outgoing) => {
    handle(toRequest(incoming, url))
      .then((response) => respond(response, outgoing))
      .catch((error: unknown) => {
        shop.log(`ERROR unexpected: ${error instanceof Error ? error.message : String(error)}`)
        if (!outgoing.headersSent) outgoing.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' })
        outgoing.end('Internal error')
      })
  })
  const listening = await listen(server, options.port, options.host)
  url = listening.url
  return { url, orders: shop.orders, close: listening.close }
}

runIfMain(import.meta.url, 'Web (fetch API)', startWebShop, 3003)
