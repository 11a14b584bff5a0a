import type { AddressInfo } from 'node:net'
import formbody from '@fastify/formbody'
import Fastify5, { type FastifyInstance, type FastifyPluginCallback } from 'fastify'
import Fastify4 from 'fastify4'
import fp from 'fastify-plugin'
import { afterEach, describe, expect, it } from 'vitest'
import defaultExport, { fpxCollect } from '../../adapters/fastify.js'
import { samplePaymentFields } from '../../src/testing.js'
import {
  errorOf,
  FORM,
  OTHER_TOKEN,
  oversizeBody,
  post,
  recordedReceiver,
  signed,
  type Started,
  tampered,
} from './harness.js'
import { adapterContract } from './contract.js'

type Factory = () => FastifyInstance

// Typed as Fastify 5: the calls used here are the same in 4, and the plugin declares both.
const versions: [string, Factory, number][] = [
  ['fastify4', () => (Fastify4 as unknown as typeof Fastify5)(), 4],
  ['fastify', () => Fastify5(), 5],
]

/**
 * @fastify/formbody 9 declares Fastify 5 only, so on Fastify 4 the app registers the same parser function through
 * a wrapper without that version pin; at the root either way, as an app would.
 */
function appFormbody(version: string): FastifyPluginCallback {
  if (version !== 'fastify4') return formbody
  return fp((instance, options, done) => formbody(instance, options, done), { name: 'app-formbody' })
}

