import { describe, expect, it } from 'vitest'
import { createReceiver, type PaymentEvent, type Receiver, type ReceiverOptions, verifyDelivery } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { independentForm } from './independent-signer.js'

const FORM = 'application/x-www-form-urlencoded'
const TOKEN_A = 'ab'.repeat(32)
const TOKEN_B = 'cd'.repeat(32)
const TOKEN_C = 'ef'.repeat(32)
const UID_A = '6f1c2a4e-8b3d-4f7a-9c2e-1d5b7a9e3f10'
const UID_B = '0a9b8c7d-6e5f-4a3b-8c1d-2e3f4a5b6c7d'
const UID_C = '9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b'
/** A merchant id as real messages sign it in `uid`: 20 hexadecimal characters, not the API UID. */
const MERCHANT_ID = '3f9a0c1b2d4e5f6a7b8c'

const threeSets: ReceiverOptions = {
  credentials: [
    { uid: UID_A, checksumToken: TOKEN_A },
    { uid: UID_B, checksumToken: TOKEN_B },
    { uid: UID_C, checksumToken: TOKEN_C },
  ],
}

function recorded(options: ReceiverOptions): { receiver: Receiver; events: PaymentEvent[] } {
  const receiver = createReceiver({ signatureOnly: true, ...options } as ReceiverOptions)
  const events: PaymentEvent[] = []
  for (const name of ['payment.succeeded', 'payment.failed', 'payment.pending'] as const) receiver.on(name, (event) => void events.push(event))
  return { receiver, events }
}

function textFields(overrides: Record<string, string | undefined> = {}): Record<string, string> {
  const text: Record<string, string> = {}
  for (const [name, value] of Object.entries(samplePaymentFields(overrides))) if (value !== undefined) text[name] = String(value)
  return text
}

const signers = [
  ['the test helper', (fields: Record<string, string>, token: string) => signCallback(fields, token).body],
  ['an independent signer', (fields: Record<string, string>, token: string) => independentForm(fields, token)],
] as const

