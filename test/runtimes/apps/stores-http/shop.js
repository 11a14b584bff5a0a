/**
 * The durable store for Workers and edge functions, as a shop would set it up: the Redis store over HTTP through
 * @upstash/redis, the client, store and receiver created at module scope (every command is a fetch, so nothing
 * ties them to one request). After each answer the receiver's background work (the timeline, written in batches)
 * is handed to the runtime with `waitUntil(receiver.flush())`, so that it is not cut off when the response ends.
 * POST /fpx/callback takes a delivery; `?after=none` skips the hand-over, to see what the runtime does without it.
 * GET /runs says how many times the handler ran per exchange_number.
 */
import { Redis } from '@upstash/redis'
import { createReceiver } from 'fpx-collect'
import { redisStore } from 'fpx-collect/redis'
import { fpxCallback } from 'fpx-collect/web'

/** config: { upstashUrl, upstashToken, checksumToken, prefix }, from the runtime's environment. */
export function createUpstashShop(config) {
  // Replies must stay text: automaticDeserialization would parse "1" and the timeline's JSON.
  const redis = new Redis({ url: config.upstashUrl, token: config.upstashToken, automaticDeserialization: false, enableTelemetry: false })
  const store = redisStore({ client: { sendCommand: (args) => redis.exec(args) }, prefix: config.prefix, inspect: false })
  // Signature only: the probe's payments are made up here, not the emulator's.
  const receiver = createReceiver({ checksumToken: config.checksumToken, signatureOnly: true, store })
  const runs = new Map()
  receiver.on('payment.succeeded', (event) => {
    runs.set(event.payment.exchangeNumber, (runs.get(event.payment.exchangeNumber) ?? 0) + 1)
  })
  const callback = fpxCallback(receiver)

  /** waitUntil: the runtime's (ctx.waitUntil on Workers, Next's after() on Vercel's edge). */
  async function fetch(request, waitUntil) {
    const url = new URL(request.url)
    if (request.method === 'POST' && url.pathname.endsWith('/fpx/callback')) {
      const response = await callback(request)
      if (url.searchParams.get('after') !== 'none') waitUntil(receiver.flush())
      return response
    }
    if (request.method === 'GET' && url.pathname.endsWith('/runs')) return Response.json(Object.fromEntries(runs))
    return new Response('not found', { status: 404 })
  }
  return { fetch }
}
