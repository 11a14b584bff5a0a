/**
 * A partner's resolver is asked by the message's uid before anything is verified, and the buyer, who holds a result
 * that echoes the Auth Token (`token`), can resend it with the token's value as the uid. A resolver that throws for
 * a uid it does not know often says which (`merchant <uid> not found`, as an ORM's find-or-fail does): the refusal
 * keeps what it threw as its cause, which the receiver logs and verify() throws to the app. The refusal's message
 * already shows such a uid only by its form (quotedUid); its cause must not quote it either.
 */
import { describe, expect, it } from 'vitest'
import { createReceiver, type Logger } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

const AUTH = 'Zq7mNb3Xk9Lp2Rt5Vw8Y'
const CHECKSUM = '0123456789abcdef'.repeat(4)
const UID = '0c0ffee0-d3e0-4a11-8f00-00000000d3e0'
const FORM = 'application/x-www-form-urlencoded'

class NotFound extends Error {
  override name = 'NotFound'
}

function setUp() {
  const lines: string[] = []
  const shown = (_key: string, value: unknown) => (value instanceof Error ? { name: value.name, message: value.message, stack: value.stack } : value)
  const at = (details: object, message: string) => void lines.push(`${message} ${JSON.stringify(details, shown)}`)
  const logger: Logger = { debug: at, info: at, warn: at, error: at }
  const receiver = createReceiver({
    environment: { baseUrl: 'http://127.0.0.1:9' },
    resolveCredentials: (uid) => {
      if (uid === UID) return { uid, authToken: AUTH, checksumToken: CHECKSUM }
      throw new NotFound(`merchant ${uid} not found`)
    },
    logger,
  })
  receiver.onAny(() => {})
  return { receiver, lines, shown }
}

const uids: [string, string][] = [
  ['the token as the uid', AUTH],
  ['the token inside a longer uid', `${AUTH}-x`],
]

describe("the Auth Token as the uid a partner's resolver throws for", () => {
  it.each(uids)('%s: not in the log, nor in the cause thrown to the app', async (_name, uid) => {
    const { receiver, lines, shown } = setUp()
    const body = signCallback(samplePaymentFields({ uid: UID, token: AUTH }), CHECKSUM).body.replace(`uid=${UID}`, `uid=${encodeURIComponent(uid)}`)
    const response = await receiver.handle({ kind: 'callback', body, contentType: FORM })
    expect(response.error?.code).toBe('credential_lookup_failed')
    expect(lines.join('\n')).toContain('NotFound')
    expect(lines.join('\n')).not.toContain(AUTH)
    const thrown = await receiver.verify({ body, contentType: FORM }).then(
      () => undefined,
      (error: unknown) => error as Error,
    )
    expect(thrown?.cause).toBeInstanceOf(Error)
    expect((thrown?.cause as Error).message).toMatch(/^merchant .* not found$/)
    expect(JSON.stringify(thrown?.cause, shown)).not.toContain(AUTH)
  })

  it('an ordinary uid is kept in what the resolver threw, which is passed on as it is', async () => {
    const { receiver } = setUp()
    const other = '1c0ffee0-d3e0-4a11-8f00-00000000d3e1'
    const body = signCallback(samplePaymentFields({ uid: other }), CHECKSUM).body
    const thrown = await receiver.verify({ body, contentType: FORM }).then(
      () => undefined,
      (error: unknown) => error as Error,
    )
    expect(thrown?.cause).toBeInstanceOf(NotFound)
    expect((thrown?.cause as Error).message).toBe(`merchant ${other} not found`)
  })
})
