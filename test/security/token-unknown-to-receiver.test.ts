/**
 * A signature-only receiver given no Auth Token (a bare checksumToken, or resolveChecksumToken) cannot take the token
 * out of what it quotes by value, yet a result may echo it (`token`) and the buyer holds that result. What such a
 * receiver quotes of the sender's names must lose the Auth Token's form as its messages do (quotedName): a refused
 * checksum's diagnosis names the field that was added, and goes to the log, the answer object, the refusals kept for
 * the console and the error thrown to the app.
 */
import { describe, expect, it } from 'vitest'
import { createReceiver, type Logger, type ReceiverOptions } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

const AUTH = 'Zq7mNb3Xk9Lp2Rt5Vw8Y'
const CHECKSUM = '0123456789abcdef'.repeat(4)
const UID = '0c0ffee0-d3e0-4a11-8f00-00000000d3e0'
const FORM = 'application/x-www-form-urlencoded'

const genuine = () => signCallback(samplePaymentFields({ uid: UID, token: AUTH }), CHECKSUM, { format: 'form' }).body

const receivers: [string, Partial<ReceiverOptions<unknown>>][] = [
  ['a bare checksumToken', { checksumToken: CHECKSUM }],
  ['resolveChecksumToken', { resolveChecksumToken: () => CHECKSUM }],
  ['credentials without authToken', { credentials: { uid: UID, checksumToken: CHECKSUM } }],
]

describe('a field named by the Auth Token, added to a genuine result, at a receiver that does not know the token', () => {
  it.each(receivers)('%s: the diagnosis names it nowhere', async (_name, credentials) => {
    const lines: string[] = []
    const at = (details: object, message: string) => void lines.push(`${message} ${JSON.stringify(details)}`)
    const logger: Logger = { debug: at, info: at, warn: at, error: at }
    const receiver = createReceiver({ signatureOnly: true, logger, ...credentials } as ReceiverOptions<unknown>)
    receiver.onAny(() => {})
    const body = `${genuine()}&${AUTH}=1`
    const response = await receiver.handle({ kind: 'callback', body, contentType: FORM })
    expect(response.error?.diagnosis?.match?.kind).toBe('field_added')
    expect(JSON.stringify(response)).not.toContain(AUTH)
    expect(lines.join('\n')).not.toContain(AUTH)
    expect(JSON.stringify(receiver.refusals())).not.toContain(AUTH)
    const thrown = await receiver.verify({ body, contentType: FORM }).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(thrown).toBeInstanceOf(Error)
    expect(JSON.stringify(thrown)).not.toContain(AUTH)
  })

  it('an ordinary added field is still named as it is', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: CHECKSUM, logger: false })
    const response = await receiver.handle({ kind: 'callback', body: `${genuine()}&utm_source=1`, contentType: FORM })
    expect(response.error?.diagnosis?.match?.field).toBe('utm_source')
  })
})
