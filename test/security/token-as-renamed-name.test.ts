/**
 * A result that echoes the Auth Token (`token`) hands the buyer its value, and names are not signed: the buyer can
 * resend the genuine result with another field RENAMED to the token's value, or to a bracket name keyed by it,
 * where the new name sorts to the old one's place (here `amount`, the first name; a token that starts with a capital
 * letter sorts before every name the service sends), and the checksum still matches. The receiver accepts the copy
 * and confirms it over the API; meanwhile its delivered fields are what the result returned to the app says, what
 * the inbox keeps in the store, and what the console's payment page prints. The token must be in none of them.
 */
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { createConsole } from '../../src/console/console.js'
import { createReceiver, type ReceiverStore, verifyDelivery } from '../../src/index.js'
import { redisStore } from '../../src/stores/redis/store.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { deleteRedisKeys } from '../../soak/resources.js'
import { REDIS_URL } from '../stores/services.js'

const AUTH = 'Zq7mNb3Xk9Lp2Rt5Vw8Y'
const CHECKSUM = '0123456789abcdef'.repeat(4)
const UID = '0c0ffee0-d3e0-4a11-8f00-00000000d3e0'
const SET = { uid: UID, authToken: AUTH, checksumToken: CHECKSUM }
const FORM = 'application/x-www-form-urlencoded'
const BASIC = Buffer.from(`${UID}:${AUTH}`).toString('base64')

/** The genuine result and the buyer's copy of it, `amount` renamed to `name`; the checksum is the genuine one. */
function copyWith(name: string): { orderNumber: string; exchangeNumber: string; body: string } {
  const fields = samplePaymentFields({ uid: UID, token: AUTH })
  const genuine = new URLSearchParams(signCallback(fields, CHECKSUM).body)
  const copy = new URLSearchParams([...genuine].map(([field, value]) => [field === 'amount' ? name : field, value] as [string, string]))
  return { orderNumber: fields.order_number as string, exchangeNumber: fields.exchange_number as string, body: copy.toString() }
}

const names: [string, string][] = [
  ['the token itself', AUTH],
  ['a bracket name keyed by the token', `a[${AUTH}]`],
  ['a name that holds the token', `A${AUTH}x`],
  ["the Basic-auth header's base64 of uid:authToken, which the buyer can work out", BASIC],
]

describe('a genuine result with a field renamed to the Auth Token', () => {
  it.each(names)('%s: verifyDelivery() gives a result whose JSON holds no token', async (_name, name) => {
    const verified = await verifyDelivery({ body: copyWith(name).body, contentType: FORM }, { credentials: SET })
    expect(JSON.stringify(verified)).not.toContain(AUTH)
    expect(JSON.stringify(verified)).not.toContain(BASIC)
  })

  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
  const prefix = `fpx-renamed-token-test:${randomUUID()}:`
  afterAll(async () => {
    await deleteRedisKeys(redis, prefix)
    redis.disconnect()
  })

  it.each(names)('%s: not in the inbox the store keeps, nor on the console payment page', async (_name, name) => {
    const store = redisStore({ client: redis, prefix, inspect: false }) as ReceiverStore<unknown>
    // The API is not there: the copy waits in the inbox, as it would while the service is down.
    const receiver = createReceiver({ environment: { baseUrl: 'http://127.0.0.1:9' }, credentials: SET, store, inbox: { work: false }, logger: false })
    receiver.onAny(() => {})
    const copy = copyWith(name)
    const answer = await receiver.handle({ kind: 'callback', body: copy.body, contentType: FORM })
    expect(answer.status).toBe(200)
    const [item] = await receiver.inbox.show(copy.exchangeNumber)
    expect(item).toBeDefined()
    expect(JSON.stringify(item)).not.toContain(AUTH)
    expect(JSON.stringify(item)).not.toContain(BASIC)
    const page = await createConsole(receiver, { authorize: () => true })(new Request(`http://shop.test/payment?order=${encodeURIComponent(copy.orderNumber)}`))
    const text = await page.text()
    expect(page.status).toBe(200)
    expect(text).toContain('table class="delivered"')
    expect(text).not.toContain(AUTH)
    expect(text).not.toContain(BASIC)
  })
})

/**
 * The token's value itself can be renamed into a field the typed payment reads, when the names after it are renamed
 * past that one (the required ones, payment_status last, come before `token`): `uid` here. And a bracket name keyed
 * by the token under `params` sorts in `payment_id`'s place. `payment` is in the result's JSON, the verified result
 * apps log, and in the receiver's answer object (`response.payment`).
 */
describe("a genuine result renamed so that the typed payment reads the Auth Token", () => {
  const copies: [string, Record<string, string>][] = [
    ['the token renamed to uid', { token: 'uid', transaction_amount: 'v1', transaction_amount_received: 'v2', transaction_fee: 'v3', uid: 'v4' }],
    ['payment_id renamed to params[<token>]', { payment_id: `params[${AUTH}]` }],
  ]
  const copyOf = (rename: Record<string, string>) => {
    const genuine = new URLSearchParams(signCallback(samplePaymentFields({ uid: UID, token: AUTH }), CHECKSUM).body)
    return new URLSearchParams([...genuine].map(([name, value]) => [rename[name] ?? name, value] as [string, string])).toString()
  }

  it.each(copies)('%s: not in verifyDelivery()\'s result, nor in the answer object', async (_name, rename) => {
    const body = copyOf(rename)
    const verified = await verifyDelivery({ body, contentType: FORM }, { credentials: SET })
    expect(JSON.stringify(verified)).not.toContain(AUTH)
    // The API is not there: the answer is a 503 that carries the delivered payment.
    const receiver = createReceiver({ environment: { baseUrl: 'http://127.0.0.1:9' }, credentials: SET, logger: false })
    receiver.onAny(() => {})
    const response = await receiver.handle({ kind: 'redirect', body, contentType: FORM })
    expect(response.payment).toBeDefined()
    expect(JSON.stringify(response)).not.toContain(AUTH)
  })
})
