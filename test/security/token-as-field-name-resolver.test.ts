/**
 * As token-as-field-name.test.ts, for a partner's receiver (resolveCredentials): the tokens are not known before the
 * message's uid is looked up, and a refusal at parsing (a repeated or badly encoded field name) or of a uid the
 * resolver does not know comes before that. A name or uid that holds the Auth Token's form (20 or more letters and
 * digits in a row, not hexadecimal) is not quoted as it is, as quotedUid already does for a uid of exactly that form.
 */
import { describe, expect, it } from 'vitest'
import { createReceiver, type Logger } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

const AUTH = 'Zq7mNb3Xk9Lp2Rt5Vw8Y'
const CHECKSUM = '0123456789abcdef'.repeat(4)
const UID = '0c0ffee0-d3e0-4a11-8f00-00000000d3e0'
const FORM = 'application/x-www-form-urlencoded'

const genuine = () => signCallback(samplePaymentFields({ uid: UID }), CHECKSUM, { format: 'form' }).body

const cases: [string, () => string][] = [
  ['as a repeated field name (duplicate_field)', () => `${genuine()}&${AUTH}=1&${AUTH}=2`],
  ['inside a repeated field name (duplicate_field)', () => `${genuine()}&x_${AUTH}=1&x_${AUTH}=2`],
  ['as the name of a field whose value is badly encoded (invalid_encoding)', () => `${genuine()}&${AUTH}=%zz`],
  ['inside a uid the resolver does not know (unknown_uid)', () => genuine().replace(`uid=${UID}`, `uid=${AUTH}-x`)],
]

describe("the Auth Token put where a partner receiver's refusal quotes the sender", () => {
  it.each(cases)('%s: not in the answer, the log or the refusals kept for the console', async (_name, body) => {
    const lines: string[] = []
    const at = (details: object, message: string) => void lines.push(`${message} ${JSON.stringify(details)}`)
    const logger: Logger = { debug: at, info: at, warn: at, error: at }
    const receiver = createReceiver({
      environment: { baseUrl: 'http://127.0.0.1:9' },
      resolveCredentials: (uid) => (uid === UID ? { uid, authToken: AUTH, checksumToken: CHECKSUM } : undefined),
      logger,
    })
    receiver.onAny(() => {})
    const response = await receiver.handle({ kind: 'callback', body: body(), contentType: FORM })
    expect(response.status).toBeGreaterThanOrEqual(400)
    expect(response.status).toBeLessThan(500)
    expect(response.body).not.toContain(AUTH)
    expect(lines.join('\n')).not.toContain(AUTH)
    expect(JSON.stringify(receiver.refusals())).not.toContain(AUTH)
  })

  it('an ordinary field name or uid is still quoted as it is', async () => {
    const receiver = createReceiver({ environment: { baseUrl: 'http://127.0.0.1:9' }, resolveCredentials: () => undefined, logger: false })
    const repeated = await receiver.handle({ kind: 'callback', body: `${genuine()}&transaction_reference_code=1&transaction_reference_code=2`, contentType: FORM })
    expect(repeated.error?.message).toContain('"transaction_reference_code"')
    const unknown = await receiver.handle({ kind: 'callback', body: genuine(), contentType: FORM })
    expect(unknown.error?.message).toContain(UID)
  })
})

/*
 * receiver.verify() throws the refusal itself, for the app to log or serialise. A refusal at parsing carries the
 * repeated name in `fields` as well as in its message, and a partner receiver knows no token then to take out.
 */
describe("a partner receiver's refusal thrown to the app, refused before the uid is looked up", () => {
  const receiver = createReceiver({
    environment: { baseUrl: 'http://127.0.0.1:9' },
    resolveCredentials: (uid) => (uid === UID ? { uid, authToken: AUTH, checksumToken: CHECKSUM } : undefined),
    logger: false,
  })
  const thrown = (body: string, contentType = FORM) => receiver.verify({ body, contentType }).then(() => undefined, (error: unknown) => error as Error & { fields?: string[] })
  const json = () => JSON.stringify(samplePaymentFields({ uid: UID })).slice(0, -1)

  it.each([
    ['a repeated form field named by the token', () => thrown(`${genuine()}&${AUTH}=1&${AUTH}=2`)],
    ['a repeated nested form field keyed by the token', () => thrown(`${genuine()}&x[${AUTH}]=1&x[${AUTH}]=2`)],
    ['a repeated JSON member named by the token', () => thrown(`${json()},"${AUTH}":"1","${AUTH}":"2"}`, 'application/json')],
  ])('%s: the error names no token in any property', async (_name, refusal) => {
    const error = await refusal()
    expect(error).toBeInstanceOf(Error)
    expect((error as { code?: string }).code).toBe('duplicate_field')
    expect(error?.fields?.length).toBe(1)
    expect(JSON.stringify(error)).not.toContain(AUTH)
    expect(error?.message).not.toContain(AUTH)
  })

  it('a repeated ordinary name is still named as it is', async () => {
    const error = await thrown(`${genuine()}&transaction_reference_code=1&transaction_reference_code=2`)
    expect(error?.fields).toEqual(['transaction_reference_code'])
  })
})