async function listen(app: FastifyInstance): Promise<Started> {
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}`, close: async () => void (await app.close()) }
}

describe.each(versions)('%s plugin', (version, fastify, major) => {
  it(`runs on Fastify ${major}`, async () => {
    const app = fastify()
    expect(app.version.split('.')[0]).toBe(String(major))
    await app.close()
  })

  describe('contract', () => {
    adapterContract(async (receiver, redirect) => {
      const app = fastify()
      await app.register(fpxCollect, { receiver, ...redirect })
      return listen(app)
    })
  })

  it("verifies a GET redirect whose fields follow the URL's own query; callbacks stay POST only", async () => {
    const { receiver, runs } = recordedReceiver()
    const app = fastify()
    await app.register(fpxCollect, { receiver, successUrl: '/paid' })
    const started = await listen(app)
    try {
      const reply = await fetch(`${started.url}/fpx/redirect?securepay_return=1&${signed().body}`, { redirect: 'manual' })
      expect([reply.status, reply.headers.get('location')]).toEqual([303, '/paid'])
      expect(runs.map((run) => [run.delivery, { ...run.unsignedQuery }])).toEqual([['redirect', { securepay_return: '1' }]])
      expect((await fetch(`${started.url}/fpx/callback?${signed().body}`)).status).toBe(404)
    } finally {
      await started.close()
    }
  })

  it('reads the body itself whichever way the Content-Type spells the form, asked once or again', async () => {
    const { receiver, runs } = recordedReceiver()
    const app = fastify()
    await app.register(fpxCollect, { receiver })
    const started = await listen(app)
    try {
      // Fastify finds a parser by the header's text and remembers it: the second of each reaches the reader too.
      const types = [FORM, FORM, `${FORM}; charset=UTF-8`, `${FORM}; charset=UTF-8`, 'Application/X-WWW-Form-Urlencoded', 'Application/X-WWW-Form-Urlencoded']
      const replies = []
      for (const contentType of types) replies.push(await post(started.url, '/fpx/callback', { body: signed().body, contentType }))
      expect(replies.map((reply) => [reply.status, reply.text])).toEqual(types.map(() => [200, 'OK']))
      expect(runs).toHaveLength(types.length)
      const json = await post(started.url, '/fpx/callback', { body: '{"checksum":"00"}', contentType: 'application/json' })
      // The receiver, not Fastify's JSON parser, judged it: its own code for a checksum of the wrong form.
      expect([json.status, errorOf(json).code]).toEqual([401, 'checksum_malformed'])
    } finally {
      await started.close()
    }
  })

  describe('registered twice under prefixes, next to the app’s own parsers and routes', () => {
    const opened: Started[] = []
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((app) => app.close()))
    })

    async function start() {
      const a = recordedReceiver()
      const b = recordedReceiver(OTHER_TOKEN)
      const app = fastify()
      await app.register(appFormbody(version))
      app.post('/form', async (request) => ({ got: request.body }))
      app.post('/json', async (request) => ({ got: request.body }))
      await app.register(fpxCollect, { prefix: '/a', receiver: a.receiver, successUrl: '/a/paid' })
      await app.register(defaultExport, { prefix: '/b', receiver: b.receiver, successUrl: '/b/paid' })
      const started = await listen(app)
      opened.push(started)
      return { url: started.url, a: a.runs, b: b.runs }
    }

    it('serves each instance with its own receiver', async () => {
      const { url, a, b } = await start()
      expect(await post(url, '/a/fpx/callback', signed())).toMatchObject({ status: 200, text: 'OK' })
      expect(await post(url, '/b/fpx/callback', signed(undefined, { token: OTHER_TOKEN }))).toMatchObject({ status: 200, text: 'OK' })
      // Signed for A's credentials, so B's receiver refuses it.
      const crossed = await post(url, '/b/fpx/callback', signed())
      expect(crossed.status).toBe(401)
      const paidA = await post(url, '/a/fpx/redirect', signed())
      const paidB = await post(url, '/b/fpx/redirect', signed(undefined, { token: OTHER_TOKEN }))
      expect([paidA, paidB].map((reply) => [reply.status, reply.headers.location])).toEqual([
        [303, '/a/paid'],
        [303, '/b/paid'],
      ])
      expect([a.map((run) => run.delivery), b.map((run) => run.delivery)]).toEqual([
        ['callback', 'redirect'],
        ['callback', 'redirect'],
      ])
    })

    it('keeps its own refusals inside each instance: 401, 413 chunked, 415', async () => {
      const { url, a, b } = await start()
      const forged = await post(url, '/a/fpx/callback', { body: tampered(signed().body), contentType: FORM })
      expect(errorOf(forged).code).toBe('checksum_mismatch')
      expect((await post(url, '/b/fpx/callback', { body: oversizeBody(), contentType: FORM, chunked: true })).status).toBe(413)
      expect((await post(url, '/a/fpx/callback', { body: signed().body, contentType: 'text/plain' })).status).toBe(415)
      expect([a.length, b.length]).toEqual([0, 0])
    })

    it("leaves the app's form route to @fastify/formbody", async () => {
      const { url } = await start()
      const reply = await post(url, '/form', { body: 'name=Nur+Aisyah&amount=100.20&note=a%2Bb', contentType: FORM })
      expect(reply.status).toBe(200)
      expect(JSON.parse(reply.text)).toEqual({ got: { name: 'Nur Aisyah', amount: '100.20', note: 'a+b' } })
      // A whole payment form is parsed for the app too, not handed over as a stream.
      const fields = samplePaymentFields()
      const payment = await post(url, '/form', signed(fields))
      expect((JSON.parse(payment.text) as { got: Record<string, string> }).got.order_number).toBe(fields.order_number)
    })

    it("leaves the app's JSON and text parsing alone and adds no catch-all parser outside the plugin", async () => {
      const { url } = await start()
      const json = await post(url, '/json', { body: '{"items":[1,2],"ok":true}', contentType: 'application/json' })
      expect([json.status, JSON.parse(json.text)]).toEqual([200, { got: { items: [1, 2], ok: true } }])
      const text = await post(url, '/json', { body: 'plain words', contentType: 'text/plain' })
      expect([text.status, JSON.parse(text.text)]).toEqual([200, { got: 'plain words' }])
      // The plugin accepts any type inside itself; outside, Fastify still refuses types nobody registered.
      const xml = await post(url, '/json', { body: '<a/>', contentType: 'application/xml' })
      expect(xml.status).toBe(415)
      expect((await post(url, '/fpx/callback', signed())).status).toBe(404)
    })

    it('registers without error whichever comes first, the plugins or the app’s form parser', async () => {
      const app = fastify()
      await app.register(fpxCollect, { prefix: '/a', receiver: recordedReceiver().receiver })
      await app.register(fpxCollect, { prefix: '/b', receiver: recordedReceiver().receiver, redirectPath: false })
      await app.register(appFormbody(version))
      app.post('/form', async (request) => ({ got: request.body }))
      const started = await listen(app)
      opened.push(started)
      expect(JSON.parse((await post(started.url, '/form', { body: 'x=1', contentType: FORM })).text)).toEqual({ got: { x: '1' } })
      expect((await post(started.url, '/a/fpx/callback', signed())).status).toBe(200)
      expect((await post(started.url, '/a/fpx/redirect', signed())).status).toBe(200)
      expect((await post(started.url, '/b/fpx/redirect', signed())).status).toBe(404)
    })
  })
})
