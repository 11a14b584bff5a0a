/**
 * The buyer sends the redirect themselves, with whatever headers they like, and holds the Auth Token when their
 * result echoed it (`token`). A Content-Type or Content-Encoding the receiver does not read is refused, naming what
 * it was given: lower-cased, so no longer the token as written, but the token all the same to anyone who tries the
 * cases of its letters. The refusal must name neither, in the answer, the log or the refusals kept for the console.
 */
import { describe, expect, it } from 'vitest'
import { createReceiver, type Logger } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

const AUTH = 'Zq7mNb3Xk9Lp2Rt5Vw8Y'
const CHECKSUM = '0123456789abcdef'.repeat(4)
const UID = '0c0ffee0-d3e0-4a11-8f00-00000000d3e0'

const headers: [string, { contentType?: string; contentEncoding?: string }, string][] = [
  ['as the charset', { contentType: `application/x-www-form-urlencoded; charset=${AUTH}` }, 'unsupported_media_type'],
  ['as the media type', { contentType: `application/${AUTH}` }, 'unsupported_media_type'],
  ['as the content encoding', { contentType: 'application/x-www-form-urlencoded', contentEncoding: AUTH }, 'unsupported_encoding'],
]

describe('the Auth Token in a header of a redirect the buyer sends', () => {
  it.each(headers)('%s: in no case in the answer, the log or the refusals', async (_name, given, code) => {
    const lines: string[] = []
    const at = (details: object, message: string) => void lines.push(`${message} ${JSON.stringify(details)}`)
    const logger: Logger = { debug: at, info: at, warn: at, error: at }
    const receiver = createReceiver({ environment: { baseUrl: 'http://127.0.0.1:9' }, credentials: { uid: UID, authToken: AUTH, checksumToken: CHECKSUM }, logger })
    receiver.onAny(() => {})
    const body = signCallback(samplePaymentFields({ uid: UID, token: AUTH }), CHECKSUM).body
    const response = await receiver.handle({ kind: 'redirect', body, ...given })
    expect(response.error?.code).toBe(code)
    const seen = [JSON.stringify(response), lines.join('\n'), JSON.stringify(receiver.refusals())].join('\n').toLowerCase()
    expect(seen).not.toContain(AUTH.toLowerCase())
  })

  it('an ordinary media type is still named', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: CHECKSUM, logger: false })
    const response = await receiver.handle({ kind: 'callback', body: 'a=1', contentType: 'text/plain' })
    expect(response.error?.message).toContain('text/plain')
    const charset = await receiver.handle({ kind: 'callback', body: 'a=1', contentType: 'application/json; charset=latin1' })
    expect(charset.error?.message).toContain('latin1')
  })
})
