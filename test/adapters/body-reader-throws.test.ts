/**
 * A body reader that throws synchronously instead of rejecting (a hand-written adapter's `readBody`, or Fastify's
 * plugin when an app's hook left `request.body` something other than the stream): the delivery is answered 500
 * internal_error, and nothing is left behind. The body's time limit must not go off later as an unhandled rejection,
 * which ends a Node process.
 */
import { request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { fpxCollect } from '../../adapters/fastify.js'
import { createReceiver } from '../../src/index.js'
import { errorOf, FORM, post, signed, TOKEN } from './harness.js'

const BODY_TIMEOUT_MS = 150

describe('a body reader that throws synchronously', () => {
  const unhandled: unknown[] = []
  const onUnhandled = (reason: unknown) => void unhandled.push(reason)
  beforeEach(() => {
    unhandled.length = 0
    process.on('unhandledRejection', onUnhandled)
  })
  afterEach(() => {
    process.off('unhandledRejection', onUnhandled)
  })

  const receiver = () => createReceiver({ signatureOnly: true, checksumToken: TOKEN, bodyTimeoutMs: BODY_TIMEOUT_MS, logger: false })

  it('receiver.handle: 500 internal_error, and no unhandled rejection once the body time limit passes', async () => {
    const cause = new TypeError('argument stream must be a stream')
    const response = await receiver().handle({
      kind: 'callback',
      contentType: FORM,
      readBody: () => {
        throw cause
      },
    })
    expect([response.status, response.error?.code]).toEqual([500, 'internal_error'])
    await new Promise((resolve) => setTimeout(resolve, BODY_TIMEOUT_MS + 100))
    expect(unhandled).toEqual([])
  })

  it("Fastify, an app hook replaced request.body with an object: 500, and no unhandled rejection after the time limit", async () => {
    const app = Fastify()
    // A root hook of the app's (a sanitiser, say) that replaces whatever body a route got with an object.
    app.addHook('preHandler', async (request) => {
      request.body = { sanitised: true }
    })
    await app.register(fpxCollect, { receiver: receiver() })
    await app.listen({ port: 0, host: '127.0.0.1' })
    try {
      const { port } = app.server.address() as AddressInfo
      const reply = await post(`http://127.0.0.1:${port}`, '/fpx/callback', signed())
      expect(reply.status).toBeGreaterThanOrEqual(500)
      expect(['internal_error', 'body_already_parsed']).toContain(errorOf(reply).code)
      await new Promise((resolve) => setTimeout(resolve, BODY_TIMEOUT_MS + 100))
      expect(unhandled).toEqual([])
    } finally {
      await app.close()
    }
  })

  it('Fastify, an app hook set request.body to null on a callback with a body: 500 body_already_parsed, not the sender\'s 400', async () => {
    const app = Fastify()
    app.addHook('preHandler', async (request) => {
      request.body = null
    })
    await app.register(fpxCollect, { receiver: receiver() })
    await app.listen({ port: 0, host: '127.0.0.1' })
    try {
      const { port } = app.server.address() as AddressInfo
      const reply = await post(`http://127.0.0.1:${port}`, '/fpx/callback', signed())
      expect([reply.status, errorOf(reply).code]).toEqual([500, 'body_already_parsed'])
    } finally {
      await app.close()
    }
  })

  it('Fastify, a GET redirect whose headers declare a body (Fastify parses none for GET): read from its query', async () => {
    const app = Fastify()
    await app.register(fpxCollect, { receiver: receiver(), successUrl: '/paid' })
    await app.listen({ port: 0, host: '127.0.0.1' })
    try {
      const { port } = app.server.address() as AddressInfo
      const status = await new Promise<number | undefined>((resolve, reject) => {
        const outgoing = httpRequest({ host: '127.0.0.1', port, method: 'GET', path: `/fpx/redirect?${signed().body}`, headers: { 'transfer-encoding': 'chunked' }, agent: false }, (response) => {
          response.resume()
          response.on('end', () => resolve(response.statusCode))
        })
        outgoing.on('error', reject)
        outgoing.end()
      })
      expect(status).toBe(303)
    } finally {
      await app.close()
    }
  })
})
