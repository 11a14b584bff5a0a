import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import express from 'express'
import express4 from 'express4'
import Fastify from 'fastify'
import Fastify4 from 'fastify4'
import Koa from 'koa'
import koa2 from 'koa2'
import bodyParser from 'koa-bodyparser'
import { afterEach, describe, expect, it } from 'vitest'
import { fpxConsole as expressConsole } from '../../adapters/express.js'
import { fpxConsole as fastifyConsole } from '../../adapters/fastify.js'
import { fpxConsole as koaConsole } from '../../adapters/koa.js'
import { fpxConsole as webConsole } from '../../adapters/web.js'
import { createReceiver, memoryStore } from '../../src/index.js'
import { DEMO } from '../client/helpers.js'

/**
 * Every mount serves the one fetch handler: the same page under its path, the same refusal without authorize, the
 * same checks on a POST whose body the framework may have parsed first; and requests outside its path are the app's.
 * Plain HTTP here; the pages themselves are driven in Chromium by the other files of this folder.
 */
const receiver = createReceiver({ checksumToken: DEMO.checksumToken, signatureOnly: true, store: memoryStore(), logger: false as never, sweep: false })
const authorize = (request: Request) => (request.headers.get('x-operator') === 'yes' ? 'Siti' : false)
const BASE = '/admin/payments'

let servers: Server[] = []
let closers: (() => Promise<unknown>)[] = []
afterEach(async () => {
  await Promise.all(closers.map((close) => close()))
  closers = []
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))))
  servers = []
})

function listen(server: Server): Promise<string> {
  servers.push(server)
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)))
}

type Start = (withAuthorize: boolean) => Promise<string>

const MOUNTS: [string, Start][] = [
  ...([['express 5', express], ['express 4', express4]] as const).map(([name, make]): [string, Start] => [
    name,
    (withAuthorize) => {
      const app = make()
      app.use(express.urlencoded({ extended: false }))
      app.use(BASE, expressConsole(receiver, withAuthorize ? { authorize } : {}))
      app.get('/', (_request, response) => void response.send('the shop'))
      return listen(createServer(app))
    },
  ]),
  ...([['koa 3', Koa], ['koa 2', koa2]] as const).map(([name, Make]): [string, Start] => [
    name,
    (withAuthorize) => {
      const app = new Make()
      app.use(bodyParser())
      app.use(koaConsole(receiver, { basePath: BASE, ...(withAuthorize ? { authorize } : {}) }))
      app.use((context) => void (context.body = 'the shop'))
      return listen(createServer(app.callback()))
    },
  ]),
  ...([['fastify 5', () => Fastify()], ['fastify 4', () => (Fastify4 as unknown as typeof Fastify)()]] as const).map(([name, make]): [string, Start] => [
    name,
    async (withAuthorize) => {
      const app = make()
      await app.register(fastifyConsole, { receiver, prefix: BASE, ...(withAuthorize ? { authorize } : {}) })
      app.get('/', async () => 'the shop')
      await app.listen({ port: 0, host: '127.0.0.1' })
      closers.push(() => app.close())
      return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
    },
  ]),
  [
    'fetch',
    (withAuthorize) => {
      const handler = webConsole(() => receiver, { basePath: BASE, ...(withAuthorize ? { authorize } : {}) })
      return listen(
        createServer(async (request, response) => {
          const url = `http://${request.headers.host}${request.url}`
          if (!url.includes(BASE)) return void response.end('the shop')
          const chunks: Buffer[] = []
          for await (const chunk of request) chunks.push(chunk as Buffer)
          const body = request.method === 'POST' ? Buffer.concat(chunks) : undefined
          const answer = await handler(new Request(url, { method: request.method, headers: request.headers as Record<string, string>, ...(body === undefined ? {} : { body }) }))
          response.writeHead(answer.status, { ...Object.fromEntries(answer.headers), 'set-cookie': answer.headers.getSetCookie() })
          response.end(Buffer.from(await answer.arrayBuffer()))
        }),
      )
    },
  ],
]

