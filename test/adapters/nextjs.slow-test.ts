import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { dirname, join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FieldInput } from '../../src/core/values.js'
import { encodeForm, samplePaymentFields, signCallback } from '../../src/testing.js'
import type { DeliveryView } from '../emulator/delivery-merchant.js'
import { DEMO, type Emulator, launch } from '../emulator/harness.js'

/**
 * docs/nextjs.md's pattern in a real Next.js App Router app: `next build` with no FPX_* variable in the build
 * environment (a receiver created at module level fails there: Next evaluates route modules while collecting
 * page data), then `next start` with the token, and the emulator's callback and the buyer's redirect through the
 * fetch-API adapter. Slow (a production build, about a minute alone): `npm run test:next` runs it, as .ci/run does.
 */

const ROOT = resolve('.')
// Inside the repository: Turbopack builds only projects under its root, which must also hold next and react.
const APP = join(ROOT, 'test-results', `next-app-${process.pid}`)
const NEXT = join(ROOT, 'node_modules', 'next', 'dist', 'bin', 'next')

const FILES: Record<string, string> = {
  'package.json': JSON.stringify({ name: 'fpx-next-app', private: true }),
  // The app's own (empty) configuration: without it Turbopack applies the repository's tsconfig paths, which
  // map 'fpx-collect' to the sources instead of the built package.
  'jsconfig.json': '{ "compilerOptions": {} }\n',
  'next.config.mjs': `export default { turbopack: { root: ${JSON.stringify(ROOT)} }, outputFileTracingRoot: ${JSON.stringify(ROOT)} }\n`,
  // The pattern of docs/nextjs.md: the receiver is created on first use, with its handlers, and kept.
  'lib/fpx.js': `import { createReceiver } from 'fpx-collect'

let receiver
export function getReceiver() {
  if (receiver === undefined) {
    receiver = createReceiver({ checksumToken: process.env.FPX_CHECKSUM_TOKEN })
    receiver.on('payment.succeeded', (event) => console.log(\`handled: paid \${event.payment.exchangeNumber}\`))
  }
  return receiver
}
`,
  'app/api/fpx/callback/route.js': `import { fpxCallback } from 'fpx-collect/web'
import { getReceiver } from '../../../../lib/fpx.js'

export const POST = fpxCallback(getReceiver)
`,
  'app/api/fpx/redirect/route.js': `import { fpxRedirect } from 'fpx-collect/web'
import { getReceiver } from '../../../../lib/fpx.js'

export const POST = fpxRedirect(getReceiver, { successUrl: '/paid', failureUrl: '/failed' })
`,
  'app/layout.js': 'export default function RootLayout({ children }) { return <html lang="en"><body>{children}</body></html> }\n',
  'app/page.js': 'export default function Home() { return <p>shop</p> }\n',
}

/** The environment without any of the shop's secrets, as on a build machine. */
function withoutSecrets(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const kept = Object.entries(process.env).filter(([name]) => !name.startsWith('FPX_'))
  return { ...Object.fromEntries(kept), NEXT_TELEMETRY_DISABLED: '1', ...extra }
}

/** Waits until the server answers its home page with 200 (beforeAll has no expect.poll). */
async function answering(url: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while ((await fetch(`${url}/`).catch(() => undefined))?.status !== 200) {
    if (Date.now() > deadline) throw new Error(`next start did not answer at ${url} within ${timeoutMs / 1000} s`)
    await new Promise((done) => setTimeout(done, 250))
  }
}

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  const { port } = server.address() as { port: number }
  await new Promise<void>((done) => server.close(() => done()))
  return port
}

