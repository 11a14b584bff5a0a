import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { afterEach, expect, it } from 'vitest'
import { DEMO_MERCHANT } from '../src/emulator/config.js'

/**
 * `npm run demo` as CI runs it: a separate process (node --import tsx, which is what the tsx command does),
 * the Express example shop against the emulator, judged by its exit code and what it prints.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url))
const children: ChildProcessWithoutNullStreams[] = []

function start(args: string[] = []): { child: ChildProcessWithoutNullStreams; output: { stdout: string; stderr: string } } {
  const child = spawn(process.execPath, ['--import', 'tsx', 'examples/demo.ts', ...args], { cwd: ROOT, env: { ...process.env, NO_COLOR: '1' } })
  children.push(child)
  const output = { stdout: '', stderr: '' }
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output.stdout += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output.stderr += chunk))
  return { child, output }
}

async function exitCode(child: ChildProcessWithoutNullStreams): Promise<number | null> {
  if (child.exitCode === null && child.signalCode === null) await once(child, 'close')
  return child.exitCode
}

afterEach(async () => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL')
      await once(child, 'close')
    }
})

it('runs every journey against the emulator and exits 0', async () => {
  const { child, output } = start()
  const code = await exitCode(child)
  const { stdout, stderr } = output
  expect(code, `${stdout}\n${stderr}`).toBe(0)
  expect(stderr).not.toMatch(/FAILED|internal error/)

  // Each journey's outcome, in order: the order's state and how often the shop's handlers ran for it.
  const journeys = stdout.split(/\n(?=\d\. )/).slice(1)
  expect(journeys).toHaveLength(7)
  const [approved, late, cancelled, pending, approval, repeated, forged] = journeys as [string, string, string, string, string, string, string]
  expect(approved).toMatch(/^1\. B2C payment approved/)
  expect(approved).toMatch(/-> 200 "Pay RM 100\.20", payment [A-Z]{5}\d{10}/)
  expect(approved).toMatch(/callback dlv_\d+ \(result, code 00\) -> 200 .*delivered after 1 attempt\n/)
  expect(approved).toMatch(/=> order ORD-\w+ paid \(handled once\)/)
  expect(late).toMatch(/POST \/fpx\/redirect -> 303 see \/orders\/ORD-\w+: "paid/)
  expect(late).toMatch(/=> order ORD-\w+ paid \(no handler ran\)/)
  expect(cancelled).toMatch(/simulated bank: "Cancel \(buyer\)"/)
  expect(cancelled).toMatch(/code 1C\) -> 200/)
  expect(cancelled).toMatch(/=> order ORD-\w+ failed \(handled once\)/)
  expect(pending).toMatch(/\+ model=B2B1\) -> 200/)
  expect(pending).toMatch(/code 99\) -> 200/)
  expect(pending).toMatch(/=> order ORD-\w+ awaiting approval \(handled once\)/)
  expect(approval).toMatch(/-> 200 "Approved"/)
  expect(approval).toMatch(/code 00\) -> 200/)
  expect(approval).toMatch(/=> order ORD-\w+ paid \(handled once\)/)
  expect(repeated).toMatch(/\(redelivery, code 00\) -> 200/)
  expect(repeated).toMatch(/=> order ORD-\w+ paid \(no handler ran\)/)
  expect(forged).toMatch(/POST \/fpx\/redirect -> 401/)
  expect(forged).toMatch(/=> order ORD-\w+ failed \(no handler ran\)/)

  // The same order is meant in journeys 1, 2 and 6; the shop and the emulator agree on every payment.
  const orderOf = (text: string) => /=> order (ORD-\w+)/.exec(text)?.[1]
  expect(orderOf(late)).toBe(orderOf(approved))
  expect(orderOf(repeated)).toBe(orderOf(approved))
  expect(stdout).toMatch(/[A-Z]{5}\d{10} payment_successful +ORD-\w+ .* paid/)
  expect(stdout).toMatch(/[A-Z]{5}\d{10} payment_unsuccessful +ORD-\w+ .* failed \(1C/)
  expect(stdout).toContain('demo: all 7 journeys ended as expected')

  // The Auth Token travels in the payment form and the Checksum Token signs everything: neither is printed.
  const { authToken, checksumToken } = DEMO_MERCHANT.credentials![0]!
  expect(stdout + stderr).not.toContain(authToken)
  expect(stdout + stderr).not.toContain(checksumToken)
}, 60_000)

it('--interactive serves the shop and the emulator until interrupted', async () => {
  const { child, output } = start(['--interactive'])
  const deadline = Date.now() + 30_000
  while (!/control API: (\S+)\)/.test(output.stdout) && child.exitCode === null && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 50))
  const shop = /checkout: +(http:\/\/127\.0\.0\.1:\d+)\//.exec(output.stdout)?.[1]
  const baseUrl = /emulator: +(http:\/\/127\.0\.0\.1:\d+\/api) /.exec(output.stdout)?.[1]
  expect(shop, output.stdout + output.stderr).toBeDefined()
  expect(baseUrl).toBeDefined()

  const checkout = await fetch(`${shop}/`)
  expect(checkout.status).toBe(200)
  expect(await checkout.text()).toContain('Pay with FPX online banking')
  // The emulator answers at the printed addresses: its control API, and payment creation under the base URL.
  const control = /control API: (\S+)\)/.exec(output.stdout)?.[1]
  const payments = await fetch(`${control}`)
  expect(payments.status).toBe(200)
  expect(await payments.json()).toMatchObject({ payments: [], total_entries: 0 })
  const unsigned = await fetch(`${baseUrl}/v1/payments`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' })
  expect(unsigned.status).toBe(401)
  await unsigned.arrayBuffer()

  // The operator's console beside the shop: refused without signing in, open after the printed one-time link.
  const signIn = /console: +(http:\/\/127\.0\.0\.1:\d+\/admin\/sign-in\?token=\S+)/.exec(output.stdout)?.[1]
  expect(signIn, output.stdout).toBeDefined()
  const outside = await fetch(`${shop}/admin/payments`)
  expect(outside.status).toBe(403)
  await outside.arrayBuffer()
  const signedIn = await fetch(signIn as string, { redirect: 'manual' })
  expect(signedIn.status).toBe(303)
  const session = (signedIn.headers.get('set-cookie') ?? '').split(';')[0] as string
  const overview = await fetch(`${shop}${signedIn.headers.get('location')}`, { headers: { cookie: session } })
  expect(overview.status).toBe(200)
  expect(await overview.text()).toContain('<h1>Overview</h1>')

  child.kill('SIGINT')
  expect(await exitCode(child)).toBe(0)
}, 60_000)
