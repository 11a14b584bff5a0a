import { describe, expect, it } from 'vitest'
import { createReceiver, type PaymentEvent, type Receiver, type ReceiverOptions, type ReceiverResponse, requestChecksum, verifyDelivery } from '../../src/index.js'
import { createClient } from '../../src/client/index.js'
import { samplePaymentFields } from '../../src/testing.js'
import { independentForm } from './independent-signer.js'

/*
 * An empty Checksum Token is an HMAC key anybody has: a message signed with it must never be accepted, whichever
 * way the receiver finds its token. Each path refuses it where it can: configured tokens when the receiver is made,
 * a looked-up one (per uid, at delivery time) as unknown, so that nothing reaches a handler.
 */

const FORM = 'application/x-www-form-urlencoded'
const TOKEN = 'ab'.repeat(32)
const UID_A = '6f1c2a4e-8b3d-4f7a-9c2e-1d5b7a9e3f10'
const UID_B = '0a9b8c7d-6e5f-4a3b-8c1d-2e3f4a5b6c7d'

function textFields(overrides: Record<string, string | undefined> = {}): Record<string, string> {
  const text: Record<string, string> = {}
  for (const [name, value] of Object.entries(samplePaymentFields(overrides))) if (value !== undefined) text[name] = String(value)
  return text
}

/** A payment result signed with the empty key, by a signer sharing no code with the package. */
const forged = (uid = UID_A) => independentForm(textFields({ uid }), '')

function withHandlers(options: ReceiverOptions): { receiver: Receiver; events: PaymentEvent[] } {
  const receiver = createReceiver({ signatureOnly: true, ...options } as ReceiverOptions)
  const events: PaymentEvent[] = []
  for (const name of ['payment.succeeded', 'payment.failed', 'payment.pending'] as const) receiver.on(name, (event) => void events.push(event))
  return { receiver, events }
}

async function refused(receiver: Receiver, kind: 'callback' | 'redirect' = 'callback'): Promise<ReceiverResponse> {
  return receiver.handle({ kind, body: forged(), contentType: FORM })
}

describe('an empty Checksum Token', () => {
  it('is refused when the receiver is made, as checksumToken or in credentials', () => {
    expect(() => createReceiver({ signatureOnly: true, checksumToken: '' })).toThrow(/checksumToken must be a non-empty string/)
    expect(() => createReceiver({ signatureOnly: true, credentials: [{ uid: UID_A, checksumToken: '' }] })).toThrow(/credentials\[0\]\.checksumToken must be a non-empty string/)
    // One set among several: its token would be tried for every message whose uid names no set.
    expect(() =>
      createReceiver({ signatureOnly: true,
        credentials: [
          { uid: UID_A, checksumToken: TOKEN },
          { uid: UID_B, checksumToken: '' },
        ],
      }),
    ).toThrow(/credentials\[1\]\.checksumToken must be a non-empty string/)
  })

  it('is refused by verifyDelivery too, before any message is read', async () => {
    const delivery = { kind: 'callback' as const, body: forged(), contentType: FORM }
    await expect(async () => verifyDelivery(delivery, { checksumToken: '' })).rejects.toThrow(/checksumToken must be a non-empty string/)
    await expect(async () => verifyDelivery(delivery, { credentials: [{ uid: UID_A, checksumToken: '' }] })).rejects.toThrow(
      /checksumToken must be a non-empty string/,
    )
  })

  for (const [label, resolve] of [
    ['a synchronous resolveChecksumToken', () => ''],
    ['an asynchronous resolveChecksumToken', async () => ''],
  ] as const) {
    it(`from ${label} means the uid is unknown: 401, no handler runs`, async () => {
      const asked: string[] = []
      const { receiver, events } = withHandlers({
        resolveChecksumToken: (uid) => {
          asked.push(uid)
          return resolve()
        },
      })
      for (const kind of ['callback', 'redirect'] as const) {
        const response = await refused(receiver, kind)
        expect([response.status, response.outcome, response.error?.code]).toEqual([401, 'rejected', 'unknown_uid'])
      }
      expect(asked).toEqual([UID_A, UID_A])
      expect(events).toEqual([])
    })
  }

  it('from a per-uid lookup refuses only the uid it is empty for', async () => {
    const { receiver, events } = withHandlers({ resolveChecksumToken: (uid) => (uid === UID_B ? TOKEN : '') })
    const empty = await refused(receiver)
    expect([empty.status, empty.error?.code]).toEqual([401, 'unknown_uid'])
    const genuine = await receiver.handle({ kind: 'callback', body: independentForm(textFields({ uid: UID_B }), TOKEN), contentType: FORM })
    expect([genuine.status, genuine.outcome]).toEqual([200, 'processed'])
    expect(events.map((event) => event.payment.uid)).toEqual([UID_B])
  })

  it('from resolveChecksumToken is refused by verifyDelivery as unknown_uid', async () => {
    const delivery = { kind: 'callback' as const, body: forged(), contentType: FORM }
    await expect(verifyDelivery(delivery, { resolveChecksumToken: async () => '' })).rejects.toMatchObject({ code: 'unknown_uid' })
  })

  it('is refused for signing payment requests and by the API client', () => {
    const fields = { uid: UID_A, order_number: 'ORD-1', transaction_amount: '1.00', buyer_email: 'b@example.test', buyer_name: 'B', callback_url: 'https://shop.example.test/cb' }
    expect(() => requestChecksum(fields as never, '')).toThrow(/checksumToken must be a non-empty string/)
    expect(() => createClient({ environment: 'sandbox', uid: UID_A, authToken: TOKEN, checksumToken: '' })).toThrow(/checksumToken must be a non-empty string/)
  })
})

