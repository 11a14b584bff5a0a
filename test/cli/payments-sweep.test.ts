import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createClient } from '../../src/client/index.js'
import { createReceiver, type PaymentBook } from '../../src/index.js'
import { redisStore } from '../../src/stores/redis/store.js'
import { DEMO, type Emulator, launch, paymentInput } from '../client/helpers.js'
import { uniqueTable } from '../stores/postgres-suites.js'
import { DATABASE_URL, REDIS_URL, serviceAvailable } from '../stores/services.js'
import { runCli } from './run.js'
import { cliStores } from './stores.js'

const available = (await serviceAvailable('PostgreSQL', DATABASE_URL)) && (await serviceAvailable('Redis', REDIS_URL))

const SRC = (file: string) => JSON.stringify(fileURLToPath(new URL(`../../src/${file}`, import.meta.url)))

/**
 * Writes the merchant's receiver module the sweep command loads: its API client (the emulator), its receiver (with
 * `store.options`), and a handler that says what ran; `more` lines after that.
 */
function receiverModule(file: string, baseUrl: string, store: { imports?: string[]; options: string }, more: string[] = []): string {
  const credentials = { ...DEMO, logger: false }
  const lines = [
    `import { createReceiver } from ${SRC('index.ts')}`,
    `import { createClient } from ${SRC('client/index.ts')}`,
    ...(store.imports ?? []),
    `const client = createClient({ environment: { baseUrl: ${JSON.stringify(baseUrl)} }, ...${JSON.stringify(credentials)} })`,
    `export const receiver = createReceiver({ checksumToken: ${JSON.stringify(DEMO.checksumToken)}, client, logger: false, ${store.options} })`,
    "receiver.on('payment.succeeded', (event) => void process.stderr.write('HANDLED ' + event.payment.orderNumber + ' ' + event.delivery + '\\n'))",
    ...more,
  ]
  writeFileSync(file, `${lines.join('\n')}\n`)
  return file
}

