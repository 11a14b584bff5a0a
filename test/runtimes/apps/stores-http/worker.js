/**
 * A Worker without nodejs_compat (the web platform only) on the durable store over HTTP. The receiver is created at
 * module scope; each answer hands the receiver's background work to the runtime with ctx.waitUntil.
 */
import { env } from 'cloudflare:workers'
import { createUpstashShop } from './shop.js'

const shop = createUpstashShop({ upstashUrl: env.UPSTASH_URL, upstashToken: env.UPSTASH_TOKEN, checksumToken: env.FPX_CHECKSUM_TOKEN, prefix: env.STORE_PREFIX })

export default {
  fetch: (request, _env, ctx) => shop.fetch(request, (work) => ctx.waitUntil(work)),
}
