import { bodyParser as koaBodyparserScoped } from '@koa/bodyparser'
import Router from '@koa/router'
import Koa3 from 'koa'
import koaBodyparser from 'koa-bodyparser'
import Koa2 from 'koa2'
import getRawBody from 'raw-body'
import { describe, expect, it } from 'vitest'
import { fpxCallback, fpxRedirect } from '../../adapters/koa.js'
import type { Receiver } from '../../src/index.js'
import {
  type AnyRedirectOptions,
  appsFor,
  errorOf,
  FORM,
  installedVersion,
  oversizeBody,
  post,
  recordedReceiver,
  serve,
  signed,
  tampered,
} from './harness.js'
import { adapterContract } from './contract.js'

type Koa = typeof Koa3

const versions: [string, Koa, number][] = [
  ['koa2', Koa2, 2],
  ['koa', Koa3, 3],
]

/** A parser that spends the stream and keeps only the parsed object, as some home-grown or older ones do. */
const forgetfulParser: Koa3.Middleware = async (context, next) => {
  const text = await getRawBody(context.req, { encoding: 'utf8' })
  ;(context.request as { body?: unknown }).body = Object.fromEntries(new URLSearchParams(text))
  await next()
}

describe.each(versions)('%s adapter', (name, Koa, major) => {
  it(`runs on Koa ${major}`, () => {
    expect(installedVersion(name).split('.')[0]).toBe(String(major))
  })

  /** The payment routes, on @koa/router, after whatever the app used before them. */
  const app = (receiver: Receiver, redirect: AnyRedirectOptions, before?: Koa3.Middleware) => {
    const koa = new Koa()
    if (before !== undefined) koa.use(before)
    const router = new Router()
    router.post('/fpx/callback', fpxCallback(receiver))
    router.post('/fpx/redirect', fpxRedirect(receiver, redirect))
    koa.use(router.routes())
    return serve(koa.callback())
  }

  describe('contract', () => {
    adapterContract((receiver, redirect) => app(receiver, redirect))
  })

  it("verifies a GET redirect whose fields follow the URL's own query, even behind koa-bodyparser", async () => {
    const { receiver, runs } = recordedReceiver()
    const koa = new Koa()
    koa.use(koaBodyparser())
    const router = new Router()
    router.get('/fpx/redirect', fpxRedirect(receiver, { successUrl: '/paid' }))
    koa.use(router.routes())
    const started = await serve(koa.callback())
    try {
      const reply = await fetch(`${started.url}/fpx/redirect?securepay_return=1&${signed().body}`, { redirect: 'manual' })
      expect([reply.status, reply.headers.get('location')]).toEqual([303, '/paid'])
      expect(runs.map((run) => [run.delivery, { ...run.unsignedQuery }])).toEqual([['redirect', { securepay_return: '1' }]])
    } finally {
      await started.close()
    }
  })

  describe('behind a body parser', () => {
    const parsers: [string, () => Koa3.Middleware][] = [
      ['koa-bodyparser', () => koaBodyparser()],
      ['@koa/bodyparser', () => koaBodyparserScoped()],
    ]

    describe.each(parsers)('%s, which keeps ctx.request.rawBody', (_name, parser) => {
      const start = appsFor((receiver, redirect) => app(receiver, redirect, parser()))

      it('verifies the kept raw body: signed 200 once, duplicate 200, tampered 401', async () => {
        const { url, runs } = await start()
        const delivery = signed()
        expect(await post(url, '/fpx/callback', delivery)).toMatchObject({ status: 200, text: 'OK' })
        expect(await post(url, '/fpx/callback', delivery)).toMatchObject({ status: 200, text: 'OK' })
        const forged = await post(url, '/fpx/callback', { body: tampered(signed().body), contentType: FORM })
        expect(forged.status).toBe(401)
        expect(errorOf(forged).code).toBe('checksum_mismatch')
        expect(runs).toHaveLength(1)
      })

      it('verifies a kept JSON body and redirects with 303', async () => {
        const { url, runs } = await start({ successUrl: '/paid' })
        expect(await post(url, '/fpx/callback', signed(undefined, { format: 'json' }))).toMatchObject({ status: 200, text: 'OK' })
        const browser = await post(url, '/fpx/redirect', signed())
        expect([browser.status, browser.headers.location]).toEqual([303, '/paid'])
        const forged = await post(url, '/fpx/redirect', { body: tampered(signed().body), contentType: FORM })
        expect([forged.status, forged.headers['content-type']]).toEqual([401, 'text/html; charset=utf-8'])
        expect(runs.map((run) => run.delivery)).toEqual(['callback', 'redirect'])
      })

      it('still refuses oversize (413) and other content types (415)', async () => {
        const { url, runs } = await start()
        expect((await post(url, '/fpx/callback', { body: oversizeBody(), contentType: FORM })).status).toBe(413)
        expect((await post(url, '/fpx/callback', { body: oversizeBody(), contentType: FORM, chunked: true })).status).toBe(413)
        expect((await post(url, '/fpx/callback', { body: signed().body, contentType: 'text/plain' })).status).toBe(415)
        expect(runs).toHaveLength(0)
      })
    })

    describe('a parser that keeps no raw copy', () => {
      const start = appsFor((receiver, redirect) => app(receiver, redirect, forgetfulParser))

      it('answers 500 naming the Koa body parsers and the fix, and every request gets its answer', async () => {
        const { url, runs } = await start({ successUrl: '/paid' })
        const replies = await Promise.all([
          post(url, '/fpx/callback', signed()),
          post(url, '/fpx/callback', { ...signed(), chunked: true }),
          post(url, '/fpx/redirect', signed()),
        ])
        expect(replies.map((reply) => reply.status)).toEqual([500, 500, 500])
        const error = errorOf(replies[0]!)
        expect(error.code).toBe('body_already_parsed')
        expect(error.message).toContain('koa-bodyparser or @koa/bodyparser')
        expect(error.message).toContain('Mount the fpx-collect route before that body parser')
        expect(error.message).toContain('ctx.request.rawBody')
        expect(replies[2]!.headers['content-type']).toMatch(/^text\/html/)
        expect(replies[2]!.headers.location).toBeUndefined()
        expect(runs).toHaveLength(0)
      })
    })
  })
})
