/**
 * The servers that bench/http.ts loads, one per scenario. bench/http.ts runs each in a child process
 * (`node --import tsx bench/http-servers.ts <scenario>`) so that the server has a core to itself and autocannon
 * the other; BENCH_IN_PROCESS=1 starts them in its own process instead, for comparison.
 */
import { createHmac } from 'node:crypto'
import { createServer, type RequestListener } from 'node:http'
import type { AddressInfo } from 'node:net'
import { pathToFileURL } from 'node:url'
import formbody from '@fastify/formbody'
import { bodyParser } from '@koa/bodyparser'
import Router from '@koa/router'
import { createNodeMiddleware, Webhooks } from '@octokit/webhooks'
import express from 'express'
import Fastify from 'fastify'
import Koa from 'koa'
import type { Receiver } from '../src/index.js'
import { type Core, fromDist } from './dist.js'

// The built package, as merchants run it.
const { createReceiver, memoryStore } = await fromDist<Core>('index')
const { fpxCallback: expressCallback } = await fromDist<typeof import('../adapters/express.js')>('express')
const { fpxCollect } = await fromDist<typeof import('../adapters/fastify.js')>('fastify')
const { fpxCallback: koaCallback } = await fromDist<typeof import('../adapters/koa.js')>('koa')

export const CHECKSUM_TOKEN = 'ab'.repeat(32)
export const WEBHOOK_SECRET = 'cd'.repeat(32)
export const CALLBACK_PATH = '/fpx/callback'
export const WEBHOOK_PATH = '/api/github/webhooks'

export const SCENARIOS = [
  'express-parser',
  'express-fpx',
  'koa-parser',
  'koa-fpx',
  'fastify-ceiling',
  'fastify-handle',
  'fastify-parser',
  'fastify-fpx',
  'octokit',
  'node-fpx',
] as const
export type Scenario = (typeof SCENARIOS)[number]

export interface ServerStats {
  /** Deliveries the handler accepted: 200s never outnumber them unless some were answered as duplicates. */
  handled: number
  /** User and system CPU time of the server's process so far. */
  cpuMicros: number
}

export interface RunningServer {
  port: number
  stats(): ServerStats
  close(): Promise<void>
}

/** What merchants write today: the parser's object, checksum out, keys sorted, values joined by '|', HMAC, compare. */
function naiveVerified(body: unknown): boolean {
  if (body === null || typeof body !== 'object') return false
  const { checksum, ...rest } = body as Record<string, unknown>
  if (typeof checksum !== 'string') return false
  const text = Object.keys(rest)
    .sort()
    .map((name) => rest[name])
    .join('|')
  return createHmac('sha256', CHECKSUM_TOKEN).update(text).digest('hex') === checksum
}

interface Counter {
  handled: number
}

function snapshot(counter: Counter): ServerStats {
  const { user, system } = process.cpuUsage()
  return { handled: counter.handled, cpuMicros: user + system }
}

function countingReceiver(stats: Counter): Receiver {
  // BENCH_OBSERVE=0: without the timeline and OpenTelemetry (both on by default), as bench:receiver offers.
  const observed = process.env.BENCH_OBSERVE !== '0'
  const receiver = createReceiver({ checksumToken: CHECKSUM_TOKEN, signatureOnly: true, logger: false, store: memoryStore(), ...(observed ? {} : { timeline: false, telemetry: false }) })
  const handler = (): void => {
    stats.handled++
  }
  receiver.on('payment.succeeded', handler)
  receiver.on('payment.failed', handler)
  receiver.on('payment.pending', handler)
  return receiver
}

async function listenNode(listener: RequestListener, stats: Counter): Promise<RunningServer> {
  const server = createServer(listener)
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', resolve)
  })
  return {
    port: (server.address() as AddressInfo).port,
    stats: () => snapshot(stats),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()))
        server.closeAllConnections()
      }),
  }
}

function expressApp(scenario: 'express-parser' | 'express-fpx', stats: Counter): express.Express {
  const app = express()
  if (scenario === 'express-fpx') {
    app.post(CALLBACK_PATH, expressCallback(countingReceiver(stats)))
  } else {
    app.post(CALLBACK_PATH, express.urlencoded({ extended: false }), (request, response) => {
      if (!naiveVerified(request.body)) {
        response.status(401).send('Unauthorized')
        return
      }
      stats.handled++
      response.status(200).type('text/plain').send('OK')
    })
  }
  return app
}

function koaApp(scenario: 'koa-parser' | 'koa-fpx', stats: Counter): Koa {
  const app = new Koa()
  const router = new Router()
  if (scenario === 'koa-fpx') {
    router.post(CALLBACK_PATH, koaCallback(countingReceiver(stats)))
  } else {
    app.use(bodyParser())
    router.post(CALLBACK_PATH, (context) => {
      if (!naiveVerified(context.request.body)) {
        context.status = 401
        context.body = 'Unauthorized'
        return
      }
      stats.handled++
      context.status = 200
      context.body = 'OK'
    })
  }
  app.use(router.routes())
  return app
}

