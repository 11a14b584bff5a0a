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

/** Hands out the pre-generated requests in order; running past the end would resend bodies, so it is noted. */
export class Feed implements RequestFeed {
  private next = 0
  wrapped = false
  constructor(private readonly items: readonly Signed[]) {}
  take(): Signed {
    if (this.next === this.items.length) {
      this.next = 0
      this.wrapped = true
    }
    return this.items[this.next++]!
  }
}

/** Successful B2C callbacks, each with its own exchange_number, signed as the service signs them. */
export function callbackBodies(count: number, checksumToken: string): Signed[] {
  const headers = { 'content-type': 'application/x-www-form-urlencoded' }
  return signedCallbacks(count, checksumToken).map((body) => ({ body, headers }))
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
