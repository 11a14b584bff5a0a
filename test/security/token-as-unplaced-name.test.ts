/**
 * Signature only, a result is acted on only when every name it carries is one the service sends (pinning.ts): a
 * genuine result with a field renamed to anything else is refused with needs_confirmation, whose reason names the
 * field. The buyer, holding a result that echoes the Auth Token (`token`), can rename a field to the token's value
 * where it sorts in that field's place (`amount` is first, and a token that starts with a capital sorts before it),
 * or join two neighbours' values under it. The reason must not quote it: it is the sender's answer, a log line, the
 * payment's timeline in the store, and verifyDelivery()'s unpinnedReason.
 */
import { describe, expect, it } from 'vitest'
import { createReceiver, type Logger, memoryStore, type ReceiverOptions, verifyDelivery } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

const AUTH = 'Zq7mNb3Xk9Lp2Rt5Vw8Y'
const CHECKSUM = '0123456789abcdef'.repeat(4)
const UID = '0c0ffee0-d3e0-4a11-8f00-00000000d3e0'
const FORM = 'application/x-www-form-urlencoded'

/** The buyer's copy of a genuine result: `amount` under another name, or joined with `buyer_email` (its neighbour). */
function copy(rename: 'renamed' | 'joined'): { orderNumber: string; body: string } {
  const fields = samplePaymentFields({ uid: UID, token: AUTH })
  const genuine = [...new URLSearchParams(signCallback(fields, CHECKSUM).body)]
  const pairs =
    rename === 'renamed'
      ? genuine.map(([name, value]): [string, string] => [name === 'amount' ? AUTH : name, value])
      : genuine.flatMap(([name, value]): [string, string][] =>
          name === 'buyer_email' ? [] : name === 'amount' ? [[AUTH, `${value}|${fields.buyer_email as string}`]] : [[name, value]],
        )
  return { orderNumber: fields.order_number as string, body: new URLSearchParams(pairs).toString() }
}

const receivers: [string, Partial<ReceiverOptions<unknown>>][] = [
  ['with the Auth Token configured', { credentials: { uid: UID, authToken: AUTH, checksumToken: CHECKSUM } }],
  ['with a bare checksumToken', { checksumToken: CHECKSUM }],
]

describe.each(receivers)('a signature-only receiver %s, a genuine result with a field renamed to the Auth Token', (_name, credentials) => {
  it.each(['renamed', 'joined'] as const)('%s: the refusal quotes no token', async (rename) => {
    const lines: string[] = []
    const at = (details: object, message: string) => void lines.push(`${message} ${JSON.stringify(details)}`)
    const logger: Logger = { debug: at, info: at, warn: at, error: at }
    const receiver = createReceiver({ signatureOnly: true, store: memoryStore(), logger, ...credentials } as ReceiverOptions<unknown>)
    receiver.onAny(() => {})
    const sent = copy(rename)
    const response = await receiver.handle({ kind: 'callback', body: sent.body, contentType: FORM })
    expect(response.error?.code).toBe('needs_confirmation')
    expect(JSON.stringify(response)).not.toContain(AUTH)
    expect(lines.join('\n')).toContain('needs_confirmation')
    expect(lines.join('\n')).not.toContain(AUTH)
    const timeline = await receiver.timeline(sent.orderNumber)
    expect(timeline.length).toBeGreaterThan(0)
    expect(JSON.stringify(timeline)).not.toContain(AUTH)
    const verified = await verifyDelivery({ body: sent.body, contentType: FORM }, credentials as never)
    expect(verified.unpinnedReason).toBeDefined()
    expect(verified.unpinnedReason).not.toContain(AUTH)
  })
})
