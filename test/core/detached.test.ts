import { describe, expect, it } from 'vitest'
import { detached } from '../../src/contract/detached.js'

describe('detached', () => {
  it('gives back the same characters, whatever they are and however long', () => {
    const body = `x=1&exchange_number=ULDYE1656661277&order_number=${'Pesanan-ünï-😀-\ud800'.repeat(3)}&y=2`
    const exchange = body.slice(20, 35)
    expect(exchange).toBe('ULDYE1656661277')
    expect(detached(exchange)).toBe('ULDYE1656661277')
    const order = body.slice(body.indexOf('order_number=') + 13, body.lastIndexOf('&'))
    expect(detached(order)).toBe(order)
    expect(detached('short')).toBe('short')
    expect(detached('')).toBe('')
    // Longer than one fromCharCode call takes.
    const long = Array.from({ length: 100_000 }, (_, i) => String.fromCharCode(32 + (i % 90))).join('')
    expect(detached(long)).toBe(long)
  })
})
