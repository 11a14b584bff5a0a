/**
 * A refused delivery's order_number and exchange_number are kept as what it claimed (never trusted), for the
 * console's refusals page and the payment's timeline, unless they hold a token the receiver knows. A receiver may
 * know no Auth Token for the message: a signature-only one given only a Checksum Token, or a partner's whose
 * resolver does not know the uid (the buyer chooses it, and a refusal needs no valid checksum). The buyer, holding
 * the token from a result that echoed it, can claim it as a number there: the claim must then be left out as the
 * refusal's message leaves out a name of the token's form.
 */
import { describe, expect, it } from 'vitest'
import { createReceiver, memoryStore, type ReceiverOptions } from '../../src/index.js'
import { createConsole } from '../../src/console/console.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

const AUTH = 'Zq7mNb3Xk9Lp2Rt5Vw8Y'
const CHECKSUM = '0123456789abcdef'.repeat(4)
const UID = '0c0ffee0-d3e0-4a11-8f00-00000000d3e0'
const FORM = 'application/x-www-form-urlencoded'

const receivers: [string, Partial<ReceiverOptions<unknown>>, string][] = [
  ['a signature-only receiver given only a Checksum Token', { signatureOnly: true, checksumToken: CHECKSUM }, UID],
  [
    "a partner's receiver, for a uid its resolver does not know",
    { environment: { baseUrl: 'http://127.0.0.1:9' }, resolveCredentials: (uid) => (uid === UID ? { uid, authToken: AUTH, checksumToken: CHECKSUM } : undefined) },
    'nobody',
  ],
]

describe.each(receivers)('%s', (_name, options, uid) => {
  it.each(['order_number', 'exchange_number'])('the token claimed as %s is not kept with the refusal', async (field) => {
    const receiver = createReceiver({ logger: false, store: memoryStore(), ...options } as ReceiverOptions<unknown>)
    receiver.onAny(() => {})
    const fields = samplePaymentFields({ uid, token: AUTH })
    const body = signCallback({ ...fields, [field]: `${AUTH}` }, CHECKSUM).body.replace(/&checksum=[0-9a-f]+/, `&checksum=${'0'.repeat(64)}`)
    const response = await receiver.handle({ kind: 'callback', body, contentType: FORM })
    expect(response.status).toBe(401)
    expect(receiver.refusals().recent).toHaveLength(1)
    expect(JSON.stringify(receiver.refusals())).not.toContain(AUTH)
    const query = field === 'order_number' ? AUTH : { exchangeNumber: AUTH }
    expect(JSON.stringify(await receiver.timeline(query))).not.toContain(AUTH)
    const page = await createConsole(receiver, { authorize: () => true })(new Request('http://shop.test/refusals'))
    expect(page.status).toBe(200)
    expect(await page.text()).not.toContain(AUTH)
  })

  it('an ordinary claimed number is still kept', async () => {
    const receiver = createReceiver({ logger: false, store: memoryStore(), ...options } as ReceiverOptions<unknown>)
    const fields = samplePaymentFields({ uid })
    const body = signCallback(fields, CHECKSUM).body.replace(/&checksum=[0-9a-f]+/, `&checksum=${'0'.repeat(64)}`)
    await receiver.handle({ kind: 'callback', body, contentType: FORM })
    expect(receiver.refusals().recent[0]?.orderNumber).toBe(fields.order_number)
  })
})

describe('a receiver that knows the Auth Token', () => {
  it('keeps a claimed order number of the same form (a ULID): the token is left out by its value', async () => {
    const receiver = createReceiver({ logger: false, store: memoryStore(), signatureOnly: true, credentials: { uid: UID, authToken: AUTH, checksumToken: CHECKSUM } })
    receiver.onAny(() => {})
    const ulid = '01HF8Z3K9QW7XJ5T2M4N6P8R0S'
    const body = signCallback(samplePaymentFields({ uid: UID, order_number: ulid }), CHECKSUM).body.replace(/&checksum=[0-9a-f]+/, `&checksum=${'0'.repeat(64)}`)
    expect((await receiver.handle({ kind: 'callback', body, contentType: FORM })).status).toBe(401)
    expect(receiver.refusals().recent[0]?.orderNumber).toBe(ulid)
    // The token itself is still left out.
    const tokenBody = signCallback(samplePaymentFields({ uid: UID, order_number: AUTH }), CHECKSUM).body.replace(/&checksum=[0-9a-f]+/, `&checksum=${'0'.repeat(64)}`)
    await receiver.handle({ kind: 'callback', body: tokenBody, contentType: FORM })
    expect(JSON.stringify(receiver.refusals())).not.toContain(AUTH)
  })
})
