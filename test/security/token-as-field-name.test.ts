/**
 * The Auth Token in what a sender chose and a refusal quotes. A result may echo the Auth Token (`token`), so a buyer
 * can hold it; names are not signed, and the receiver already keeps it out of what it quotes when it stands as a value
 * (`order_number`, `exchange_number`) or as the whole `uid`. It must stay out when it stands as a field name, or as
 * part of a longer uid, too: a refusal's message goes into the answer, the log and the console's refusals page.
 */
import { describe, expect, it } from 'vitest'
import { createReceiver, type Logger } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

const AUTH = 'Zq7mNb3Xk9Lp2Rt5Vw8Y'
const CHECKSUM = '0123456789abcdef'.repeat(4)
const UID = '0c0ffee0-d3e0-4a11-8f00-00000000d3e0'
const OTHER = { uid: '1c0ffee0-d3e0-4a11-8f00-00000000d3e1', authToken: 'Other0AuthToken00000', checksumToken: 'fedcba9876543210'.repeat(4) }
const FORM = 'application/x-www-form-urlencoded'
const BASIC = Buffer.from(`${UID}:${AUTH}`).toString('base64')

function setUp(sets = [{ uid: UID, authToken: AUTH, checksumToken: CHECKSUM }]) {
  const lines: string[] = []
  const at = (details: object, message: string) => void lines.push(`${message} ${JSON.stringify(details, (_key, value: unknown) => (value instanceof Error ? { message: value.message, stack: value.stack } : value))}`)
  const logger: Logger = { debug: at, info: at, warn: at, error: at }
  const receiver = createReceiver({ environment: { baseUrl: 'http://127.0.0.1:9' }, credentials: sets, logger })
  receiver.onAny(() => {})
  return { receiver, lines }
}

const genuine = () => signCallback(samplePaymentFields({ uid: UID }), CHECKSUM, { format: 'form' }).body

const cases: [string, () => string, (typeof OTHER)[] | undefined][] = [
  ['as a repeated field name (duplicate_field)', () => `${genuine()}&${AUTH}=1&${AUTH}=2`, undefined],
  ['as the name of a field whose value is badly encoded (invalid_encoding)', () => `${genuine()}&${AUTH}=%zz`, undefined],
  ['as a field name added to a genuine result (checksum_mismatch, its diagnosis)', () => `${genuine()}&${AUTH}=1`, undefined],
  ['inside a longer uid (unknown_uid)', () => genuine().replace(`uid=${UID}`, `uid=${AUTH}-x`), [OTHER]],
  ["as the Basic-auth header's base64 of uid:authToken, a field name added to a genuine result", () => `${genuine()}&${encodeURIComponent(BASIC)}=1`, undefined],
]

describe('the Auth Token put where a refusal quotes the sender', () => {
  it.each(cases)('%s: not in the answer, the log or the refusals kept for the console', async (_name, body, extra) => {
    const { receiver, lines } = setUp([{ uid: UID, authToken: AUTH, checksumToken: CHECKSUM }, ...(extra ?? [])])
    const response = await receiver.handle({ kind: 'callback', body: body(), contentType: FORM })
    expect(response.status).toBeGreaterThanOrEqual(400)
    expect(response.status).toBeLessThan(500)
    for (const secret of [AUTH, BASIC]) {
      expect(response.body).not.toContain(secret)
      expect(JSON.stringify(response.error)).not.toContain(secret)
      expect(lines.join('\n')).not.toContain(secret)
      expect(JSON.stringify(receiver.refusals())).not.toContain(secret)
    }
  })
})