// Every command is a Node process of its own (tsx), seconds each on a busy machine.
describe('fpx-collect payments and sweep: usage', { timeout: 60_000 }, () => {
  it('refuses a missing URL, a bad action or flags, without touching a store', async () => {
    const [noUrl, badAction, noOpen, noTarget, badLimit, help, sweepHelp, noModule] = await Promise.all([
      runCli(['payments', 'list', '--open']),
      runCli(['payments', 'drop', '--url', 'redis://127.0.0.1:1']),
      runCli(['payments', 'list', '--status', 'lost', '--url', 'redis://127.0.0.1:1']),
      runCli(['payments', 'show', '--url', 'redis://127.0.0.1:1']),
      runCli(['payments', 'list', '--open', '--limit', '0', '--url', 'redis://x']),
      runCli(['payments', '--help']),
      runCli(['sweep', '--help']),
      runCli(['sweep']),
    ])
    expect(noUrl).toMatchObject({ code: 2, stderr: expect.stringContaining('set FPX_STORE_URL or pass --url') })
    expect(badAction).toMatchObject({ code: 2, stderr: expect.stringContaining('unknown payments action "drop"') })
    expect(noOpen).toMatchObject({ code: 2, stderr: expect.stringContaining('--status must be one of open, succeeded, failed, abandoned, paid_failing') })
    expect(noTarget).toMatchObject({ code: 2, stderr: expect.stringContaining('show needs an order_number or exchange_number') })
    expect(badLimit).toMatchObject({ code: 2, stderr: expect.stringContaining('--limit') })
    expect(help.stdout).toContain('fpx-collect payments list [--status S]')
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

// The sweep tests' emulator, and where they write the merchant's receiver modules.
let emulator: Emulator
const dir = mkdtempSync(join(tmpdir(), 'fpx-sweep-'))
beforeAll(async () => {
  emulator = await launch()
})
afterAll(async () => {
  await emulator.stop()
  rmSync(dir, { recursive: true, force: true })
})

describe('fpx-collect sweep: with the merchant’s receiver module', { timeout: 60_000 }, () => {

  it('hands a lost result to the module’s handlers once, and says so', async () => {
    await emulator.control('/faults', { lose_results: 1 })
    const client = createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO, logger: false })
    const input = paymentInput()
    const created = await client.createPayment(input)
    await emulator.complete(created.exchangeNumber as string, 'approve')
    // The merchant's module: its store (memory here, so it records the payment itself), its client, its handler.
    const module = receiverModule(join(dir, 'receiver.mts'), emulator.baseUrl, { options: 'sweep: { inProcess: false }' }, [
      `await receiver.payments.record({ orderNumber: ${JSON.stringify(input.order_number)}, amountSen: 10020, uid: ${JSON.stringify(DEMO.uid)}, kind: 'payment', createdAt: new Date(Date.now() - 3_600_000), exchangeNumber: null, attached: {} })`,
      "export function close() { process.stderr.write('CLOSED\\n') }",
    ])
    const result = await runCli(['sweep', '--receiver', module])
    expect(result.stdout).toBe('due 1, list pages 1 (found paid 1), lookups 0: processed 1, closed 1, abandoned 0, still open 0, skipped 1, failures 0\n')
    expect(result.stderr).toContain(`HANDLED ${input.order_number} reconcile`)
    expect(result.stderr).toContain('CLOSED')
    expect(result.code).toBe(0)

    const json = await runCli(['sweep', '--receiver', module, '--json'])
    expect(JSON.parse(json.stdout)).toMatchObject({ swept: true, processed: 1 })

    const empty = join(dir, 'empty.mjs')
    writeFileSync(empty, 'export const nothing = 1\n')
    expect(await runCli(['sweep', '--receiver', empty])).toMatchObject({ code: 2, stderr: expect.stringContaining('exports no receiver') })

    // A path with no file is a usage error; a module that throws while it loads could not run (exit 3).
    expect(await runCli(['sweep', '--receiver', join(dir, 'missing.mjs')])).toMatchObject({ code: 2, stderr: expect.stringContaining('no file at') })
    const failingLoad = join(dir, 'failing-load.mjs')
    writeFileSync(failingLoad, "throw new Error('DATABASE_URL is not set')\n")
    expect(await runCli(['sweep', '--receiver', failingLoad])).toMatchObject({ code: 3, stderr: expect.stringContaining('cannot load') })

    // A factory that throws, and a module whose own close() throws: reported, exit 3, and the command still ends.
    const throwing = join(dir, 'throwing.mjs')
    writeFileSync(throwing, "export default () => { throw new Error('database down') }\n")
    expect(await runCli(['sweep', '--receiver', throwing])).toMatchObject({ code: 3, stderr: expect.stringContaining('failed to make the receiver: database down') })
    const badClose = join(dir, 'bad-close.mjs')
    writeFileSync(
      badClose,
      "export const receiver = { sweep: async () => ({ swept: true, due: 0, lookups: 0, processed: 0, closed: 0, abandoned: 0, open: 0, skipped: 0, failures: 0 }), close: async () => { throw new Error('receiver close failed') } }\n" +
        "export const close = () => { process.stderr.write('module closed\\n') }\n",
    )
    const closing = await runCli(['sweep', '--receiver', badClose])
    expect(closing).toMatchObject({ code: 3, stderr: expect.stringContaining('receiver close failed') })
    expect(closing.stderr).toContain('module closed')
  })

  it('names each order it could not settle, with its message, and exits 3', async () => {
    await emulator.control('/faults', { lose_results: 1 })
    const client = createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO, logger: false })
    const inputs = [paymentInput(), paymentInput()]
    for (const input of inputs) await emulator.complete((await client.createPayment(input)).exchangeNumber as string, 'approve')
    // Both paid and lost; the merchant's fulfilment throws for the first.
    const record = (input: { order_number: string }) =>
      `await receiver.payments.record({ orderNumber: ${JSON.stringify(input.order_number)}, amountSen: 10020, uid: ${JSON.stringify(DEMO.uid)}, kind: 'payment', createdAt: new Date(Date.now() - 3_600_000), exchangeNumber: null, attached: {} })`
    const module = receiverModule(join(dir, 'failing-receiver.mts'), emulator.baseUrl, { options: 'sweep: { inProcess: false }' }, [
      ...inputs.map(record),
      `receiver.on('payment.succeeded', (event) => { if (event.payment.orderNumber === ${JSON.stringify(inputs[0]?.order_number)}) throw new Error('fulfilment down') })`,
    ])
    const result = await runCli(['sweep', '--receiver', module])
    expect(result.code).toBe(3)
    expect(result.stdout).toBe(
      'due 2, list pages 1 (found paid 2), lookups 0: processed 1, closed 1, abandoned 0, still open 1, skipped 2, failures 1\n' +
        `  failing: order ${inputs[0]?.order_number}: a payment.succeeded handler failed; the claim was released so the next delivery runs it again\n`,
    )
    const json = JSON.parse((await runCli(['sweep', '--receiver', module, '--json'])).stdout) as { failing: unknown[] }
    expect(json.failing).toEqual([{ orderNumber: inputs[0]?.order_number, message: expect.stringContaining('handler failed') }])
  })
})

