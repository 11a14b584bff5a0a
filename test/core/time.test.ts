import { describe, expect, it } from 'vitest'
import { localTime, parseOffset } from '../../src/core/time.js'

describe('local time', () => {
  it('prints Malaysia time with its offset by default, the day turning over at 16:00 UTC', () => {
    expect(localTime(new Date('2026-11-27T15:59:59Z'))).toBe('2026-11-27 23:59:59 +08:00')
    expect(localTime(new Date('2026-11-27T16:00:00Z'))).toBe('2026-11-28 00:00:00 +08:00')
    expect(localTime(null)).toBe('-')
  })

  it('prints any offset given, parsed from the usual spellings', () => {
    expect(localTime(new Date('2026-11-27T10:00:00Z'), parseOffset('UTC'))).toBe('2026-11-27 10:00:00 +00:00')
    expect(localTime(new Date('2026-11-27T10:00:00Z'), parseOffset('-05:30'))).toBe('2026-11-27 04:30:00 -05:30')
    expect(parseOffset('+8')).toBe(480)
    expect(parseOffset('+0800')).toBe(480)
    expect(() => parseOffset('Asia/Kuala_Lumpur')).toThrow(/not a UTC offset/)
    expect(() => parseOffset('+15:00')).toThrow(/not a UTC offset/)
  })
})