type FastifyScenario = 'fastify-ceiling' | 'fastify-handle' | 'fastify-parser' | 'fastify-fpx'

async function fastifyServer(scenario: FastifyScenario, stats: Counter): Promise<RunningServer> {
  const app = Fastify()
  if (scenario === 'fastify-ceiling' || scenario === 'fastify-handle') {
    // The ceiling: Fastify reading the body as a buffer and answering OK, no verification at all. With the
    // receiver's handle() called straight from the route (no plugin, no error handler, no answerDelivery), the
    // difference to the plugin is the adapter's own cost.
    app.removeAllContentTypeParsers()
    app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body))
    if (scenario === 'fastify-ceiling') {
      app.post(CALLBACK_PATH, async (request, reply) => {
        if (!(request.body instanceof Buffer) || request.body.length === 0) return reply.code(400).send('no body')
        stats.handled++
        return reply.code(200).type('text/plain; charset=utf-8').send('OK')
      })
    } else {
      const receiver = countingReceiver(stats)
      app.post(CALLBACK_PATH, async (request, reply) => {
        const response = await receiver.handle({ kind: 'callback', body: request.body as Buffer, contentType: request.headers['content-type'] ?? null })
        return reply.code(response.status).headers(response.headers).send(response.body)
      })
    }
  } else if (scenario === 'fastify-fpx') {
    await app.register(fpxCollect, { receiver: countingReceiver(stats), callbackPath: CALLBACK_PATH, redirectPath: false })
  } else {
    await app.register(formbody)
    app.post(CALLBACK_PATH, async (request, reply) => {
      if (!naiveVerified(request.body)) return reply.code(401).send('Unauthorized')
      stats.handled++
      return reply.code(200).type('text/plain').send('OK')
    })
  }
  await app.listen({ port: 0, host: '127.0.0.1' })
  return {
    port: (app.server.address() as AddressInfo).port,
    stats: () => snapshot(stats),
    close: () => app.close(),
  }
}

function octokitListener(stats: Counter): RequestListener {
  const webhooks = new Webhooks({ secret: WEBHOOK_SECRET })
  webhooks.on('push', () => {
    stats.handled++
  })
  const middleware = createNodeMiddleware(webhooks, { path: WEBHOOK_PATH })
  return (request, response) => {
    void middleware(request, response)
  }
}

/** The Express middleware needs nothing from Express: on bare node:http it is like for like with (c). */
function nodeFpxListener(stats: Counter): RequestListener {
  const callback = expressCallback(countingReceiver(stats))
  return (request, response) => {
    callback(request, response, (error?: unknown) => {
      response.statusCode = 500
      response.end(String(error))
    })
  }
}

export async function startServer(scenario: Scenario): Promise<RunningServer> {
  const stats = { handled: 0 }
  switch (scenario) {
    case 'express-parser':
    case 'express-fpx':
      return listenNode(expressApp(scenario, stats), stats)
    case 'koa-parser':
    case 'koa-fpx':
      return listenNode(koaApp(scenario, stats).callback(), stats)
    case 'fastify-ceiling':
    case 'fastify-handle':
    case 'fastify-parser':
    case 'fastify-fpx':
      return fastifyServer(scenario, stats)
    case 'octokit':
      return listenNode(octokitListener(stats), stats)
    case 'node-fpx':
      return listenNode(nodeFpxListener(stats), stats)
  }
}

/** Messages between bench/http.ts and a server child. */
export type ToServer = { type: 'stats' } | { type: 'close' }
export type FromServer = { type: 'listening'; port: number } | { type: 'stats'; stats: ServerStats }

async function runChild(scenario: string | undefined): Promise<void> {
  if (!SCENARIOS.includes(scenario as Scenario)) throw new Error(`unknown scenario ${scenario}; use one of ${SCENARIOS.join(', ')}`)
  const send = (message: FromServer): void => {
    process.send?.(message)
  }
  const server = await startServer(scenario as Scenario)
  // The parent gone means nobody will ask us to close: go with it rather than linger.
  const orphaned = (): never => process.exit(1)
  process.once('disconnect', orphaned)
  process.on('message', (message: ToServer) => {
    if (message.type === 'stats') send({ type: 'stats', stats: server.stats() })
    if (message.type === 'close')
      // Exiting by running out of work, not process.exit(), so a --cpu-prof profile is written whole.
      void server.close().then(() => {
        process.off('disconnect', orphaned)
        process.disconnect()
      })
  })
  send({ type: 'listening', port: server.port })
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runChild(process.argv[2]).catch((error: unknown) => {
    console.error(error)
    process.exit(1)
  })
}
