/**
 * Which splits of a query into the URL's own parameters and the service's fields are tried (issue 21, defect 4):
 * few enough that a forged query costs about what its body twin does (bench/query-fields.ts), the likeliest first
 * so that genuine results are still found.
 */
import { describe, expect, it } from 'vitest'
import { createReceiver } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

const TOKEN = 'ab'.repeat(32)

function receiver() {
  const made = createReceiver({ checksumToken: TOKEN })
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
      const answer = await receiver().handle(query(own, fields))
      expect([own, answer.status]).toEqual([own, 200])
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
