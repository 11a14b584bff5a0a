/**
 * Which splits of a query into the URL's own parameters and the service's fields are tried (issue 21, defect 4):
 * few enough that a forged query costs about what its body twin does (bench/query-fields.ts), the likeliest first
 * so that genuine results are still found.
 */
import { describe, expect, it } from 'vitest'
import { createReceiver, verifyDelivery } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

const TOKEN = 'ab'.repeat(32)

function receiver() {
  const made = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
  made.onAny(() => {})
  return made
}

const query = (own: string, fields = samplePaymentFields()) => ({ kind: 'callback' as const, query: `?${own}&${signCallback(fields, TOKEN).body}` })

describe('fields after the URL’s own query parameters', () => {
  it('are found after up to 8 own parameters, whatever their names, when the service’s fields start with a field it sends', async () => {
    const owns = [
      'p0=0&p1=1&p2=2&p3=3&p4=4&p5=5&p6=6&p7=7',
      // Names real results also carry (id, name, bank) as the URL's own: the split before a listed field comes first.
      'shop=1&id=42&name=x&bank=y',
      'id=42',
    ]
    for (const own of owns) {
      const answer = await receiver().handle(query(own))
      expect([own, answer.status]).toEqual([own, 200])
    }
  })

  it('are found after one own parameter when the service’s first field is one we do not know', async () => {
    for (const own of ['shop=1', 'id=1']) {
      const fields = { brand_new_first_field: 'v', ...samplePaymentFields() }
      const verified = await receiver().verify(query(own, fields))
      expect([own, verified.unsignedQuery]).toEqual([own, Object.fromEntries([own.split('=')])])
    }
  })

  it('are looked for under at most two splits of a forged query, however many unknown names lead it', async () => {
    const own = Array.from({ length: 8 }, (_, i) => `x${i}=${i}`).join('&')
    const forged = query(own).query.replace(/checksum=[0-9a-f]+/, `checksum=${'0'.repeat(64)}`)
    const answer = await receiver().handle({ kind: 'callback', query: forged })
    expect([answer.status, answer.error?.code]).toEqual([401, 'checksum_mismatch'])
    // The refusal counts the splits it tried.
    expect(answer.error?.message).toContain('1 to 2 query parameters')
  })
})

describe('splits cut out of the whole query’s signed string, wherever the URL’s own names sort', () => {
  const UID_A = '6f1c2a4e-8b3d-4f7a-9c2e-1d5b7a9e3f10'
  const UID_B = '0a9b8c7d-6e5f-4a3b-8c1d-2e3f4a5b6c7d'
  const OTHER = 'cd'.repeat(32)
  // Before every service name, between them, after them, and with escapes in names and values.
  const owns = ['0a=1&0b=2', 'lang=ms&shop=42', 'zz=1&~=2', 'A=x%7Cy&b+c=%E2%82%AC', 'f=1', 'payment_x=a+b']
  // Values with `|`, `+`, escapes and non-ASCII text, so the signed string differs from the raw query.
  const fields = () => samplePaymentFields({ buyer_name: 'Nur | Aisyah + é', product_description: '100% cotton, 2×' })

  it('verify after the URL’s own parameters, which come back unsigned and nothing else', async () => {
    for (const own of owns) {
      const fieldsSigned = fields()
      const verified = await verifyDelivery({ query: `${own}&${signCallback(fieldsSigned, TOKEN).body}` }, { checksumToken: TOKEN })
      expect([own, { ...verified.unsignedQuery }]).toEqual([own, Object.fromEntries(new URLSearchParams(own))])
      expect(verified.fields.buyer_name).toBe('Nur | Aisyah + é')
      expect(Object.keys(verified.fields).some((name) => Object.hasOwn(verified.unsignedQuery, name))).toBe(false)
    }
  })

  it('verify under whichever credential set signed them when the uid names none', async () => {
    const credentials = [
      { uid: UID_A, checksumToken: TOKEN },
      { uid: UID_B, checksumToken: OTHER },
    ]
    for (const own of owns) {
      const signed = signCallback(samplePaymentFields({ uid: '3f9a0c1b2d4e5f6a7b8c' }), OTHER).body
      const verified = await verifyDelivery({ query: `${own}&${signed}` }, { credentials })
      expect([own, verified.credential, { ...verified.unsignedQuery }]).toEqual([own, { uid: UID_B, index: 1, by: 'checksum' }, Object.fromEntries(new URLSearchParams(own))])
    }
  })

  it('refuse a forged query however the leading names sort, after trying the same splits', async () => {
    for (const own of owns.filter((text) => text.includes('&'))) {
      const forged = `${own}&${signCallback(fields(), TOKEN).body.replace(/checksum=[0-9a-f]+/, `checksum=${'0'.repeat(64)}`)}`
      const answer = await receiver().handle({ kind: 'callback', query: forged })
      expect([own, answer.status, answer.error?.code]).toEqual([own, 401, 'checksum_mismatch'])
      expect(answer.error?.message).toContain('1 to 2 query parameters')
    }
  })

  it('refuse a genuine query whose own parameters were signed under another token', async () => {
    const answer = await receiver().handle({ kind: 'callback', query: `0a=1&${signCallback(fields(), OTHER).body}` })
    expect([answer.status, answer.error?.code]).toEqual([401, 'checksum_mismatch'])
  })
})
