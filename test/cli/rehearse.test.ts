import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import express from 'express'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fpxCallback, fpxRedirect } from '../../adapters/express.js'
import { createClient } from '../../src/client/index.js'
import { startEmulator } from '../../src/emulator/index.js'
import { createReceiver, type PaymentEvent } from '../../src/index.js'
import { runCli } from './run.js'

/** A merchant's own credentials: given to the command through the environment, never to be printed. */
const CREDENTIALS = { uid: '5a1e0000-0000-4000-8000-00000000cafe', authToken: 'RehearsalToken000001', checksumToken: '9f'.repeat(32) }
const ENV = { FPX_UID: CREDENTIALS.uid, FPX_AUTH_TOKEN: CREDENTIALS.authToken, FPX_CHECKSUM_TOKEN: CREDENTIALS.checksumToken }

async function freePort(): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const { port } = probe.address() as AddressInfo
  await new Promise<void>((resolve) => probe.close(() => resolve()))
  return port
}

let emulatorPort: number
let server: Server
let app: string
const events: PaymentEvent[] = []
/** When set, the next handler run throws, as a merchant's handler does when its own database hiccups. */
let failNext = false

beforeAll(async () => {
  // The app is started first, as a merchant's would be: it confirms every result at the emulator's base URL,
  // which the command will serve on this port.
  emulatorPort = await freePort()
  const client = createClient({ environment: { baseUrl: `http://127.0.0.1:${emulatorPort}/api` }, ...CREDENTIALS, logger: false })
  const receiver = createReceiver({ checksumToken: CREDENTIALS.checksumToken, client, logger: false })
  for (const name of ['payment.succeeded', 'payment.failed', 'payment.pending'] as const)
    receiver.on(name, (event) => {
      if (failNext) {
        failNext = false
        throw new Error('the order database is briefly unavailable')
      }
      events.push(event)
    })
  const shop = express()
  shop.post('/fpx/callback', fpxCallback(receiver))
  shop.post('/fpx/redirect', fpxRedirect(receiver, { successUrl: '/thanks', failureUrl: '/sorry', pendingUrl: '/waiting' }))
  server = shop.listen(0, '127.0.0.1')
  await new Promise<void>((resolve) => server.once('listening', resolve))
  app = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

interface Report {
  payments: { started: number; succeeded: number; failed: number; b2b1: number }
  deliveries: { answered: number }
  answers: { callback: Record<string, number>; redirect: Record<string, number> }
  handlerErrors: number
  callbacks: { results: number; duplicates: number; retried: number; gaveUp: number; unsettled: number }
  saturation: { culprit: string }
  errors: number
}

const rehearse = (extra: string[]) =>
  runCli(
    ['rehearse', '--callback-url', `${app}/fpx/callback`, '--redirect-url', `${app}/fpx/redirect`, '--port', String(emulatorPort), '--approval-delay', '1', '--json', ...extra],
    { env: ENV },
  )

describe('fpx-collect rehearse', () => {
  it('delivers every payment to the app (duplicates, redirects, failures, B2B1 approvals) and reports what it answered', async () => {
    const before = events.length
    const result = await rehearse(['--rate', '4', '--duration', '2', '--failures', '0.25', '--b2b1', '0.25'])
    expect(result.code, result.stderr).toBe(0)
    const report = JSON.parse(result.stdout) as Report
    const { started, succeeded, failed, b2b1 } = report.payments
    expect(started).toBe(8)
    expect(succeeded + failed + b2b1).toBe(8)
    expect(failed).toBeGreaterThan(0)
    expect(b2b1).toBeGreaterThan(0)
    // One result per payment, and the B2B1 payments a second one (99, then 00); each sent twice (--duplicates 1).
    const results = succeeded + failed + 2 * b2b1
    expect(report.callbacks).toEqual({ results, duplicates: results, retried: 0, gaveUp: 0, unsettled: 0 })
    expect(report.answers.callback).toEqual({ 200: 2 * results })
    expect(report.answers.redirect).toEqual({ 303: 8 })
    expect(report.deliveries.answered).toBe(2 * results + 8)
    expect(report.handlerErrors).toBe(0)
    expect(report.errors).toBe(0)
    // Each payment state ran its handler once, confirmed through the emulator the command started. A 99 that
    // reaches the app only after the approval is confirmed as the success the API then shows, so the pending
    // runs are at most one per B2B1 payment.
    const ran = events.slice(before)
    expect(new Set(ran.map((event) => event.id)).size).toBe(ran.length)
    expect(ran.filter((event) => event.state === 'succeeded')).toHaveLength(succeeded + b2b1)
    expect(ran.filter((event) => event.state === 'failed')).toHaveLength(failed)
    expect(ran.filter((event) => event.state === 'pending').length).toBeLessThanOrEqual(b2b1)
    // Confirmed: the handlers got the API's record, which carries fields a callback lacks.
    expect(ran.every((event) => 'interface_uid' in event.fields)).toBe(true)
    // Progress lines on standard error, and no credential anywhere.
    expect(result.stderr).toMatch(/\[\s*1 s\] offered \d+ payments\/s/)
    for (const secret of [CREDENTIALS.authToken, CREDENTIALS.checksumToken]) expect(result.stdout + result.stderr).not.toContain(secret)
  })

  it('counts every callback of a run longer than one page of the emulator\'s delivery log (100)', async () => {
    const result = await rehearse(['--rate', '30', '--duration', '2', '--failures', '0', '--b2b1', '0'])
    expect(result.code, result.stderr).toBe(0)
    const report = JSON.parse(result.stdout) as Report
    expect(report.payments.started).toBe(60)
    expect(report.callbacks).toEqual({ results: 60, duplicates: 60, retried: 0, gaveUp: 0, unsettled: 0 })
    expect(report.errors).toBe(0)
  })

  it('counts a handler that threw (500 handler_failed) and the emulator retrying it, and exits 1', async () => {
    failNext = true
    const result = await rehearse(['--rate', '3', '--duration', '1', '--failures', '0', '--b2b1', '0', '--duplicates', '0'])
    expect(result.code, result.stderr).toBe(1)
    const report = JSON.parse(result.stdout) as Report
    expect(report.payments.started).toBe(3)
    expect(report.handlerErrors).toBe(1)
    // The refused callback was retried by the emulator and handled then; the redirect of that payment may have
    // been the delivery that met the failing handler instead, so the 500 is counted on whichever route it was.
    expect(report.callbacks).toMatchObject({ results: 3, duplicates: 0, gaveUp: 0, unsettled: 0 })
    const refused = (report.answers.callback['500 handler_failed'] ?? 0) + (report.answers.redirect['500 handler_failed'] ?? 0)
    expect(refused).toBe(1)
    expect(report.errors).toBe(1)
    expect(failNext).toBe(false)
  })

  it('uses a running emulator given by --emulator, and gives its faults back as they were', async () => {
    const running = await startEmulator({
      port: emulatorPort,
      config: { merchants: [{ name: 'Kedai Latihan', b2b1: true, credentials: [CREDENTIALS] }] },
      delivery: { attempts: 2, initialDelayMs: 200, maxDelayMs: 200 },
      log: () => {},
    })
    try {
      await fetch(`${running.url}/__emulator/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"delay_ms":5}' }).then((r) => r.text())
      const result = await runCli(
        ['rehearse', '--callback-url', `${app}/fpx/callback`, '--emulator', `${running.baseUrl}/`, '--rate', '4', '--duration', '1', '--b2b1', '0', '--json'],
        { env: ENV },
      )
      expect(result.code, result.stderr).toBe(0)
      const report = JSON.parse(result.stdout) as Report
      expect(report.payments.started).toBe(4)
      const results = report.payments.succeeded + report.payments.failed
      expect(report.callbacks).toEqual({ results, duplicates: results, retried: 0, gaveUp: 0, unsettled: 0 })
      expect(report.answers.callback).toEqual({ 200: 2 * results })
      expect(report.answers.redirect).toEqual({})
      expect(running.state.payments).toHaveLength(4)
      const faults = (await (await fetch(`${running.url}/__emulator/faults`)).json()) as Record<string, unknown>
      expect(faults).toEqual({ duplicate: 0, out_of_order: false, delay_ms: 5, redirect_lost: false })
    } finally {
      await running.stop()
    }
  })

  it('stops early when the app refuses every delivery as signed for someone else (another Checksum Token)', async () => {
    const result = await runCli(
      ['rehearse', '--callback-url', `${app}/fpx/callback`, '--redirect-url', `${app}/fpx/redirect`, '--port', String(emulatorPort), '--rate', '10', '--duration', '6', '--settle', '2', '--json'],
      { env: { ...ENV, FPX_CHECKSUM_TOKEN: 'ab'.repeat(32) } },
    )
    expect(result.code, result.stderr).toBe(1)
    const report = JSON.parse(result.stdout) as Report & { stoppedEarly: string | null }
    expect(report.stoppedEarly).toContain('401 checksum_mismatch')
    expect(Object.keys(report.answers.callback)).toEqual(['401 checksum_mismatch'])
    expect(report.errors).toBeGreaterThanOrEqual(20)
  })

  it('refuses partial credentials without printing them, and a missing --callback-url', async () => {
    const partial = await runCli(['rehearse', '--callback-url', `${app}/fpx/callback`], { env: { FPX_AUTH_TOKEN: CREDENTIALS.authToken } })
    expect(partial.code).toBe(2)
    expect(partial.stderr).toContain('give all three credentials or none: set FPX_UID or pass --uid')
    expect(partial.stderr).not.toContain(CREDENTIALS.authToken)
    const bad = await runCli(['rehearse', '--callback-url', `${app}/fpx/callback`], { env: { ...ENV, FPX_CHECKSUM_TOKEN: 'not-hex' } })
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('the FPX_CHECKSUM_TOKEN value is not 64 lowercase hexadecimal characters')
    expect(bad.stderr).not.toContain('not-hex')
    const missing = await runCli(['rehearse'], { env: ENV })
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain('--callback-url')
  })
})
