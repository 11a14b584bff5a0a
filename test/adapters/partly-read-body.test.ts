/**
 * A middleware of the app's that read part of the request stream (a 'data' listener that counts or logs bytes,
 * then an asynchronous step before the payment route): the bytes it saw are gone, through no fault of the sender.
 * That is a fault of ours (the app's mounting), like a body parser that ran first: 500 body_already_parsed, never
 * a 4xx that tells the service its genuine callback was malformed or forged, so that it stops retrying.
 */
import { request as httpRequest } from 'node:http'
import Router from '@koa/router'
import express from 'express'
import Koa from 'koa'
import { afterEach, describe, expect, it } from 'vitest'
import * as expressAdapter from '../../adapters/express.js'
import * as koaAdapter from '../../adapters/koa.js'
import { FORM, post, type Reply, recordedReceiver, serve, signed, type Started } from './harness.js'

/** A POST whose body comes in two pieces, the second `gapMs` after the first. */
function postInTwo(base: string, path: string, body: string, gapMs: number): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(new URL(path, base), { method: 'POST', headers: { 'content-type': FORM, 'content-length': String(Buffer.byteLength(body)) }, agent: false }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, text: Buffer.concat(chunks).toString('utf8') }))
    })
    outgoing.on('error', reject)
    const half = Math.floor(body.length / 2)
    outgoing.write(body.slice(0, half))
    setTimeout(() => outgoing.end(body.slice(half)), gapMs)
  })
}

const started: Started[] = []
afterEach(async () => {
  await Promise.all(started.splice(0).map((app) => app.close()))
})

describe('a middleware that read part of the body before the payment route', () => {
  it('express: 500 body_already_parsed, not a 4xx blaming the sender', async () => {
    const { receiver, runs } = recordedReceiver()
    const app = express()
    app.use((request, _response, next) => {
      let bytes = 0
      request.on('data', (chunk: Buffer) => void (bytes += chunk.length))
      // An asynchronous step (a session lookup, say) before the routes.
      setTimeout(next, 150)
    })
    app.post('/fpx/callback', expressAdapter.fpxCallback(receiver))
    const server = await serve(app)
    started.push(server)
    const reply = await postInTwo(server.url, '/fpx/callback', signed().body, 300)
    expect(reply.status, reply.text).toBeGreaterThanOrEqual(500)
    expect(JSON.parse(reply.text).error.code).toBe('body_already_parsed')
    expect(runs).toHaveLength(0)
  })

  it('koa: 500 body_already_parsed, not a 4xx blaming the sender', async () => {
    const { receiver, runs } = recordedReceiver()
    const koa = new Koa()
    koa.use(async (context, next) => {
      let bytes = 0
      context.req.on('data', (chunk: Buffer) => void (bytes += chunk.length))
      await new Promise((resolve) => setTimeout(resolve, 150))
      await next()
    })
    const router = new Router()
    router.post('/fpx/callback', koaAdapter.fpxCallback(receiver))
    koa.use(router.routes())
    const server = await serve(koa.callback())
    started.push(server)
    const reply = await postInTwo(server.url, '/fpx/callback', signed().body, 300)
    expect(reply.status, reply.text).toBeGreaterThanOrEqual(500)
    expect(JSON.parse(reply.text).error.code).toBe('body_already_parsed')
    expect(runs).toHaveLength(0)
  })

  it('express: a middleware that peeked and put the bytes back leaves the body whole: handled, 200', async () => {
    const { receiver, runs } = recordedReceiver()
    const app = express()
    app.use((request, _response, next) => {
      request.once('readable', () => {
        const head = request.read() as Buffer | null
        if (head !== null) request.unshift(head)
        next()
      })
    })
    app.post('/fpx/callback', expressAdapter.fpxCallback(receiver))
    const server = await serve(app)
    started.push(server)
    const reply = await post(server.url, '/fpx/callback', { body: signed().body, contentType: FORM })
    expect([reply.status, reply.text]).toEqual([200, 'OK'])
    expect(runs).toHaveLength(1)
  })
})
