import { describe, expect, it } from 'vitest'
import { createReceiver, type Logger, memoryStore, ReceiverError, verifyDelivery, type VerifyOptions } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { alteredBody, diagnosisCases, TOKEN } from './diagnosis-cases.js'

const FORM = 'application/x-www-form-urlencoded'
const UID_A = '6f1c2a4e-8b3d-4f7a-9c2e-1d5b7a9e3f10'
const UID_B = '0a9b8c7d-6e5f-4a3b-8c1d-2e3f4a5b6c7d'
const TOKEN_B = 'cd'.repeat(32)

async function refusal(delivery: Parameters<typeof verifyDelivery>[0], options: VerifyOptions): Promise<ReceiverError> {
  const error = await verifyDelivery(delivery, options).then(
    () => undefined,
    (caught: unknown) => caught,
  )
  expect(error).toBeInstanceOf(ReceiverError)
  return error as ReceiverError
}

describe('the diagnosis of a refused checksum', () => {
  it.each(diagnosisCases().map((item) => [item.name, item] as const))('names the transformation: %s', async (_name, item) => {
    const error = await refusal({ body: item.body, contentType: item.contentType }, { checksumToken: item.token })
    expect(error.code).toBe('checksum_mismatch')
    const diagnosis = error.diagnosis
    expect(diagnosis?.verdict).toBe('matched')
    expect(diagnosis?.match?.kind).toBe(item.kind)
    for (const words of item.says) expect(diagnosis?.summary).toContain(words)
    if (item.field !== undefined) expect(diagnosis?.match?.field).toBe(item.field)
    expect(diagnosis?.hmacs).toBeLessThanOrEqual(128)
    // The refusal's own message is unchanged: a sender never learns the diagnosis from the answer.
    expect(error.message).not.toContain('verifies with')
    // The token as configured is right once cleaned, and the message right once transformed: the same message
    // verifies with the right token when it is unaltered, which makes each case a genuine one.
    expect(JSON.stringify(diagnosis)).not.toContain(TOKEN)
  })

  it('names another configured credential set whose token signed the message', async () => {
    const signed = signCallback(samplePaymentFields({ uid: UID_A }), TOKEN_B)
    const error = await refusal(signed, { credentials: [{ uid: UID_A, checksumToken: TOKEN }, { uid: UID_B, checksumToken: TOKEN_B }] })
    expect(error.code).toBe('checksum_mismatch')
    expect(error.diagnosis?.match?.kind).toBe('other_credential')
    expect(error.diagnosis?.summary).toContain(`credential set "${UID_B}" (credentials[1])`)
    expect(JSON.stringify(error.diagnosis)).not.toContain(TOKEN_B)
  })

  it('names fields split between the query string and the body', async () => {
    const params = new URLSearchParams(signCallback(samplePaymentFields(), TOKEN).body)
    const query = new URLSearchParams()
    for (const name of ['buyer_email', 'buyer_phone']) {
      query.set(name, params.get(name) as string)
      params.delete(name)
    }
    const error = await refusal({ body: params.toString(), contentType: FORM, query: query.toString() }, { checksumToken: TOKEN })
    expect(error.diagnosis?.match?.kind).toBe('query_and_body')
    expect(error.diagnosis?.summary).toContain(`query string's "buyer_email", "buyer_phone" signed together with the body's fields`)
  })

  it('diagnoses a message whose uid names no set against every configured token', async () => {
    const signed = signCallback(samplePaymentFields({ uid: 'merchant-42' }), TOKEN_B)
    const error = await refusal({ body: `${signed.body}&utm_medium=email`, contentType: FORM }, {
      credentials: [{ uid: UID_A, checksumToken: TOKEN }, { uid: UID_B, checksumToken: TOKEN_B }],
    })
    expect(error.code).toBe('unknown_uid')
    expect(error.diagnosis?.match).toMatchObject({ kind: 'field_added', field: 'utm_medium' })
  })

  it('says what was tried when nothing explains the mismatch, within the cap', async () => {
    const error = await refusal({ body: alteredBody(), contentType: FORM }, { checksumToken: TOKEN })
    const diagnosis = error.diagnosis
    expect(diagnosis?.verdict).toBe('unexplained')
    expect(diagnosis?.match).toBeUndefined()
    expect(diagnosis?.tried.map((attempt) => attempt.kind)).toEqual([
      'checksum_token', 'other_credential', 'query_and_body', 'plus_and_space', 'values_trimmed', 'null_text',
      'amount_format', 'boolean_format', 'nested_key_order', 'rendering', 'field_added', 'field_dropped',
    ])
    expect(diagnosis?.tried.every((attempt) => !attempt.matched)).toBe(true)
    expect(diagnosis?.tried.find((attempt) => attempt.kind === 'field_added')?.candidates).toBe(34)
    expect(diagnosis?.summary).toMatch(/^no single transformation makes the checksum verify \(tried .*field_added, field_dropped; \d+ HMACs\)/)
    expect(diagnosis?.capped).toBe(false)
  })

  it('stops at 128 HMACs on a large nested message, and says so', async () => {
    const extra = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`extra_${i}`, `value ${i}`]))
    const fields = samplePaymentFields({ ...extra, params: { reference1: 'A' } })
    const body = signCallback(fields, TOKEN).body.replace('transaction_amount=100.20', 'transaction_amount=1.00')
    const error = await refusal({ body, contentType: FORM }, { checksumToken: TOKEN })
    expect(error.diagnosis?.verdict).toBe('unexplained')
    expect(error.diagnosis?.capped).toBe(true)
    expect(error.diagnosis?.hmacs).toBe(128)
    expect(error.diagnosis?.summary).toContain('stopped at the cap')
  })

  it('is rationed to diagnosisPerSecond, and off with 0', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: `${TOKEN} `, diagnosisPerSecond: 1, store: memoryStore() })
    const body = signCallback(samplePaymentFields(), TOKEN).body
    const verdicts: (string | undefined)[] = []
    for (let i = 0; i < 3; i++)
      await receiver.verify({ body, contentType: FORM }).catch((error: ReceiverError) => verdicts.push(error.diagnosis?.verdict))
    expect(verdicts).toEqual(['matched', 'skipped', 'skipped'])
    const off = await refusal({ body, contentType: FORM }, { checksumToken: `${TOKEN} `, diagnosisPerSecond: 0 })
    expect(off.code).toBe('checksum_mismatch')
    expect(off.diagnosis).toBeUndefined()
    expect(() => createReceiver({ signatureOnly: true, checksumToken: TOKEN, diagnosisPerSecond: -1 })).toThrow(TypeError)
  })

  it('reaches the log line, response.error and the timeline, never the answer sent back', async () => {
    const lines: string[] = []
    const record = (level: string) => (details: object, message: string) => void lines.push(`${level} ${message} ${JSON.stringify(details)}`)
    const logger: Logger = { debug: record('debug'), info: record('info'), warn: record('warn'), error: record('error') }
    const receiver = createReceiver({ signatureOnly: true, checksumToken: `${TOKEN}\u200b`, logger })
    const fields = samplePaymentFields()
    const signed = signCallback(fields, TOKEN)
    const response = await receiver.handle({ kind: 'callback', body: signed.body, contentType: signed.contentType })
    expect(response.status).toBe(401)
    expect(response.error?.diagnosis?.match?.kind).toBe('checksum_token')
    expect(response.body).not.toMatch(/diagnos|U\+200B/i)
    const refusedLine = lines.find((line) => line.startsWith('warn refused a delivery'))
    expect(refusedLine).toContain('Diagnosis: the checksum verifies with the configured Checksum Token without its invisible characters (U+200B ZERO WIDTH SPACE at the end)')
    expect(refusedLine).toContain('"diagnosis":{"verdict":"matched","hmacs":1,"kind":"checksum_token"}')
    const timeline = await receiver.timeline(String(fields.order_number))
    const refused = timeline.find((entry) => entry.event === 'refused')
    expect(refused?.message).toContain('Diagnosis: the checksum verifies with the configured Checksum Token without its invisible characters')
  })

  it('is not computed for an accepted message, nor for other refusals', async () => {
    const signed = signCallback(samplePaymentFields(), TOKEN)
    await expect(verifyDelivery(signed, { checksumToken: TOKEN })).resolves.toBeDefined()
    const invalid = signCallback(samplePaymentFields({ transaction_amount: 'abc' }), TOKEN)
    const error = await refusal(invalid, { checksumToken: TOKEN })
    expect(error.code).toBe('invalid_fields')
    expect(error.diagnosis).toBeUndefined()
  })
})
