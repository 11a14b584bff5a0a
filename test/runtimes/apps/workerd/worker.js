/**
 * A Cloudflare Worker, run by workerd under `wrangler dev --local`. The bindings are read at module scope through
 * cloudflare:workers, so the receiver is created when the module is evaluated, as a Worker's globals are.
 */
import { env } from 'cloudflare:workers'
import { configFrom, createShop } from '../shop.js'

const shop = createShop(configFrom((name) => env[name]), () => navigator.userAgent)

export default {
  async fetch(request, _env, ctx) {
    const response = await shop.fetch(request)
    // The timeline is written after the answer: the Worker's request ends with its response unless told to wait.
    ctx.waitUntil(shop.flush())
    return response
  },
}
