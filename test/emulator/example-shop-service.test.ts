import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:net'
import { createInterface } from 'node:readline'
import { afterEach, describe, expect, it } from 'vitest'
import { hiddenFields } from './harness.js'

/**
 * An example shop started from the command line (`npm run example:web`, by tsx) when nothing answers at its
 * FPX_BASE_URL: on the demo credentials it starts the emulator there itself and a checkout reaches it; on other
 * credentials it does not start, and says how to start the emulator.
 */
async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

const started: ChildProcess[] = []
afterEach(async () => {
  for (const child of started.splice(0))
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM')
      await once(child, 'exit')
    }
})

function runShop(env: Record<string, string>): { child: ChildProcess; stdout: string[]; stderr: string[] } {
  const child = spawn(process.execPath, ['--import', 'tsx', 'examples/web/app.ts'], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', FPX_UID: '', FPX_AUTH_TOKEN: '', FPX_CHECKSUM_TOKEN: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  started.push(child)
  const stdout: string[] = []
  const stderr: string[] = []
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => stdout.push(line))
  createInterface({ input: child.stderr as NodeJS.ReadableStream }).on('line', (line) => stderr.push(line))
  return { child, stdout, stderr }
}


describe('an example shop with no service at FPX_BASE_URL', () => {
  it('on the demo credentials starts the emulator there, takes a payment request to it, and stops it on exit', async () => {
    const port = await freePort()
    const baseUrl = `http://127.0.0.1:${port}/api`
    const { child, stdout } = runShop({ FPX_BASE_URL: baseUrl })
    await expect.poll(() => stdout.find((line) => line.includes('shop on ')), { timeout: 20_000 }).toBeDefined()
    const shopUrl = /shop on (http:\/\/[^/\s]+)\//.exec(stdout.find((line) => line.includes('shop on ')) ?? '')?.[1]
    // The note is the line after "shop on": it may reach this process in a later read.
    const note = `nothing answered at ${baseUrl}: started the local emulator there (it stops with the shop); payment requests go to ${baseUrl}/v1/payments`
    await expect.poll(() => stdout.includes(note), { timeout: 20_000 }).toBe(true)

    const checkout = await fetch(`${shopUrl}/checkout`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ name: 'Tan Mei Ling', email: 'mei@example.com', phone: '+60129876543', amount: '42.50', product: 'Teh tarik set' }),
    })
    const page = await checkout.text()
    expect(page).toContain(`action="${baseUrl}/v1/payments"`)
    // The browser's next step reaches a live service that accepts the shop's signed request.
    const created = await fetch(`${baseUrl}/v1/payments`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(hiddenFields(page)),
    })
    expect(created.status).toBe(200)
    expect(created.headers.get('x-exchange-number')).toMatch(/^[A-Z]{5}\d{10}$/)

    child.kill('SIGTERM')
    const [code] = (await once(child, 'exit')) as [number | null]
    expect(code).toBe(0)
    await expect(fetch(`${baseUrl}/public/v1/banks/b2c`)).rejects.toThrow()
  }, 40_000)

  it('on other credentials does not start, and says how to start the emulator', async () => {
    const port = await freePort()
    const { child, stderr } = runShop({ FPX_BASE_URL: `http://127.0.0.1:${port}/api`, FPX_UID: 'my-real-uid' })
    const [code] = (await once(child, 'exit')) as [number | null]
    expect(code).toBe(1)
    const message = stderr.join('\n')
    expect(message).toContain(`Web (fetch API) shop did not start: nothing answers at http://127.0.0.1:${port}/api (ECONNREFUSED)`)
    expect(message).toContain(`npm run cli -- emulator --port ${port}`)
    expect(message).toContain('FPX_UID, FPX_AUTH_TOKEN and FPX_CHECKSUM_TOKEN in its --config file')
  }, 40_000)
})
