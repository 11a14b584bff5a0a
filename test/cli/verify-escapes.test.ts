import { describe, expect, it } from 'vitest'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { runCli, TOKEN } from './run.js'

const env = { FPX_CHECKSUM_TOKEN: TOKEN }
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/

/**
 * `fpx-collect verify` is run on bodies an operator was handed (a buyer's "here is my payment"): their names and
 * values are anyone's. ESC [ 2 J in a name would clear the operator's screen; ESC ] 0 ; … BEL retitle the window.
 */
describe('fpx-collect verify prints no terminal control characters from the body', { timeout: 60_000 }, () => {
  it('in the field names of a body that does not verify, and of one that does', async () => {
    const forged = `order_number=A&%1B%5B2J%1B%5D0%3Bowned%07=1&%C2%9B31m=2&checksum=${'0'.repeat(64)}`
    const signed = signCallback({ ...samplePaymentFields(), '\u001b[2Jnote': 'x' }, TOKEN).body
    const [refused, explained, valid] = await Promise.all([
      runCli(['verify', '-'], { env, input: forged }),
      runCli(['verify', '-', '--explain'], { env, input: forged }),
      runCli(['verify', '-'], { env, input: signed }),
    ])
    expect(refused.code).toBe(1)
    expect(explained.code).toBe(1)
    expect(valid.code).toBe(0)
    for (const result of [refused, explained, valid]) {
      expect(result.stdout).toContain('fields (')
      expect(result.stdout).not.toMatch(CONTROL)
    }
  })
})
