/**
 * The requests bench/http.ts sends: signed once before the run, so that signing costs the load generator
 * nothing while it measures.
 */
import { createHmac, randomBytes, randomUUID } from 'node:crypto'
import { fromDist, type Testing } from './dist.js'

const { samplePaymentFields, signCallback } = await fromDist<Testing>('testing')

export interface Signed {
  body: Buffer
  headers: Record<string, string>
}

/** Hands out the pre-generated requests in order; running past the end would resend bodies, so it is noted. */
export class Feed {
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
  const seen = new Set<string>()
  const signed: Signed[] = []
  while (signed.length < count) {
    const fields = samplePaymentFields()
    // Ten random digits collide now and then over 100k draws; a repeat would be a duplicate delivery.
    if (seen.has(String(fields.exchange_number))) continue
    seen.add(String(fields.exchange_number))
    signed.push({ body: Buffer.from(signCallback(fields, checksumToken).body), headers })
  }
  return signed
}

/** Push events padded to `size` bytes, each with its own delivery id and commit, signed as GitHub signs them. */
export function webhookDeliveries(count: number, size: number, secret: string): Signed[] {
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
  const signed: Signed[] = []
  for (let i = 0; i < count; i++) {
    const payload = Buffer.from(push(randomBytes(20).toString('hex'), message))
    const headers = {
      'content-type': 'application/json',
      'x-github-event': 'push',
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(payload).digest('hex')}`,
    }
    signed.push({ body: payload, headers })
  }
  return signed
}