describe.each(MOUNTS)('the console mounted on %s', (_name, start) => {
  it('refuses every request without authorize, 403 with what to give', async () => {
    const url = await start(false)
    for (const path of ['', '/', '/inbox']) {
      const answer = await fetch(`${url}${BASE}${path}`, { headers: { 'x-operator': 'yes' } })
      expect(answer.status).toBe(403)
      expect(await answer.text()).toContain('mounted without an authorize hook')
    }
    expect(await (await fetch(`${url}/`)).text()).toBe('the shop')
  })

  it('serves its pages under its path to whom authorize lets in, with its own headers, and leaves the app’s paths alone', async () => {
    const url = await start(true)
    expect((await fetch(`${url}${BASE}`)).status).toBe(403)
    const answer = await fetch(`${url}${BASE}/`, { headers: { 'x-operator': 'yes' } })
    expect(answer.status).toBe(200)
    const html = await answer.text()
    expect(html).toContain('<h1>Overview</h1>')
    expect(html).toContain(`href="${BASE}/refusals"`)
    expect(html).toContain('Signed in as Siti')
    expect(answer.headers.get('content-security-policy')).toMatch(/^default-src 'none'; style-src 'nonce-[\w-]+'/)
    expect(answer.headers.get('cache-control')).toBe('no-store')
    expect((await fetch(`${url}${BASE}/nowhere`, { headers: { 'x-operator': 'yes' } })).status).toBe(404)
    expect(await (await fetch(`${url}/`)).text()).toBe('the shop')
  })

  it('reads a posted form, parsed by the app first or not, and refuses it without the session’s token or from another origin', async () => {
    const url = await start(true)
    const first = await fetch(`${url}${BASE}/`, { headers: { 'x-operator': 'yes' } })
    await first.arrayBuffer()
    const cookie = first.headers.get('set-cookie') ?? ''
    expect(cookie).toMatch(new RegExp(`^fpx_console_csrf=[\\w-]{43}; Path=${BASE}; HttpOnly; SameSite=Strict$`))
    const token = (/=([\w-]+);/.exec(cookie) as RegExpExecArray)[1] as string
    const post = (form: Record<string, string>, headers: Record<string, string> = {}) =>
      fetch(`${url}${BASE}/payment/lookup`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'x-operator': 'yes', cookie: `fpx_console_csrf=${token}`, 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams(form).toString(),
      })
    // Through the guard, the action answers: this signature-only receiver has no API to look anything up with.
    const through = await post({ csrf: token, order: 'ORD-1' }, { origin: url, 'sec-fetch-site': 'same-origin' })
    expect(through.status).toBe(409)
    expect(await through.text()).toContain('cannot ask the service’s API')
    const withoutToken = await post({ order: 'ORD-1' })
    expect(withoutToken.status).toBe(403)
    expect(await withoutToken.text()).toContain('does not match this browser’s console session')
    const crossSite = await post({ csrf: token, order: 'ORD-1' }, { origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' })
    expect(crossSite.status).toBe(403)
    expect(await crossSite.text()).toContain('another site')
  })
})

describe('the console under an Express mount path with a parameter', () => {
  it('keeps the path its cookie is scoped to a single Path attribute, whatever the parameter holds', async () => {
    const app = express()
    app.use('/shops/:shop/payments', expressConsole(receiver, { authorize }))
    const url = await listen(createServer(app))
    // A raw `;` is allowed in a URL path: written into Set-Cookie as it is, it would add attributes of the sender's choosing.
    const answer = await fetch(`${url}/shops/a;Domain=127.0.0.1;SameSite=None/payments/`, { headers: { 'x-operator': 'yes' } })
    expect(answer.status).toBe(200)
    const cookie = answer.headers.get('set-cookie') ?? ''
    const attributes = cookie.split(';').map((part) => part.trim().split('=')[0]?.toLowerCase())
    expect(attributes.filter((name) => name === 'path')).toHaveLength(1)
    expect(attributes).not.toContain('domain')
    expect(attributes.filter((name) => name === 'samesite')).toHaveLength(1)
    expect(cookie).toContain('SameSite=Strict')
  })
})
