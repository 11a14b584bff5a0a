/**
 * The requests bench/http.ts sends: signed once before the run, so that signing costs the load generator
 * nothing while it measures.
 */
import { createHmac, randomBytes, randomUUID } from 'node:crypto'
import { signedCallbacks } from './signed-callbacks.js'

export interface Signed {
  body: Buffer
  headers: Record<string, string>
}

export interface RequestFeed {
  take(): Signed
  /** Whether some request was sent twice. */
  readonly wrapped: boolean
}

/** Successful B2C callbacks, each with its own exchange_number, signed as the service signs them. */
export function callbackBodies(count: number, checksumToken: string): Signed[] {
  const headers = { 'content-type': 'application/x-www-form-urlencoded' }
  return signedCallbacks(count, checksumToken).map((body) => ({ body, headers }))
}

/**
 * The pre-signed callbacks every scenario draws from, grown to the run: each scenario's server is new, so each takes
 * them from the start, and `ensure` signs more (between a warm-up and the measured run, while the server idles) when
 * fewer are left than the run will take. A fixed pool was outrun: Fastify alone answered more than its 60,000.
 */
export class CallbackPool {
  readonly items: Signed[]
  constructor(
    count: number,
    private readonly checksumToken: string,
  ) {
    this.items = callbackBodies(count, checksumToken)
  }

  /** Makes the pool hold at least `count` callbacks; says how many it signed. */
  ensure(count: number): number {
    const missing = count - this.items.length
    if (missing <= 0) return 0
    for (const signed of callbackBodies(missing, this.checksumToken)) this.items.push(signed)
    return missing
  }
}

/** Hands out the pool's requests in order; running past its end would resend bodies, so it is noted. */
export class Feed implements RequestFeed {
  private next = 0
  wrapped = false
  constructor(private readonly pool: CallbackPool) {}

  /** Makes sure `count` more requests can be taken without resending one. */
  ensure(count: number): number {
    return this.pool.ensure(this.next + count)
  }

  take(): Signed {
    if (this.next === this.pool.items.length) {
      this.next = 0
      this.wrapped = true
    }
    return this.pool.items[this.next++]!
  }
}

/**
 * Push events padded to `size` bytes, each with its own delivery id and commit, signed as GitHub signs them when
 * taken: never runs out, however fast the server (the pre-generated list did for octokit at the default
 * BENCH_BODIES). Signing one costs the load generator a few microseconds.
 */
export class WebhookFeed implements RequestFeed {
  readonly wrapped = false
  private readonly template: string
  private count = 0
  constructor(
    size: number,
    private readonly secret: string,
  ) {
    const push = (after: string, message: string): string =>
      JSON.stringify({
        ref: 'refs/heads/main',
        before: '0'.repeat(40),
        after,
        repository: { id: 1296269, name: 'shop', full_name: 'example/shop', private: true },
        pusher: { name: 'aisyah', email: 'aisyah@example.com' },
        sender: { login: 'aisyah', id: 583231, type: 'User' },
        head_commit: { id: after, message, timestamp: '2026-01-01T00:00:00Z' },
      })
    const padding = size - push('0'.repeat(40), '').length
    if (padding < 0) throw new Error(`the push payload is already larger than ${size} bytes`)
    const message = 'Update the order page. '.repeat(Math.ceil(padding / 23)).slice(0, padding)
    this.template = push('@'.repeat(40), message)
  }

  take(): Signed {
    const after = `${randomBytes(8).toString('hex')}${(++this.count).toString(16)}`.padEnd(40, '0').slice(0, 40)
    const payload = Buffer.from(this.template.replaceAll('@'.repeat(40), after))
    const headers = {
      'content-type': 'application/json',
      'x-github-event': 'push',
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': `sha256=${createHmac('sha256', this.secret).update(payload).digest('hex')}`,
    }
    return { body: payload, headers }
  }
}
