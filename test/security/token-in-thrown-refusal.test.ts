/**
 * receiver.verify() and verifyDelivery() throw the refusal itself: an app that logs or serialises it must not log
 * an Auth Token a buyer put in a field name (a signed result may carry `token`, and names are not signed). The
 * message hid it already; the error's `fields` and its diagnosis's `field` quoted the raw name.
 */
import { describe, expect, it } from 'vitest'
import { createReceiver, verifyDelivery } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

const AUTH = 'Zq7mNb3Xk9Lp2Rt5Vw8Y'
const CHECKSUM = '0123456789abcdef'.repeat(4)
const UID = '0c0ffee0-d3e0-4a11-8f00-00000000d3e0'
const FORM = 'application/x-www-form-urlencoded'
const genuine = () => signCallback(samplePaymentFields({ uid: UID }), CHECKSUM, { format: 'form' }).body

describe('a refusal thrown to the app quotes no Auth Token the buyer put in a field name', () => {
  const receiver = createReceiver({ environment: { baseUrl: 'http://127.0.0.1:9' }, credentials: { uid: UID, authToken: AUTH, checksumToken: CHECKSUM }, logger: false })
  const thrown = (body: string) => receiver.verify({ body, contentType: FORM }).then(() => undefined, (error: unknown) => error as Error)

  it.each([
    ['duplicate_field (its fields)', () => `${genuine()}&${AUTH}=1&${AUTH}=2`],
    ['checksum_mismatch (its diagnosis)', () => `${genuine()}&${AUTH}=1`],
  ])('receiver.verify(): %s', async (_name, body) => {
    const error = await thrown(body())
    expect(error).toBeInstanceOf(Error)
    expect(JSON.stringify(error)).not.toContain(AUTH)
    expect(error?.message).not.toContain(AUTH)
  })

  it('verifyDelivery(): the configured credentials are hidden the same way', async () => {
    const error = await verifyDelivery({ body: `${genuine()}&${AUTH}=1&${AUTH}=2`, contentType: FORM }, { credentials: { uid: UID, authToken: AUTH, checksumToken: CHECKSUM } }).then(
      () => undefined,
      (caught: unknown) => caught as Error,
    )
    expect(error).toBeInstanceOf(Error)
    expect(JSON.stringify(error)).not.toContain(AUTH)
  })
})
