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
import { buildRoot } from '../runtimes/work.js'

/**
 * docs/nextjs.md's pattern in a real Next.js App Router app: `next build` with no FPX_* variable in the build
 * environment (a receiver created at module level fails there: Next evaluates route modules while collecting
 * page data), then `next start` with the emulator's {base_url} and the merchant's credentials, and the emulator's
 * callbacks and the buyer's redirect (POST and GET) through the fetch-API adapter, confirmed over the API. Slow (a production build, about a minute alone): `npm run test:next` runs it, as .ci/run does.
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
  'next.config.mjs': `export default { turbopack: { root: ${JSON.stringify(buildRoot())} }, outputFileTracingRoot: ${JSON.stringify(buildRoot())} }\n`,
  // The pattern of docs/nextjs.md: the receiver is created on first use, with its handlers, and kept; it
  // confirms every result over the service's API (here the emulator's).
  'lib/fpx.js': `import { createReceiver } from 'fpx-collect'

let receiver
export function getReceiver() {
  if (receiver === undefined) {
    receiver = createReceiver({
      environment: { baseUrl: process.env.FPX_BASE_URL },
      credentials: { uid: process.env.FPX_UID, authToken: process.env.FPX_AUTH_TOKEN, checksumToken: process.env.FPX_CHECKSUM_TOKEN },
    })
    receiver.on('payment.succeeded', (event) => console.log(\`handled: paid \${event.payment.exchangeNumber}\`))
    receiver.on('payment.failed', (event) => console.log(\`handled: failed \${event.payment.exchangeNumber}\`))
    receiver.on('payment.pending', (event) => console.log(\`handled: pending \${event.payment.exchangeNumber}\`))
  }
  return receiver
}
`,
  'app/fpx/callback/route.js': `import { fpxCallback } from 'fpx-collect/web'
import { getReceiver } from '../../../lib/fpx.js'

export const POST = fpxCallback(getReceiver)
`,
  'app/fpx/redirect/route.js': `import { fpxRedirect } from 'fpx-collect/web'
import { getReceiver } from '../../../lib/fpx.js'

export const POST = fpxRedirect(getReceiver, { successUrl: '/paid', failureUrl: '/failed', pendingUrl: '/pending' })
export const GET = POST
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

    // The service first: the app is given its {base_url} and the merchant's credentials when it starts.
    emulator = await launch({
      log: () => {},
      config: { merchants: [{ name: 'Next Shop', credentials: [DEMO], b2b1: true }] },
      delivery: { attempts: 2, initialDelayMs: 50, maxDelayMs: 100, timeoutMs: 20_000 },
    })
    const port = await freePort()
    appUrl = `http://127.0.0.1:${port}`
    server = spawn(process.execPath, [NEXT, 'start', '-p', String(port), '-H', '127.0.0.1'], {
      cwd: APP,
      env: withoutSecrets({ FPX_BASE_URL: emulator.baseUrl, FPX_UID: DEMO.uid, FPX_AUTH_TOKEN: DEMO.authToken, FPX_CHECKSUM_TOKEN: DEMO.checksumToken }),
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    server.stdout?.on('data', (chunk: Buffer) => output.push(...chunk.toString('utf8').split('\n')))
    server.stderr?.on('data', (chunk: Buffer) => output.push(...chunk.toString('utf8').split('\n')))
    await answering(appUrl)
  }, 600_000)

  afterAll(async () => {
    await emulator?.stop()
    if (server !== undefined && server.exitCode === null && server.signalCode === null) {
      server.kill('SIGTERM')
      await once(server, 'exit')
    }
    rmSync(APP, { recursive: true, force: true })
  })

  /** Pays at the emulator with the app's routes, and waits until the emulator delivered the callback; its signed result. */
  async function paid(outcome: 'approve' | 'pending', form: Record<string, string> = {}): Promise<{ exchangeNumber: string; result: Record<string, FieldInput> }> {
    const exchangeNumber = await emulator.pay({ callback_url: `${appUrl}/fpx/callback`, redirect_url: `${appUrl}/fpx/redirect`, ...form })
    const { result } = (await emulator.complete(exchangeNumber, outcome)) as { result: Record<string, FieldInput> }
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
    return { exchangeNumber, result }
  }

  const handled = (line: string) => output.filter((text) => text.includes(line)).length

  it("verifies the emulator's callback (fields in body and query), confirms it over the API and handles it once; the redirect, POST or GET, then goes to successUrl", async () => {
    const { exchangeNumber, result } = await paid('approve')
    await expect.poll(() => handled(`handled: paid ${exchangeNumber}`)).toBe(1)

    const posted = await fetch(`${appUrl}/fpx/redirect`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: encodeForm(result),
      redirect: 'manual',
    })
    const got = await fetch(`${appUrl}/fpx/redirect?${encodeForm(result)}`, { redirect: 'manual' })
    expect([posted.status, posted.headers.get('location'), got.status, got.headers.get('location')]).toEqual([303, '/paid', 303, '/paid'])
    // The same receiver behind both routes: the redirect after the callback runs no handler again.
    expect(handled(`handled: paid ${exchangeNumber}`)).toBe(1)
  })

  it('handles a B2B1 payment awaiting approval with the payment.pending handler', async () => {
    const { exchangeNumber, result } = await paid('pending', { model: 'B2B1' })
    expect(result.fpx_debit_auth_code).toBe('99')
    await expect.poll(() => handled(`handled: pending ${exchangeNumber}`)).toBe(1)
  })

  it('refuses a callback signed with another token with 401', async () => {
    const forged = signCallback(samplePaymentFields(), 'f'.repeat(64))
    const response = await fetch(`${appUrl}/fpx/callback`, { method: 'POST', headers: { 'content-type': forged.contentType }, body: forged.body })
    expect(response.status).toBe(401)
  })

  it('without the credentials at run time, fails the delivery with 500 (the service retries) and logs why', async () => {
    const port = await freePort()
    const lines: string[] = []
    const bare = spawn(process.execPath, [NEXT, 'start', '-p', String(port), '-H', '127.0.0.1'], { cwd: APP, env: withoutSecrets(), stdio: ['ignore', 'pipe', 'pipe'] })
    bare.stdout?.on('data', (chunk: Buffer) => lines.push(chunk.toString('utf8')))
    bare.stderr?.on('data', (chunk: Buffer) => lines.push(chunk.toString('utf8')))
    try {
      const url = `http://127.0.0.1:${port}`
      await answering(url)
      const delivery = signCallback(samplePaymentFields(), DEMO.checksumToken)
      const response = await fetch(`${url}/fpx/callback`, { method: 'POST', headers: { 'content-type': delivery.contentType }, body: delivery.body })
      expect(response.status).toBe(500)
      await expect.poll(() => lines.join('').includes('credentials.uid must be a non-empty string (it is undefined)')).toBe(true)
    } finally {
      bare.kill('SIGTERM')
      await once(bare, 'exit')
    }
  })
})
