import { describe, expect, it } from 'vitest'
import { readAmount } from '../../src/core/request/amount.js'

describe('readAmount', () => {
  it.each([
    ['200', '200.00', true],
    [200, '200.00', true],
    ['199.5', '199.50', true],
    [199.5, '199.50', true],
    ['10.20', '10.20', false],
    ['0.01', '0.01', false],
  ] as const)('takes %j as %s', (input, text, normalised) => {
    expect(readAmount(input)).toEqual({ ok: true, text, normalised })
  })

  it.each([
    ['abc', 'must be a decimal number such as 100.20'],
    ['', 'must be a decimal number such as 100.20'],
    [Number.NaN, 'must be a number'],
    ['0', 'must be more than 0.00'],
    [0, 'must be more than 0.00'],
    ['-5', 'must be more than 0.00'],
    ['1.005', 'must have at most two fraction digits'],
    [0.1 + 0.2, 'must have at most two fraction digits'],
    ['1000000000.00', 'must be at most 999999999.99'],
  ] as const)('refuses %j: %s', (input, problem) => {
    expect(readAmount(input)).toEqual({ ok: false, problem })
  })
})
