import { describe, expect, it } from 'vitest'
import { type DeliveryFields, packDelivery, packedAnsweredAfter, packedRecord, unpackDelivery, withPackedRecord } from '../../src/stores/memory/packed-delivery.js'

const fields = (overrides: Partial<DeliveryFields> = {}): DeliveryFields => ({
  orderNumber: 'ORD-1~2|3',
  receivedAfter: 1_234_567,
  verifiedAfter: 3,
  answeredAfter: 17,
  kind: (200 << 9) | 0b1_0110_11,
  attemptTag: '9f3a0c1d',
  attemptNumber: 42,
  code: null,
  message: null,
  ...overrides,
})

describe('packed delivery', () => {
  it('gives back every field and the record it was packed with', () => {
    for (const given of [
      fields(),
      fields({ orderNumber: null }),
      fields({ orderNumber: '' }),
      fields({ orderNumber: 'ünïcode ✓ 注文' }),
      // A clock set back before the store was made: negative offsets.
      fields({ receivedAfter: -5_000, verifiedAfter: 0, answeredAfter: 0 }),
      fields({ attemptNumber: Number.MAX_SAFE_INTEGER, attemptTag: '' }),
    ])
      for (const record of [undefined, 0, 8 * 1_000_000 + 5, 2 ** 40]) {
        const packed = packDelivery(given, record) as string
        expect(typeof packed).toBe('string')
        expect(unpackDelivery(packed)).toEqual({ ...given, record })
        expect(packedRecord(packed)).toBe(record)
        expect(packedAnsweredAfter(packed)).toBe(given.receivedAfter + given.answeredAfter)
      }
  })

  it('changes the record and nothing else', () => {
    const packed = packDelivery(fields(), undefined) as string
    const recorded = withPackedRecord(packed, 77)
    expect(packedRecord(recorded)).toBe(77)
    expect(unpackDelivery(recorded)).toEqual({ ...fields(), record: 77 })
    expect(packedRecord(withPackedRecord(recorded, undefined))).toBeUndefined()
  })

  it('packs nothing it could not give back: a code, a message, a tag holding the separator, a number no safe integer', () => {
    for (const given of [
      fields({ code: 'checksum_mismatch' }),
      fields({ message: 'handler failed' }),
      fields({ attemptTag: 'a~b' }),
      fields({ receivedAfter: 1.5 }),
      fields({ attemptNumber: Number.NaN }),
      fields({ answeredAfter: 2 ** 60 }),
    ])
      expect(packDelivery(given, 1)).toBeUndefined()
    expect(packDelivery(fields(), 0.5)).toBeUndefined()
  })
})
