/** Opens one app per adapter (Express 5, Koa 3, Fastify 5, fetch API over node:http), for the atk2 tests. */
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import Router from '@koa/router'
import express from 'express'
import Fastify from 'fastify'
import Koa from 'koa'
import * as expressAdapter from '../../adapters/express.js'
import { fpxCollect } from '../../adapters/fastify.js'
import * as koaAdapter from '../../adapters/koa.js'
import * as webAdapter from '../../adapters/web.js'
import { type AnyRedirectOptions, type Open, serve, type Started } from './harness.js'

const CONNECTION_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'host'])

export const opens: [string, Open][] = [
  [
    'express',
    (receiver, redirect: AnyRedirectOptions) => {
      const app = express()
      app.post('/fpx/callback', expressAdapter.fpxCallback(receiver))
      app.all('/fpx/redirect', expressAdapter.fpxRedirect(receiver, redirect))
      return serve(app)
    },
  ],
  [
    'koa',
    (receiver, redirect) => {
      const koa = new Koa()
      const router = new Router()
      router.post('/fpx/callback', koaAdapter.fpxCallback(receiver))
      router.all('/fpx/redirect', koaAdapter.fpxRedirect(receiver, redirect))
      koa.use(router.routes())
      // Koa logs errors to the console by default; keep quiet.
      koa.silent = true
      return serve(koa.callback())
    },
  ],
  [
    'fastify',
    async (receiver, redirect) => {
      const app = Fastify()
      await app.register(fpxCollect, { receiver, ...redirect })
      await app.listen({ port: 0, host: '127.0.0.1' })
      const { port } = app.server.address() as AddressInfo
      return { url: `http://127.0.0.1:${port}`, close: async () => void (await app.close()) } satisfies Started
    },
  ],
  [
    'web',
    (receiver, redirect) => {
      const routes: Record<string, webAdapter.WebHandler> = { '/fpx/callback': webAdapter.fpxCallback(receiver), '/fpx/redirect': webAdapter.fpxRedirect(receiver, redirect) }
      return serve((incoming, outgoing) => {
        const url = new URL(incoming.url ?? '/', `http://${incoming.headers.host ?? '127.0.0.1'}`)
        const handler = routes[url.pathname]
        if (handler === undefined) {
          outgoing.writeHead(404).end()
          return
        }
        const headers = new Headers()
        for (const [name, value] of Object.entries(incoming.headers)) if (typeof value === 'string' && !CONNECTION_HEADERS.has(name)) headers.set(name, value)
        const hasBody = incoming.method !== 'GET' && incoming.method !== 'HEAD'
        const init: RequestInit & { duplex?: 'half' } = { method: incoming.method ?? 'GET', headers, ...(hasBody ? { body: Readable.toWeb(incoming) as ReadableStream<Uint8Array>, duplex: 'half' } : {}) }
        handler(new Request(url, init)).then(
          async (response) => {
            outgoing.statusCode = response.status
            response.headers.forEach((value, name) => outgoing.setHeader(name, value))
            outgoing.end(Buffer.from(await response.arrayBuffer()))
          },
          // What the platform does with a handler that rejects: a bare 500 with no code (Next.js, Bun, Deno alike).
          () => outgoing.writeHead(500, { 'content-type': 'text/plain' }).end('Internal Server Error'),
        )
      })
    },
  ],
]
