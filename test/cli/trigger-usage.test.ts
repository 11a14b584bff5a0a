/**
 * `trigger` told what it was given wrong: a word that is not a state (also one that names a property every object
 * has, which a plain lookup took for a state and delivered), and a missing --url named as missing.
 */
import { expect, it } from 'vitest'
import { runCli, TOKEN } from './run.js'

const env = { FPX_CHECKSUM_TOKEN: TOKEN }

it.each(['bogus', 'constructor', 'toString', '__proto__'])('refuses %s as a state, naming it, and sends nothing', async (word) => {
  const result = await runCli(['trigger', word, '--url', 'http://127.0.0.1:1/fpx/callback'], { env })
  expect(result.code).toBe(2)
  expect(result.stderr).toContain(`"${word}" is not a state: say succeeded, failed or pending`)
  expect(result.stdout).toBe('')
})

it('says --url is missing, with --emulator too', async () => {
  for (const args of [['trigger', 'succeeded'], ['trigger', 'succeeded', '--emulator', 'http://127.0.0.1:1']]) {
    const result = await runCli(args, { env })
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('say where to deliver: --url')
  }
})