/*
 * HMAC pads a key shorter than a block with zero bytes, so a token of NUL characters only signs exactly as the
 * empty one does; and a resolveChecksumToken that resolves to something other than text (an empty Buffer from a
 * driver, an empty list, a number from a parsed config) was hashed as key bytes too: an empty Buffer or list is
 * the empty key again, and a number made Node's own TypeError, which quotes the value, reach the error log.
 */
describe('the empty key in disguise, and a looked-up token that is not text', () => {
  it('a token of NUL characters only is refused as the empty one is, when the receiver is made', () => {
    for (const token of ['\0', '\0'.repeat(64)]) {
      expect(() => createReceiver({ signatureOnly: true, checksumToken: token })).toThrow(/checksumToken must be a non-empty string/)
      expect(() => createReceiver({ signatureOnly: true, credentials: [{ uid: UID_A, checksumToken: token }] })).toThrow(/credentials\[0\]\.checksumToken must be/)
      expect(() => requestChecksum({ uid: UID_A, order_number: 'ORD-1' } as never, token)).toThrow(/checksumToken must be a non-empty string/)
      expect(() => createClient({ environment: 'sandbox', uid: UID_A, authToken: TOKEN, checksumToken: token })).toThrow(/checksumToken must be a non-empty string/)
    }
  })

  const SECRET = 12_345_678_901
  for (const [label, junk] of [
    ['an empty Buffer', Buffer.alloc(0)],
    ['an empty list', []],
    ['NUL characters only', '\0\0'],
    ['a number', SECRET],
    ['an object', { token: TOKEN }],
  ] as const) {
    it(`from resolveChecksumToken resolving to ${label} is a clear 500, never the empty key, never the value in a log`, async () => {
      const logged: string[] = []
      const log = (details: object, message: string) => void logged.push(`${message} ${JSON.stringify(details)} ${String((details as { err?: unknown }).err ?? '')}`)
      const { receiver, events } = withHandlers({
        resolveChecksumToken: async () => junk as never,
        logger: { debug: log, info: log, warn: log, error: log },
      })
      const response = await refused(receiver)
      expect([response.status, response.outcome, response.error?.code]).toEqual([500, 'rejected', 'credential_lookup_failed'])
      expect(response.error?.message).toMatch(/resolveChecksumToken .*not .*Checksum Token/)
      expect(events).toEqual([])
      const said = [response.error?.message, ...logged].join('\n')
      expect(said).not.toContain(String(SECRET))
      expect(said).not.toContain(TOKEN)
    })
  }
})
