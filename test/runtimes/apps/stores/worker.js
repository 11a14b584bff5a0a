/**
 * The store probe in a Worker: GET /?client=<name> opens the client in the request and closes it after;
 * GET /?client=<name>&keep keeps one client, store and receiver for all requests, as a receiver created at
 * module scope would.
 */
import { env } from 'cloudflare:workers'
import { describe, probeKept, probeOnce } from './probe.js'

const config = { redisUrl: env.REDIS_URL, databaseUrl: env.DATABASE_URL, upstashUrl: env.UPSTASH_URL, upstashToken: env.UPSTASH_TOKEN, checksumToken: env.FPX_CHECKSUM_TOKEN }

export default {
  async fetch(request) {
    const url = new URL(request.url)
    const name = url.searchParams.get('client')
    try {
      return Response.json(await (url.searchParams.has('keep') ? probeKept(name, config) : probeOnce(name, config)))
    } catch (error) {
      return Response.json({ error: describe(error) })
    }
  },
}
