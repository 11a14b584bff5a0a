import express5 from 'express'
import express4 from 'express4'
import { describe, expect, it } from 'vitest'
import { fpxCallback, fpxRedirect, keepRawBody } from '../../adapters/express.js'
import type { Receiver } from '../../src/index.js'
import {
  type AnyRedirectOptions,
  appsFor,
  errorOf,
  FORM,
  installedVersion,
  post,
  recordedReceiver,
  serve,
  signed,
  tampered,
} from './harness.js'
import { adapterContract } from './contract.js'

type Express = typeof express5
type App = ReturnType<Express>

const versions: [string, Express, number][] = [
  ['express4', express4, 4],
  ['express', express5, 5],
]

describe.each(versions)('%s adapter', (name, express, major) => {
  it(`runs on Express ${major}`, () => {
    expect(installedVersion(name).split('.')[0]).toBe(String(major))
  })

  /** The payment routes, after whatever the app mounted before them. */
  const withRoutes = (app: App, receiver: Receiver, redirect: AnyRedirectOptions): App => {
    app.post('/fpx/callback', fpxCallback(receiver))
    app.post('/fpx/redirect', fpxRedirect(receiver, redirect))
    return app
  }

  describe('contract', () => {
    adapterContract((receiver, redirect) => serve(withRoutes(express(), receiver, redirect)))
  })

  it('verifies a redirect that arrives as a GET with its fields after the URL\'s own query', async () => {
    const { receiver, runs } = recordedReceiver()
    const app = express()
    app.get('/fpx/redirect', fpxRedirect(receiver, { successUrl: '/paid' }))
    const started = await serve(app)
    try {
      const reply = await fetch(`${started.url}/fpx/redirect?securepay_return=1&${signed().body}`, { redirect: 'manual' })
      expect([reply.status, reply.headers.get('location')]).toEqual([303, '/paid'])
      expect(runs.map((run) => [run.delivery, { ...run.unsignedQuery }])).toEqual([['redirect', { securepay_return: '1' }]])
    } finally {
      await started.close()
    }
  })

  it("answers 500 internal_error when onResult throws 'route', never running the app's next route for the path", async () => {
    const { receiver, runs } = recordedReceiver()
    const app = express()
    let nextRan = 0
    for (const thrown of ['route', 'router', undefined]) {
      const path = `/fpx/redirect-${String(thrown)}`
      app.post(
        path,
        fpxRedirect(receiver, {
          onResult: () => {
            throw thrown
          },
        }),
      )
      app.post(path, (_request, response) => {
        nextRan += 1
        response.send('another route answered')
      })
    }
    const started = await serve(app)
    try {
      for (const thrown of ['route', 'router', undefined]) {
        const reply = await post(started.url, `/fpx/redirect-${String(thrown)}`, signed())
        expect([String(thrown), reply.status, reply.headers['content-type']]).toEqual([String(thrown), 500, 'text/html; charset=utf-8'])
        expect(reply.text).toContain('internal_error')
      }
      expect(nextRan).toBe(0)
      expect(runs).toHaveLength(3)
    } finally {
      await started.close()
    }
  })

  describe('behind a body parser', () => {
    /** The app's own parser, mounted for every route before the payment routes: the usual mistake. */
    const behind = (parser: () => ReturnType<Express['json']>) =>
      appsFor((receiver, redirect) => {
        const app = express()
        app.use(parser())
        return serve(withRoutes(app, receiver, redirect))
      })

    const urlencoded = behind(() => express.urlencoded({ extended: false }))
    const json = behind(() => express.json())
    // keepRawBody, not `req.rawBody = buf`: koa.test.ts loads @koa/bodyparser, whose types declare
    // IncomingMessage.rawBody a string, as apps' other packages may.
    const keptRaw = behind(() => express.urlencoded({ extended: false, verify: keepRawBody }))
    const keptRawJson = behind(() => express.json({ verify: keepRawBody }))
    const raw = behind(() => express.raw({ type: '*/*' }))

    it('answers 500 naming express.urlencoded() and the fix when it spent the stream', async () => {
      const { url, runs } = await urlencoded({ successUrl: '/paid' })
      const reply = await post(url, '/fpx/callback', signed())
      expect(reply.status).toBe(500)
      const error = errorOf(reply)
      expect(error.code).toBe('body_already_parsed')
      expect(error.message).toContain('express.urlencoded()')
      expect(error.message).toContain('Mount the fpx-collect route before that body parser')
      expect(error.message).toContain('req.rawBody')
      // The browser gets a page, not the JSON meant for developers.
      const browser = await post(url, '/fpx/redirect', signed())
      expect(browser.status).toBe(500)
      expect(browser.headers['content-type']).toMatch(/^text\/html/)
      expect(browser.headers.location).toBeUndefined()
      expect(runs).toHaveLength(0)
    })

    it('answers 500 naming express.json() when it parsed a JSON callback, and leaves form callbacks alone', async () => {
      const { url, runs } = await json()
      const reply = await post(url, '/fpx/callback', signed(undefined, { format: 'json' }))
      expect(reply.status).toBe(500)
      const error = errorOf(reply)
      expect(error.code).toBe('body_already_parsed')
      expect(error.message).toContain('express.json()')
      expect(error.message).toContain('Mount the fpx-collect route before')
      expect(runs).toHaveLength(0)
      // express.json() does not read form bodies, so the adapter still gets the untouched stream.
      const form = await post(url, '/fpx/callback', signed())
      expect([form.status, form.text]).toEqual([200, 'OK'])
      expect(runs).toHaveLength(1)
    })

    it('verifies the raw buffer express.urlencoded() kept as req.rawBody', async () => {
      const { url, runs } = await keptRaw({ successUrl: '/paid' })
      const delivery = signed()
      expect(await post(url, '/fpx/callback', delivery)).toMatchObject({ status: 200, text: 'OK' })
      expect(await post(url, '/fpx/callback', delivery)).toMatchObject({ status: 200, text: 'OK' })
      const forged = await post(url, '/fpx/callback', { body: tampered(signed().body), contentType: FORM })
      expect(forged.status).toBe(401)
      expect(errorOf(forged).code).toBe('checksum_mismatch')
      const browser = await post(url, '/fpx/redirect', signed())
      expect([browser.status, browser.headers.location]).toEqual([303, '/paid'])
      expect(runs.map((run) => run.delivery)).toEqual(['callback', 'redirect'])
    })

    it('verifies the raw buffer express.json() kept with keepRawBody', async () => {
      const { url, runs } = await keptRawJson()
      const delivery = signed(undefined, { format: 'json' })
      expect(await post(url, '/fpx/callback', delivery)).toMatchObject({ status: 200, text: 'OK' })
      const forged = JSON.parse(delivery.body) as Record<string, unknown>
      forged.transaction_amount = '1.00'
      const refused = await post(url, '/fpx/callback', { body: JSON.stringify(forged), contentType: delivery.contentType })
      expect(errorOf(refused).code).toBe('checksum_mismatch')
      expect(runs).toHaveLength(1)
    })

    it("verifies express.raw()'s Buffer body", async () => {
      const { url, runs } = await raw()
      expect(await post(url, '/fpx/callback', signed())).toMatchObject({ status: 200, text: 'OK' })
      expect(await post(url, '/fpx/callback', signed(undefined, { format: 'json' }))).toMatchObject({ status: 200, text: 'OK' })
      const forged = await post(url, '/fpx/callback', { body: tampered(signed().body), contentType: FORM })
      expect(forged.status).toBe(401)
      expect(runs).toHaveLength(2)
    })

    it('answers every request behind a parser, never leaving one hanging', async () => {
      const { url: spent } = await urlencoded()
      const { url: kept } = await keptRaw()
      const requests = [spent, kept, spent, kept].flatMap((url) => [
        post(url, '/fpx/callback', signed()),
        post(url, '/fpx/callback', { ...signed(), chunked: true }),
        post(url, '/fpx/redirect', signed()),
      ])
      const statuses = (await Promise.all(requests)).map((reply) => reply.status)
      expect(statuses).toEqual([500, 500, 500, 200, 200, 200, 500, 500, 500, 200, 200, 200])
    })
  })
})