describe('a Next.js App Router app built with no secrets', () => {
  let server: ChildProcess | undefined
  let emulator: Emulator
  let appUrl = ''
  const output: string[] = []

  beforeAll(async () => {
    // The app imports the package by name, as users do: the built files.
    execFileSync(process.execPath, ['node_modules/tsup/dist/cli-default.js', '--silent'], { stdio: 'inherit' })
    rmSync(APP, { recursive: true, force: true })
    for (const [path, text] of Object.entries(FILES)) {
      mkdirSync(dirname(join(APP, path)), { recursive: true })
      writeFileSync(join(APP, path), text)
    }
    mkdirSync(join(APP, 'node_modules'))
    symlinkSync(ROOT, join(APP, 'node_modules', 'fpx-collect'))
    // Throws, with Next's output shown, when the build fails.
    execFileSync(process.execPath, [NEXT, 'build'], { cwd: APP, env: withoutSecrets(), stdio: 'inherit' })

    const port = await freePort()
    appUrl = `http://127.0.0.1:${port}`
    server = spawn(process.execPath, [NEXT, 'start', '-p', String(port), '-H', '127.0.0.1'], {
      cwd: APP,
      env: withoutSecrets({ FPX_CHECKSUM_TOKEN: DEMO.checksumToken }),
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    server.stdout?.on('data', (chunk: Buffer) => output.push(...chunk.toString('utf8').split('\n')))
    server.stderr?.on('data', (chunk: Buffer) => output.push(...chunk.toString('utf8').split('\n')))
    await answering(appUrl)
    emulator = await launch({ log: () => {}, delivery: { attempts: 2, initialDelayMs: 50, maxDelayMs: 100, timeoutMs: 20_000 } })
  }, 600_000)

  afterAll(async () => {
    await emulator?.stop()
    if (server !== undefined && server.exitCode === null && server.signalCode === null) {
      server.kill('SIGTERM')
      await once(server, 'exit')
    }
    rmSync(APP, { recursive: true, force: true })
  })

  it('verifies the emulator\'s callback (fields in body and query) and handles it once; the redirect then goes to successUrl', async () => {
    const exchangeNumber = await emulator.pay({ callback_url: `${appUrl}/api/fpx/callback`, redirect_url: `${appUrl}/api/fpx/redirect` })
    const { result } = (await emulator.complete(exchangeNumber, 'approve')) as { result: Record<string, FieldInput> }
    let delivery: (DeliveryView & { transport: string }) | undefined
    await expect
      .poll(async () => {
        const response = await emulator.control(`/deliveries?exchange_number=${exchangeNumber}`)
        ;[delivery] = ((await response.json()) as { deliveries: (DeliveryView & { transport: string })[] }).deliveries
        return delivery?.state
      }, { timeout: 30_000 })
      .toBe('delivered')
    expect(delivery?.transport).toBe('both')
    expect(delivery?.attempts.map((attempt) => attempt.status)).toEqual([200])
    await expect.poll(() => output.filter((line) => line.includes(`handled: paid ${exchangeNumber}`)).length).toBe(1)

    const redirect = await fetch(`${appUrl}/api/fpx/redirect`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: encodeForm(result),
      redirect: 'manual',
    })
    expect(redirect.status).toBe(303)
    expect(redirect.headers.get('location')).toBe('/paid')
    // The same receiver behind both routes: the redirect after the callback runs no handler again.
    expect(output.filter((line) => line.includes(`handled: paid ${exchangeNumber}`))).toHaveLength(1)
  })

  it('refuses a callback signed with another token with 401', async () => {
    const forged = signCallback(samplePaymentFields(), 'f'.repeat(64))
    const response = await fetch(`${appUrl}/api/fpx/callback`, { method: 'POST', headers: { 'content-type': forged.contentType }, body: forged.body })
    expect(response.status).toBe(401)
  })

  it('without the token at run time, fails the delivery with 500 (the service retries) and logs why', async () => {
    const port = await freePort()
    const lines: string[] = []
    const bare = spawn(process.execPath, [NEXT, 'start', '-p', String(port), '-H', '127.0.0.1'], { cwd: APP, env: withoutSecrets(), stdio: ['ignore', 'pipe', 'pipe'] })
    bare.stdout?.on('data', (chunk: Buffer) => lines.push(chunk.toString('utf8')))
    bare.stderr?.on('data', (chunk: Buffer) => lines.push(chunk.toString('utf8')))
    try {
      const url = `http://127.0.0.1:${port}`
      await answering(url)
      const delivery = signCallback(samplePaymentFields(), DEMO.checksumToken)
      const response = await fetch(`${url}/api/fpx/callback`, { method: 'POST', headers: { 'content-type': delivery.contentType }, body: delivery.body })
      expect(response.status).toBe(500)
      await expect.poll(() => lines.join('').includes('give exactly one of checksumToken, credentials or resolveChecksumToken')).toBe(true)
    } finally {
      bare.kill('SIGTERM')
      await once(bare, 'exit')
    }
  })
})
