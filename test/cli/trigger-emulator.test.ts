import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createReceiver, type PaymentEvent } from '../../src/index.js'
import { nodeDelivery } from '../../src/http/node-delivery.js'
import { runCli, startEmulatorCli, TOKEN } from './run.js'

const UID = '11111111-2222-4333-8444-555555555555'
const events: PaymentEvent[] = []
let server: Server
let url: string

beforeAll(async () => {
  // A merchant's callback route: the real receiver, knowing only UID's Checksum Token.
  const receiver = createReceiver({ signatureOnly: true, credentials: [{ uid: UID, checksumToken: TOKEN }] })
  receiver.on('payment.succeeded', (event) => void events.push(event))
  receiver.on('payment.failed', (event) => void events.push(event))
  receiver.on('payment.pending', (event) => void events.push(event))
  server = createServer((req, res) => {
    void receiver.handle(nodeDelivery('callback', req, { raw: undefined, parser: 'none' })).then((answer) => {
      res.writeHead(answer.status, answer.headers).end(answer.body)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/fpx/callback`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

describe('fpx-collect trigger', () => {
  it.each([
    ['succeeded', 'payment.succeeded'],
    ['failed', 'payment.failed'],
    ['pending', 'payment.pending'],
  ])('sends a signed %s callback the receiver accepts, and prints its answer', async (state, eventName) => {
    const before = events.length
    const result = await runCli(['trigger', state, '--url', url, '--uid', UID], { env: { FPX_CHECKSUM_TOKEN: TOKEN } })
    expect(result.code, result.stderr).toBe(0)
    expect(result.stdout).toContain(`POST ${url}`)
    expect(result.stdout).toContain('200 OK\nOK')
    expect(result.stdout + result.stderr).not.toContain(TOKEN)
    expect(events.length).toBe(before + 1)
    expect(events.at(-1)!.name).toBe(eventName)
    expect(events.at(-1)!.payment.uid).toBe(UID)
  })

  it('applies --field overrides, signed with the rest', async () => {
    const result = await runCli(['trigger', 'succeeded', '--url', url, '--uid', UID, '--field', 'order_number=ORD-CLI-7', '--checksum-token', TOKEN])
    expect(result.code).toBe(0)
    expect(events.at(-1)!.payment.orderNumber).toBe('ORD-CLI-7')
  })

  it('exits 1 and prints the refusal when the endpoint answers non-2xx (wrong token)', async () => {
    const result = await runCli(['trigger', 'succeeded', '--url', url, '--uid', UID], { env: { FPX_CHECKSUM_TOKEN: 'cd'.repeat(32) } })
    expect(result.code).toBe(1)
    expect(result.stdout).toContain('401 Unauthorized')
    expect(result.stdout).toContain('checksum_mismatch')
  })

  it('exits 3 when nothing answers, and 2 for an unknown state', async () => {
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    const refused = await runCli(['trigger', 'succeeded', '--url', `http://127.0.0.1:${port}/`], { env: { FPX_CHECKSUM_TOKEN: TOKEN } })
    expect(refused.code).toBe(3)
    expect(refused.stderr).toContain('ECONNREFUSED')
    const unknown = await runCli(['trigger', 'refunded', '--url', url], { env: { FPX_CHECKSUM_TOKEN: TOKEN } })
    expect(unknown.code).toBe(2)
  })
})

describe('fpx-collect emulator', () => {
  it('serves the API at the printed base URL, prints the demo credentials and partner_uid, and stops on SIGTERM', async () => {
    const emulator = await startEmulatorCli([])
    try {
      const baseUrl = /base URL\s+(\S+)/.exec(emulator.banner)![1]!
      expect(baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api$/)
      expect(emulator.banner).toContain('API UID 0c0ffee0-d3e0-4a11-8f00-00000000d3e0')
      expect(emulator.banner).toContain('partner_uid demo-partner-0001')
      expect(emulator.banner).toContain('Auth Token DemoAuthToken0000000')
      expect(emulator.banner).toContain(`Checksum Token ${'0123456789abcdef'.repeat(4)}`)
      const banks = await fetch(`${baseUrl}/public/v1/banks/b2c`)
      expect(banks.status).toBe(200)
      expect(((await banks.json()) as { VerifySign: boolean }).VerifySign).toBe(true)
    } finally {
      const { code, output } = await emulator.stop()
      expect(code).toBe(0)
      expect(output).toContain('stopped (SIGTERM)')
    }
  })

  it('hides the tokens of a config file unless --show-credentials asks for them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fpx-cli-emulator-'))
    const config = join(dir, 'config.json')
    writeFileSync(config, JSON.stringify({ merchants: [{ name: 'Kedai Ujian', credentials: [{ uid: UID, authToken: 'T'.repeat(20), checksumToken: TOKEN }] }] }))
    const emulator = await startEmulatorCli(['--config', config])
    try {
      expect(emulator.banner).toContain(`API UID ${UID}`)
      expect(emulator.banner).toContain('(set; see config)')
      expect(emulator.banner).not.toContain('T'.repeat(20))
      expect(emulator.banner).not.toContain(TOKEN)
    } finally {
      await emulator.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('hides them too when a state file brings them back without the config', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fpx-cli-emulator-'))
    const [config, state] = [join(dir, 'config.json'), join(dir, 'state.json')]
    writeFileSync(config, JSON.stringify({ merchants: [{ name: 'Kedai Ujian', credentials: [{ uid: UID, authToken: 'T'.repeat(20), checksumToken: TOKEN }] }] }))
    try {
      const first = await (await startEmulatorCli(['--config', config, '--state', state])).stop()
      // Stopped the moment its banner showed: the state is written all the same.
      expect(first.code).toBe(0)
      // The state file keeps the config's merchants, and wins over the built-in demo ones.
      const emulator = await startEmulatorCli(['--state', state])
      try {
        expect(emulator.banner).toContain(`API UID ${UID}`)
        expect(emulator.banner).toContain('(set; see config)')
        expect(emulator.banner).not.toContain('T'.repeat(20))
        expect(emulator.banner).not.toContain(TOKEN)
      } finally {
        await emulator.stop()
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('prints the tokens with --show-credentials, and takes merchants from --config', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fpx-cli-emulator-'))
    const config = join(dir, 'config.json')
    writeFileSync(config, JSON.stringify({ merchants: [{ name: 'Kedai Ujian', credentials: [{ uid: UID, authToken: 'T'.repeat(20), checksumToken: TOKEN }] }] }))
    const emulator = await startEmulatorCli(['--config', config, '--show-credentials'])
    try {
      expect(emulator.banner).toContain('merchant "Kedai Ujian"')
      expect(emulator.banner).toContain(`API UID ${UID}  Auth Token ${'T'.repeat(20)}  Checksum Token ${TOKEN}`)
    } finally {
      await emulator.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('keeps its state in --state across restarts, payment sessions included', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fpx-cli-state-'))
    const stateFile = join(dir, 'state.json')
    try {
      const first = await startEmulatorCli(['--state', stateFile])
      let paymentUrl: string
      try {
        const baseUrl = /base URL\s+(\S+)/.exec(first.banner)![1]!
        const response = await fetch(`${baseUrl}/apis/payments`, {
          method: 'POST',
          headers: {
            authorization: `Basic ${Buffer.from('0c0ffee0-d3e0-4a11-8f00-00000000d3e0:DemoAuthToken0000000').toString('base64')}`,
            'content-type': 'application/x-www-form-urlencoded',
          },
          body: 'transaction_amount=5.00&order_number=ORD-KEPT',
        })
        expect(response.status).toBe(200)
        paymentUrl = ((await response.json()) as { payment_url: string }).payment_url
      } finally {
        await first.stop()
      }
      expect(existsSync(stateFile)).toBe(true)
      expect(readFileSync(stateFile, 'utf8')).toContain('ORD-KEPT')
      const second = await startEmulatorCli(['--state', stateFile])
      try {
        const baseUrl = /base URL\s+(\S+)/.exec(second.banner)![1]!
        const slug = new URL(paymentUrl).pathname.split('/').at(-2)!
        const page = await fetch(`${baseUrl}/apis/${slug}/payment_session`)
        expect(page.status).toBe(200)
        expect(await page.text()).toContain('ORD-KEPT')
      } finally {
        await second.stop()
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('exits 2 for an invalid configuration', async () => {
    const result = await runCli(['emulator', '--port', '0', '--config', '/nonexistent/config.json'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('cannot read')
  })
})
