/**
 * Vercel's edge runtime through Next.js: one edge route for /fpx/callback, /fpx/redirect and /status. One route,
 * because each edge route runs in its own context: routes in separate files would each have their own receiver
 * and memory store, and the redirect after a callback would run the handler again.
 */
import { after } from 'next/server'
import { shop } from '../../lib/shop.js'

export const runtime = 'edge'

/** The timeline is written after the answer: after() hands that work to the platform (Vercel's waitUntil). */
function handle(request) {
  after(() => shop.flush())
  return shop.fetch(request)
}

export const GET = handle
export const POST = handle
