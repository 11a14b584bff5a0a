import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { expect, it } from 'vitest'

/**
 * The README's end-to-end example is examples/readme-end-to-end.ts, byte for byte, and that file runs: the
 * emulator it starts calls the Express app back with a signed result, which reaches the handler verified.
 */
const ROOT = path.resolve(import.meta.dirname, '../..')
const EXAMPLE = 'examples/readme-end-to-end.ts'

function readmeExample(): string {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8')
  const block = /<!-- the next block is examples\/readme-end-to-end\.ts[^\n]*-->\n```ts\n([\s\S]*?)^```$/m.exec(readme)
  if (block === null) throw new Error('the README has no block marked as examples/readme-end-to-end.ts')
  return block[1]!
}

it('the README shows examples/readme-end-to-end.ts as it is', () => {
  const shown = readmeExample()
  expect(shown).toContain("from 'fpx-collect/express'")
  expect(shown).toBe(readFileSync(path.join(ROOT, EXAMPLE), 'utf8'))
})

it('the example runs: a payment created with the client reaches the handler through the emulator\'s callback', async () => {
  // The example's own made-up credentials, whatever this shell has in FPX_*.
  const env = { ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('FPX_'))), PORT: '0', NO_COLOR: '1' }
  const child = spawn(process.execPath, ['--import', 'tsx', EXAMPLE], { cwd: ROOT, env })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  const timer = setTimeout(() => child.kill('SIGKILL'), 50_000)
  const [code] = (await once(child, 'close')) as [number | null]
  clearTimeout(timer)

  expect(code, `${stdout}\n${stderr}`).toBe(0)
  const paid = /^paid: order (ORD-\d+), 10020 sen, exchange_number ([A-Z]{5}\d{10}), by callback$/m.exec(stdout)
  expect(paid, stdout).not.toBeNull()
  expect(stdout).toMatch(/^buyer goes to http:\/\/127\.0\.0\.1:\d+\/api\/pay\/[A-Z]{5}\d{10}$/m)
  expect(stdout).toContain(`/pay/${paid![2]}\n`)
  expect(stdout).toMatch(new RegExp(`^order ${paid![1]}: paid$`, 'm'))
  // The handler ran once for the payment.
  expect(stdout.match(/^paid: /gm)).toHaveLength(1)
  // The emulator's warnings about what it tolerated go to standard error: the example sends nothing to tolerate.
  expect(stderr).not.toMatch(/warning|error/i)
}, 60_000)
