import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createReceiver, type Receiver } from '../../src/index.js'
import { deliver, eventually, TOKEN } from '../inbox/suite.js'
import { DATABASE_URL, REDIS_URL, serviceAvailable } from '../stores/services.js'
import { runCli } from './run.js'
import { cliStores } from './stores.js'

const available = (await serviceAvailable('PostgreSQL', DATABASE_URL)) && (await serviceAvailable('Redis', REDIS_URL))

// Every command is a Node process of its own (tsx), seconds each on a busy machine.
describe('fpx-collect inbox: usage', { timeout: 60_000 }, () => {
  it('refuses a missing URL, a bad action or flags, without touching a store', async () => {
    // Started together: each is a Node process of its own.
    const [noUrl, badAction, noTarget, badStatus, badScheme, badTable, help] = await Promise.all([
      runCli(['inbox', 'list']),
      runCli(['inbox', 'drop', '--url', 'redis://127.0.0.1:1']),
      runCli(['inbox', 'retry', '--url', 'redis://127.0.0.1:1']),
      runCli(['inbox', 'list', '--status', 'done', '--url', 'redis://x']),
      runCli(['inbox', 'list', '--url', 'mysql://x']),
      runCli(['inbox', 'list', '--table', 'a;b', '--url', 'postgres://127.0.0.1:1/x']),
      runCli(['inbox', '--help']),
    ])
    expect(noUrl).toMatchObject({ code: 2, stderr: expect.stringContaining('set FPX_INBOX_URL or pass --url') })
    expect(badAction).toMatchObject({ code: 2, stderr: expect.stringContaining('unknown inbox action "drop"') })
    expect(noTarget).toMatchObject({ code: 2, stderr: expect.stringContaining('--all-dead') })
    expect(badStatus).toMatchObject({ code: 2, stderr: expect.stringContaining('--status') })
    expect(badScheme).toMatchObject({ code: 2, stderr: expect.stringContaining('postgres://') })
    expect(badTable).toMatchObject({ code: 2, stderr: expect.stringContaining('table must be') })
    expect(help.stdout).toContain('fpx-collect inbox retry --all-dead')
  })

  it('never prints the password of a store it cannot reach', async () => {
    const secret = 'S3cretPassw0rd'
    const urls = [`postgres://merchant:${secret}@127.0.0.1:1/shop`, `redis://default:${secret}@127.0.0.1:1`]
    for (const result of await Promise.all(urls.map((url) => runCli(['inbox', 'list'], { env: { FPX_INBOX_URL: url } })))) {
      expect(result.code).toBe(3)
      expect(result.stderr).toMatch(/cannot reach (postgres|redis):\/\/127\.0\.0\.1:1/)
      expect(result.stdout + result.stderr).not.toContain(secret)
    }
  })
})

describe.skipIf(!available)('fpx-collect inbox: against the stores', { timeout: 60_000 }, () => {
  const { cases } = cliStores('inbox')

  for (const [name, store, where] of cases)
    describe(name, () => {
      let receiver: Receiver<unknown>
      let broken = true
      const runs: string[] = []
      const ex = `EX-${randomUUID()}`
      beforeAll(async () => {
        receiver = createReceiver<unknown>({ signatureOnly: true, checksumToken: TOKEN, store: store(), inbox: { maxAttempts: 1, pollMs: 50 } })
        receiver.on('payment.succeeded', (event) => {
          if (broken) throw new Error('ledger offline')
          runs.push(event.id)
        })
        await deliver(receiver, ex, 'succeeded', `ORD-${ex}`)
        expect(await eventually(async () => (await receiver.inbox.show(ex))[0]?.status === 'dead')).toBe(true)
      })
      afterAll(() => receiver.inbox.stop())

      it('lists the dead-lettered entry, and shows it without its checksum', async () => {
        const filter = ['--status', 'dead', '--order-number', `ORD-${ex}`, ...where]
        const [list, listed, show, nothing] = await Promise.all([
          runCli(['inbox', 'list', ...filter]),
          runCli(['inbox', 'list', '--json', ...filter]),
          runCli(['inbox', 'show', ex, ...where]),
          runCli(['inbox', 'show', 'EX-nothing', ...where]),
        ])
        expect(list).toMatchObject({ code: 0, stderr: '' })
        expect(list.stdout).toContain(`${ex}:succeeded  dead  attempts 1  callback  order ORD-${ex}`)
        expect(list.stdout).toContain('handler_failed: ledger offline')
        const json = JSON.parse(listed.stdout)
        expect(json.items).toEqual([expect.objectContaining({ id: `${ex}:succeeded`, status: 'dead', attempts: 1 })])
        expect(json.counts.dead).toBeGreaterThanOrEqual(1)
        expect(show.code).toBe(0)
        expect(show.stdout).toContain(`  exchange_number: ${ex}`)
        expect(show.stdout).not.toMatch(/checksum/)
        expect(nothing).toMatchObject({ code: 1, stdout: expect.stringContaining('not in the inbox') })
      })

      it('retries it: the handler runs once and the entry is gone', async () => {
        broken = false
        expect(await runCli(['inbox', 'retry', ex, '--state', 'succeeded', ...where])).toMatchObject({ code: 0, stdout: '1 entry due now\n' })
        expect(await eventually(() => runs.length === 1)).toBe(true)
        expect(await eventually(async () => (await receiver.inbox.show(ex)).length === 0)).toBe(true)
        expect(runs).toEqual([`${ex}:succeeded`])
        expect(await runCli(['inbox', 'retry', '--all-dead', ...where])).toMatchObject({ code: 1, stdout: '0 entries due now\n' })
      })
    })
})
