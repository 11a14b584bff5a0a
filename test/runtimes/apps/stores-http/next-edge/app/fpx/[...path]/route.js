/**
 * Vercel's edge runtime through Next.js, on the durable store over HTTP. `next build` evaluates route modules
 * without the app's variables, so the shop is created on first use (docs/nextjs.md) and kept. Next's after() hands
 * the receiver's background work to the platform (Vercel's waitUntil underneath).
 */
import { after } from 'next/server'
import { createUpstashShop } from '../../../../shop.js'

export const runtime = 'edge'

let shop
const getShop = () =>
  (shop ??= createUpstashShop({
    upstashUrl: process.env.UPSTASH_URL,
    upstashToken: process.env.UPSTASH_TOKEN,
    checksumToken: process.env.FPX_CHECKSUM_TOKEN,
    prefix: process.env.STORE_PREFIX,
  }))

const handle = (request) => getShop().fetch(request, (work) => after(work))
export const GET = handle
export const POST = handle