describe.each(signers)('a uid that is not the API UID (signed by %s)', (_label, sign) => {
  it("tries each set's token when the uid names none, and says which matched", async () => {
    const { receiver, events } = recorded(threeSets)
    for (const token of [TOKEN_C, TOKEN_A, TOKEN_B]) {
      const response = await receiver.handle({ kind: 'callback', body: sign(textFields({ uid: MERCHANT_ID }), token), contentType: FORM })
      expect([response.status, response.outcome]).toEqual([200, 'processed'])
    }
    expect(events.map((event) => [event.credential, event.payment.uid])).toEqual([
      [{ uid: UID_C, index: 2, by: 'checksum' }, MERCHANT_ID],
      [{ uid: UID_A, index: 0, by: 'checksum' }, MERCHANT_ID],
      [{ uid: UID_B, index: 1, by: 'checksum' }, MERCHANT_ID],
    ])
  })

  it('does the same for a message without uid', async () => {
    const { receiver } = recorded(threeSets)
    const verified = await receiver.verify({ body: sign(textFields({ uid: undefined }), TOKEN_B), contentType: FORM })
    expect(verified.credential).toEqual({ uid: UID_B, index: 1, by: 'checksum' })
  })

  it('refuses with unknown_uid when no set signed it, without naming any token', async () => {
    const { receiver, events } = recorded(threeSets)
    const response = await receiver.handle({ kind: 'callback', body: sign(textFields({ uid: MERCHANT_ID }), '01'.repeat(32)), contentType: FORM })
    expect([response.status, response.error?.code]).toEqual([401, 'unknown_uid'])
    expect(response.error?.message).toContain(MERCHANT_ID)
    expect(response.error?.message).toContain('3 configured Checksum Tokens')
    for (const token of [TOKEN_A, TOKEN_B, TOKEN_C]) expect(response.body).not.toContain(token.slice(0, 8))
    expect(events).toHaveLength(0)
  })

  it('refuses a forged message whose uid names no set', async () => {
    const { receiver, events } = recorded(threeSets)
    const params = new URLSearchParams(sign(textFields({ uid: MERCHANT_ID }), TOKEN_B))
    params.set('transaction_amount', '1.00')
    const response = await receiver.handle({ kind: 'callback', body: params.toString(), contentType: FORM })
    expect([response.status, response.error?.code]).toEqual([401, 'unknown_uid'])
    expect(events).toHaveLength(0)
  })

  it("uses the uid's own set only, when the uid names one", async () => {
    const { receiver, events } = recorded(threeSets)
    const own = await receiver.handle({ kind: 'callback', body: sign(textFields({ uid: UID_B }), TOKEN_B), contentType: FORM })
    // Signed with another set's token: the uid chose B, so this is a mismatch, not a search.
    const crossed = await receiver.handle({ kind: 'callback', body: sign(textFields({ uid: UID_B }), TOKEN_A), contentType: FORM })
    expect([own.status, crossed.status, crossed.error?.code]).toEqual([200, 401, 'checksum_mismatch'])
    expect(events.map((event) => event.credential)).toEqual([{ uid: UID_B, index: 1, by: 'uid' }])
  })

  it('uses the only configured set whatever uid the message signs', async () => {
    const { receiver, events } = recorded({ credentials: [{ uid: UID_A, checksumToken: TOKEN_A }] })
    const response = await receiver.handle({ kind: 'callback', body: sign(textFields({ uid: MERCHANT_ID }), TOKEN_A), contentType: FORM })
    const wrong = await receiver.handle({ kind: 'callback', body: sign(textFields({ uid: MERCHANT_ID }), TOKEN_B), contentType: FORM })
    expect([response.status, wrong.status, wrong.error?.code]).toEqual([200, 401, 'checksum_mismatch'])
    expect(events.map((event) => event.credential)).toEqual([{ uid: UID_A, index: 0, by: 'only' }])
  })

  it('has no credential to report with a single checksumToken', async () => {
    const { receiver, events } = recorded({ checksumToken: TOKEN_A })
    expect((await receiver.handle({ kind: 'callback', body: sign(textFields({ uid: MERCHANT_ID }), TOKEN_A), contentType: FORM })).status).toBe(200)
    expect(events[0]!.credential).toBeUndefined()
  })
})

describe('credential fallback, other paths', () => {
  it('matches nested fields in any rendering for the fallback too', async () => {
    const fields = samplePaymentFields({ uid: MERCHANT_ID, params: { reference1_label: 'Size', reference1: 'XL' } })
    for (const rendering of ['ruby', 'ruby34', 'flat'] as const) {
      const signed = signCallback(fields, TOKEN_C, { rendering })
      const verified = await verifyDelivery({ body: signed.body, contentType: signed.contentType }, threeSets)
      expect([verified.rendering, verified.credential]).toEqual([rendering, { uid: UID_C, index: 2, by: 'checksum' }])
    }
  })

  it('leaves resolveChecksumToken in charge of its own answer', async () => {
    const asked: string[] = []
    const { receiver } = recorded({ resolveChecksumToken: (uid) => void asked.push(uid) })
    const response = await receiver.handle({ kind: 'callback', body: signCallback(textFields({ uid: MERCHANT_ID }), TOKEN_A).body, contentType: FORM })
    expect([response.status, response.error?.code, asked]).toEqual([401, 'unknown_uid', [MERCHANT_ID]])
  })

  it('keeps a uid given twice on its last token, as before', async () => {
    const options: ReceiverOptions = {
      credentials: [
        { uid: UID_A, checksumToken: TOKEN_A },
        { uid: UID_A, checksumToken: TOKEN_B },
      ],
    }
    const verified = await verifyDelivery({ body: signCallback(textFields({ uid: MERCHANT_ID }), TOKEN_B).body, contentType: FORM }, options)
    expect(verified.credential).toEqual({ uid: UID_A, index: 1, by: 'only' })
  })
})
