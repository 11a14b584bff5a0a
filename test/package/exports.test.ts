import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
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
  'fpx-collect/express': ['fpxCallback', 'fpxRedirect', 'keepRawBody', 'fpxConsole'],
  'fpx-collect/koa': ['fpxCallback', 'fpxRedirect', 'fpxConsole'],
  'fpx-collect/fastify': ['fpxCollect', 'default', 'fpxConsole'],
  'fpx-collect/web': ['fpxCallback', 'fpxRedirect', 'fpxConsole'],
  'fpx-collect/redis': ['redisStore'],
  'fpx-collect/postgres': ['postgresStore'],
  'fpx-collect/emulator': ['startEmulator'],
  'fpx-collect/client': ['createClient', 'reconcile', 'FpxApiError', 'paymentFormHtml'],
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
        const receiver = createReceiver({ signatureOnly: true, checksumToken: token })
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

describe('the built command', () => {
  it('prints the package version with --version', () => {
    const { version } = JSON.parse(execFileSync(process.execPath, ['-p', 'JSON.stringify(require("./package.json"))'], { encoding: 'utf8' })) as { version: string }
    expect(execFileSync(process.execPath, ['dist/cli.js', '--version'], { encoding: 'utf8' })).toBe(`${version}\n`)
  })
})

/**
 * An app outside the repository, compiled by tsc under `strict` against the built package's types (resolved
 * through its package.json exports, as an installed copy is): the Express raw-body recipe must type-check, and
 * the hand-written one it replaces (`req.rawBody = buf`) must still fail, or this check proves nothing.
 */
describe('an Express app written from the README, under strict tsc', () => {
  it('type-checks keepRawBody as the body parsers\' verify option, and refuses req.rawBody = buf', () => {
    const root = process.cwd()
    const app = mkdtempSync(join(tmpdir(), 'fpx-express-types-'))
    try {
      mkdirSync(join(app, 'node_modules'))
      symlinkSync(root, join(app, 'node_modules', 'fpx-collect'), 'dir')
      symlinkSync(join(root, 'node_modules', 'express'), join(app, 'node_modules', 'express'), 'dir')
      symlinkSync(join(root, 'node_modules', '@types'), join(app, 'node_modules', '@types'), 'dir')
      writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'shop', private: true, type: 'module' }))
      const compilerOptions = { strict: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', noEmit: true, types: ['node'], skipLibCheck: false }
      writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['app.ts', 'hand-written.ts'] }))
      writeFileSync(
        join(app, 'app.ts'),
        `import express from 'express'
import { createReceiver } from 'fpx-collect'
import { fpxCallback, fpxRedirect, keepRawBody } from 'fpx-collect/express'

const receiver = createReceiver({ signatureOnly: true, checksumToken: process.env.FPX_CHECKSUM_TOKEN ?? '' })
receiver.on('payment.succeeded', (event) => {
  const state: 'succeeded' = event.state
  console.log(state, event.payment.orderNumber)
})
const app = express()
app.use(express.urlencoded({ extended: false, verify: keepRawBody }))
app.use(express.json({ verify: keepRawBody }))
app.post('/fpx/callback', fpxCallback(receiver))
app.post('/fpx/redirect', fpxRedirect(receiver, { successUrl: '/thanks' }))
app.listen(3000)
`,
      )
      writeFileSync(
        join(app, 'hand-written.ts'),
        `import express from 'express'
import 'fpx-collect/express'
express.urlencoded({ extended: false, verify: (req, _res, buf) => { req.rawBody = buf } })
`,
      )
      let output = ''
      try {
        execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', app], { cwd: app, encoding: 'utf8' })
      } catch (error) {
        output = String((error as { stdout?: unknown }).stdout)
      }
      const errors = output.split('\n').filter((line) => line.includes('error TS'))
      expect(errors).toHaveLength(1)
      expect(errors[0]).toMatch(/^hand-written\.ts\(3,\d+\): error TS2339: Property 'rawBody' does not exist/)
    } finally {
      rmSync(app, { recursive: true, force: true })
    }
  }, 120_000)
})