describe.skipIf(!available)('fpx-collect payments and sweep: against the stores', { timeout: 90_000 }, () => {
  const { pool, redis, prefix, cases } = cliStores('payments')

  for (const [name, store, where] of cases)
    it(`${name}: lists the open payments newest first, shows one with its timeline`, async () => {
      const receiver = createReceiver({ signatureOnly: true, checksumToken: DEMO.checksumToken, store: store(), logger: false as never })
      const orders = [`OLD-${randomUUID()}`, `NEW-${randomUUID()}`, `PAID-${randomUUID()}`]
      const ages = [3 * 3_600_000, 5 * 60_000, 60_000]
      for (const [i, orderNumber] of orders.entries())
        await receiver.payments.record({ orderNumber, amountSen: 10_020, uid: DEMO.uid, kind: 'form', createdAt: new Date(Date.now() - (ages[i] as number)), exchangeNumber: null, attached: { cart: `C-${i}` } })
      await (store().paymentBook as () => PaymentBook)().settle({ orderNumber: orders[2] as string, uid: DEMO.uid }, 'succeeded', 'EX-PAID')
      await receiver.close()
      const [list, json, show, missing, byUid, otherUid] = await Promise.all([
        runCli(['payments', 'list', '--open', ...where]),
        runCli(['payments', 'list', '--open', '--json', ...where]),
        runCli(['payments', 'show', orders[0] as string, ...where]),
        runCli(['payments', 'show', 'NOT-THERE', ...where]),
        runCli(['payments', 'show', orders[0] as string, '--uid', DEMO.uid, ...where]),
        runCli(['payments', 'show', orders[0] as string, '--uid', 'another-merchant', ...where]),
      ])
      expect(list).toMatchObject({ code: 0, stderr: '' })
      const lines = list.stdout.trim().split('\n')
      expect(lines[1]).toMatch(new RegExp(`^${orders[0]}  open  age 3h00m  amount 100.20  form  exchange -  buyer -  lookups 0  last lookup -  next \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d \\+08:00$`))
      expect(lines[0]).toMatch(new RegExp(`^${orders[1]}  open  age 5m`))
      expect(lines.at(-1)).toBe('2 shown; open: 2, the oldest 3h00m old')
      const parsed = JSON.parse(json.stdout) as { summary: { open: number; oldestOpenAgeSeconds: number }; payments: { orderNumber: string }[] }
      expect(parsed.summary.open).toBe(2)
      expect(parsed.summary.oldestOpenAgeSeconds).toBeGreaterThanOrEqual(3 * 3600)
      expect(parsed.payments.map((payment) => payment.orderNumber)).toEqual(orders.slice(0, 2).reverse())
      expect(show).toMatchObject({ code: 0 })
      expect(show.stdout).toContain('  attached cart: C-0')
      expect(show.stdout).toMatch(/created {2}client {2}- {2}payment form built by the client/)
      expect(missing).toMatchObject({ code: 1, stdout: expect.stringContaining('not in the payment book') })
      // Order numbers are unique per merchant: --uid says whose.
      expect(byUid).toMatchObject({ code: 0, stdout: expect.stringContaining('  attached cart: C-0') })
      expect(otherUid).toMatchObject({ code: 1, stdout: expect.stringContaining('not in the payment book for uid another-merchant') })
    })

  it('PostgreSQL: a database where no book was ever made is reported, not created', async () => {
    const fresh = uniqueTable('none')
    const result = await runCli(['payments', 'list', '--open', '--url', DATABASE_URL, '--table', fresh])
    expect(result).toMatchObject({ code: 3, stderr: expect.stringContaining('there is no payment book table') })
    expect((await pool.query('SELECT to_regclass($1) AS found', [`${fresh}_book`])).rows[0].found).toBeNull()
  })

  it('Redis: the sweep command finds a lost result of a payment recorded by another process', async () => {
    await emulator.control('/faults', { lose_results: 1 })
    const sweepPrefix = `${prefix}sweep:`
    // This process is the shop's web server: it records the payment in the shared store as it creates it.
    const web = createReceiver({ signatureOnly: true, checksumToken: DEMO.checksumToken, store: redisStore({ client: redis, prefix: sweepPrefix, inspect: false }), sweep: false, logger: false as never })
    const client = createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO, book: web, logger: false })
    const input = paymentInput()
    const created = await client.createPayment(input)
    await emulator.complete(created.exchangeNumber as string, 'approve')
    const module = receiverModule(join(dir, 'redis-receiver.mts'), emulator.baseUrl, {
      imports: [`import { Redis } from ${JSON.stringify(import.meta.resolve('ioredis'))}`, `import { redisStore } from ${SRC('stores/redis/store.ts')}`],
      options: `store: redisStore({ client: new Redis(${JSON.stringify(REDIS_URL)}), prefix: ${JSON.stringify(sweepPrefix)}, inspect: false }), sweep: { inProcess: false, firstLookupAfterMs: 1 }`,
    })
    await new Promise((resolve) => setTimeout(resolve, 5))
    const result = await runCli(['sweep', '--receiver', module])
    expect(result.stdout, result.stderr).toContain('due 1, list pages 1 (found paid 1), lookups 0: processed 1, closed 1')
    expect(result.stderr).toContain(`HANDLED ${input.order_number}`)
    expect(result.code).toBe(0)
    expect(await web.payments.find(input.order_number)).toMatchObject({ status: 'succeeded', exchangeNumber: created.exchangeNumber })
    await web.close()
  })
})
