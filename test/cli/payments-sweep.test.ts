import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createClient } from '../../src/client/index.js'
import { DEMO, type Emulator, launch, paymentInput } from '../client/helpers.js'
import { runCli } from './run.js'

const SRC = (file: string) => JSON.stringify(fileURLToPath(new URL(`../../src/${file}`, import.meta.url)))

// Every command is a Node process of its own (tsx), seconds each on a busy machine.
describe('fpx-collect payments and sweep: usage', { timeout: 60_000 }, () => {
  it('refuses a missing URL, a bad action or flags, without touching a store', async () => {
    const [noUrl, badAction, noOpen, noTarget, badLimit, help, sweepHelp, noModule] = await Promise.all([
      runCli(['payments', 'list', '--open']),
      runCli(['payments', 'drop', '--url', 'redis://127.0.0.1:1']),
      runCli(['payments', 'list', '--url', 'redis://127.0.0.1:1']),
      runCli(['payments', 'show', '--url', 'redis://127.0.0.1:1']),
      runCli(['payments', 'list', '--open', '--limit', '0', '--url', 'redis://x']),
      runCli(['payments', '--help']),
      runCli(['sweep', '--help']),
      runCli(['sweep']),
    ])
    expect(noUrl).toMatchObject({ code: 2, stderr: expect.stringContaining('set FPX_STORE_URL or pass --url') })
    expect(badAction).toMatchObject({ code: 2, stderr: expect.stringContaining('unknown payments action "drop"') })
    expect(noOpen).toMatchObject({ code: 2, stderr: expect.stringContaining('--open') })
    expect(noTarget).toMatchObject({ code: 2, stderr: expect.stringContaining('show needs an order_number') })
    expect(badLimit).toMatchObject({ code: 2, stderr: expect.stringContaining('--limit') })
    expect(help.stdout).toContain('fpx-collect payments list --open')
    expect(sweepHelp.stdout).toContain('--receiver')
    expect(noModule).toMatchObject({ code: 2, stderr: expect.stringContaining('--receiver ./receiver.mjs') })
  })

  it('never prints the password of a store it cannot reach', async () => {
    const secret = 'S3cretPassw0rd'
    const urls = [`postgres://merchant:${secret}@127.0.0.1:1/shop`, `redis://default:${secret}@127.0.0.1:1`]
    for (const result of await Promise.all(urls.map((url) => runCli(['payments', 'list', '--open'], { env: { FPX_STORE_URL: url } })))) {
      expect(result.code).toBe(3)
      expect(result.stderr).toMatch(/cannot reach (postgres|redis):\/\/127\.0\.0\.1:1/)
      expect(result.stdout + result.stderr).not.toContain(secret)
    }
  })
})

describe('fpx-collect sweep: with the merchant’s receiver module', { timeout: 60_000 }, () => {
  let emulator: Emulator
  const dir = mkdtempSync(join(tmpdir(), 'fpx-sweep-'))
  beforeAll(async () => {
    emulator = await launch()
  })
  afterAll(async () => {
    await emulator.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('hands a lost result to the module’s handlers once, and says so', async () => {
    await emulator.control('/faults', { lose_results: 1 })
    const client = createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO, logger: false })
    const input = paymentInput()
    const created = await client.createPayment(input)
    await emulator.complete(created.exchangeNumber as string, 'approve')
    // The merchant's module: its store (memory here, so it records the payment itself), its client, its handler.
    const module = join(dir, 'receiver.mts')
    writeFileSync(
      module,
      `import { createReceiver } from ${SRC('index.ts')}
import { createClient } from ${SRC('client/index.ts')}
const client = createClient({ environment: { baseUrl: ${JSON.stringify(emulator.baseUrl)} }, uid: ${JSON.stringify(DEMO.uid)}, authToken: ${JSON.stringify(DEMO.authToken)}, checksumToken: ${JSON.stringify(DEMO.checksumToken)}, logger: false })
export const receiver = createReceiver({ checksumToken: ${JSON.stringify(DEMO.checksumToken)}, client, sweep: { inProcess: false }, logger: false })
receiver.on('payment.succeeded', (event) => void process.stderr.write('HANDLED ' + event.payment.orderNumber + ' ' + event.delivery + '\\n'))
await receiver.payments.record({ orderNumber: ${JSON.stringify(input.order_number)}, amountSen: 10020, uid: ${JSON.stringify(DEMO.uid)}, kind: 'payment', createdAt: new Date(Date.now() - 3_600_000), exchangeNumber: null, attached: {} })
export function close() { process.stderr.write('CLOSED\\n') }
`,
    )
    const result = await runCli(['sweep', '--receiver', module])
    expect(result.stdout).toContain('due 1, lookups 1: processed 1, closed 1, abandoned 0, still open 0, skipped 0, failures 0')
    expect(result.stderr).toContain(`HANDLED ${input.order_number} reconcile`)
    expect(result.stderr).toContain('CLOSED')
    expect(result.code).toBe(0)

    const json = await runCli(['sweep', '--receiver', module, '--json'])
    expect(JSON.parse(json.stdout)).toMatchObject({ swept: true, processed: 1 })

    const empty = join(dir, 'empty.mjs')
    writeFileSync(empty, 'export const nothing = 1\n')
    expect(await runCli(['sweep', '--receiver', empty])).toMatchObject({ code: 2, stderr: expect.stringContaining('exports no receiver') })
  })
})
