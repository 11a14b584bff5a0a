import { execFileSync } from 'node:child_process'
import { beforeAll, describe, expect, it } from 'vitest'

// These tests import the built files, as users do: build them first (only this file needs dist/).
beforeAll(() => {
  execFileSync(process.execPath, ['node_modules/tsup/dist/cli-default.js', '--silent'], { stdio: 'inherit' })
}, 120_000)

/**
 * Imports every subpath from the built package by its public name, in a separate Node process, once as ESM
 * and once as CommonJS, and runs a signed delivery through the built code.
 */
const SUBPATHS: Record<string, string[]> = {
  'fpx-collect': ['createReceiver', 'memoryStore', 'messageChecksum', 'requestChecksum', 'paymentResultSchema', 'ReceiverError', 'verifyDelivery'],
  'fpx-collect/testing': ['signCallback', 'samplePaymentFields', 'encodeForm'],
  'fpx-collect/express': ['fpxCallback', 'fpxRedirect'],
  'fpx-collect/koa': ['fpxCallback', 'fpxRedirect'],
  'fpx-collect/fastify': ['fpxCollect', 'default'],
  'fpx-collect/web': ['fpxCallback', 'fpxRedirect'],
  'fpx-collect/redis': ['redisStore'],
  'fpx-collect/postgres': ['postgresStore'],
  'fpx-collect/emulator': ['startEmulator'],
  'fpx-collect/client': ['createClient', 'reconcile', 'FpxApiError'],
}

function run(format: 'esm' | 'cjs', source: string): string {
  const args = format === 'esm' ? ['--input-type=module', '-e', source] : ['--input-type=commonjs', '-e', source]
  return execFileSync(process.execPath, args, { cwd: process.cwd(), encoding: 'utf8' })
}

const load = (format: 'esm' | 'cjs', name: string): string =>
  format === 'esm' ? `await import(${JSON.stringify(name)})` : `require(${JSON.stringify(name)})`

describe.each(['esm', 'cjs'] as const)('the built package as %s', (format) => {
  it.each(Object.entries(SUBPATHS))('%s exports its API', (name, exports) => {
    const source = `
      const run = async () => {
        const m = ${load(format, name)}
        const types = Object.fromEntries(${JSON.stringify(exports)}.map((key) => [key, typeof m[key]]))
        console.log(JSON.stringify(types))
      }
      run().catch((error) => { console.error(error); process.exit(1) })`
    const types = JSON.parse(run(format, source)) as Record<string, string>
    for (const key of exports) expect([key, types[key]]).toEqual([key, key === 'paymentResultSchema' ? 'object' : 'function'])
  })

  it('verifies and dispatches a signed callback with the built code', () => {
    const source = `
      const run = async () => {
        const { createReceiver } = ${load(format, 'fpx-collect')}
        const { signCallback, samplePaymentFields } = ${load(format, 'fpx-collect/testing')}
        const token = 'ab'.repeat(32)
        const receiver = createReceiver({ checksumToken: token })
        let runs = 0
        receiver.on('payment.succeeded', () => { runs++ })
        const { body, contentType } = signCallback(samplePaymentFields(), token)
        const first = await receiver.handle({ kind: 'callback', body: Buffer.from(body), contentType })
        const again = await receiver.handle({ kind: 'redirect', body, contentType })
        console.log(JSON.stringify([first.status, first.outcome, again.outcome, runs]))
      }
      run().catch((error) => { console.error(error); process.exit(1) })`
    expect(JSON.parse(run(format, source))).toEqual([200, 'processed', 'duplicate', 1])
  })
})
