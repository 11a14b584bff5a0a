/*
 * `fpx-collect trigger` against an Express app whose receiver confirms every result over the service's API
 * (createReceiver({ checksumToken, client }), the client pointed at an emulator). A made-up result is unknown to
 * the API: answered 503 confirmation_pending, and trigger says why and what to do. With --emulator the emulator
 * makes the payment and sends the result itself, so the receiver confirms it and runs its handler.
 */
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import express from 'express'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fpxCallback, fpxRedirect } from '../../adapters/express.js'
import { createClient } from '../../src/client/index.js'
import { createReceiver, type PaymentEvent } from '../../src/index.js'
import { DEMO, type Emulator, launch } from '../emulator/harness.js'
import { runCli } from './run.js'

const events: PaymentEvent[] = []
let emulator: Emulator
/** Another emulator: the API a misconfigured app asks, which does not know the first one's payments. */
let elsewhere: Emulator
let server: Server
let app: string

function confirmingReceiver(baseUrl: string) {
  const client = createClient({ environment: { baseUrl }, ...DEMO, retryDelayMs: 1 })
  const receiver = createReceiver({ checksumToken: DEMO.checksumToken, client, logger: false })
  receiver.onAny((event) => void events.push(event))
  return receiver
}

beforeAll(async () => {
  emulator = await launch({ delivery: { attempts: 2, initialDelayMs: 200, timeoutMs: 5000 } })
  elsewhere = await launch()
  const receiver = confirmingReceiver(emulator.baseUrl)
  const misconfigured = confirmingReceiver(elsewhere.baseUrl)
  const shop = express()
  shop.post('/fpx/callback', fpxCallback(receiver))
  shop.post('/fpx/redirect', fpxRedirect(receiver, { successUrl: '/thanks' }))
  shop.post('/misconfigured/fpx/callback', fpxCallback(misconfigured))
  // A callback route under a part of the app that wants a session: every POST goes to the log-in page.
  shop.use('/admin', (_request, response) => void response.redirect(303, '/login'))
  server = await new Promise<Server>((resolve) => {
    const listening = shop.listen(0, '127.0.0.1', () => resolve(listening))
  })
  app = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()))
  await Promise.all([emulator.stop(), elsewhere.stop()])
})

const exchangeOf = (stdout: string) => /payment (\S+), order_number/.exec(stdout)?.[1]

function expectNoSecret(output: string): void {
  expect(output).not.toContain(DEMO.authToken)
  expect(output).not.toContain(DEMO.checksumToken)
}

describe('fpx-collect trigger and a receiver that confirms results over the API', { timeout: 60_000 }, () => {
  it('a made-up result is answered 503 confirmation_pending: trigger says why and points to --emulator', async () => {
    const before = events.length
    const result = await runCli(['trigger', 'succeeded', '--url', `${app}/fpx/callback`, '--uid', DEMO.uid], { env: { FPX_CHECKSUM_TOKEN: DEMO.checksumToken } })
    expect(result.code).toBe(1)
    expect(result.stdout).toContain('503 Service Unavailable')
    expect(result.stderr).toContain("fpx-collect trigger: confirmation_pending: The receiver confirms every result over the service's API")
    expect(result.stderr).toContain('made up and signed by fpx-collect trigger, so no API knows it')
    expect(result.stderr).toContain('add --emulator <its URL>')
    expect(events.length).toBe(before)
    expectNoSecret(result.stdout + result.stderr)
  })

  it.each([
    ['succeeded', 'payment.succeeded'],
    ['failed', 'payment.failed'],
    ['pending', 'payment.pending'],
  ])('with --emulator, the emulator posts a %s result its API knows: confirmed and handled once', async (state, name) => {
    const before = events.length
    // No Checksum Token: the emulator signs. An order of its own per state: once one is paid, a later failed or
    // pending attempt of the same order runs no handler.
    const result = await runCli(['trigger', state, '--url', `${app}/fpx/callback`, '--emulator', emulator.baseUrl, '--field', `order_number=ORD-TRIGGER-${state}`])
    expect(result.code, result.stdout + result.stderr).toBe(0)
    const exchangeNumber = exchangeOf(result.stdout)
    expect(exchangeNumber).toBeDefined()
    expect(result.stdout).toContain(`callback_url ${app}/fpx/callback`)
    expect(result.stdout).toMatch(/callback dlv_\d+, attempt 1 by the emulator:\n200 OK\nOK/)
    expect(events.slice(before).map((event) => [event.name, event.payment.exchangeNumber, event.payment.orderNumber])).toEqual([[name, exchangeNumber, `ORD-TRIGGER-${state}`]])
    expectNoSecret(result.stdout + result.stderr)
  })

  it('with --emulator --redirect, posts the emulator\'s result as the browser would: 303 to the shop\'s page, handled', async () => {
    const before = events.length
    const result = await runCli(['trigger', 'succeeded', '--url', `${app}/fpx/redirect`, '--redirect', '--emulator', `${emulator.url}/`])
    expect(result.code, result.stdout + result.stderr).toBe(0)
    expect(result.stdout).toContain('303 See Other\nLocation: /thanks (not followed)')
    expect(result.stdout).toContain(`redirect_url ${app}/fpx/redirect`)
    const handled = events.slice(before)
    expect(handled.map((event) => [event.name, event.delivery, event.payment.exchangeNumber])).toEqual([['payment.succeeded', 'redirect', exchangeOf(result.stdout)]])
  })

  it('with --emulator, a callback route behind a log-in redirect: the emulator counts it delivered, trigger warns and exits 1', async () => {
    const result = await runCli(['trigger', 'succeeded', '--url', `${app}/admin/fpx/callback`, '--emulator', emulator.url])
    expect(result.code).toBe(1)
    expect(result.stdout).toContain('303 See Other\nLocation: /login (not followed)')
    expect(result.stderr).toContain('the callback route answered 303, a redirect to /login')
    expect(result.stderr).toContain('behind a log-in')
    const exchangeNumber = exchangeOf(result.stdout) as string
    const [delivery] = ((await (await emulator.control(`/deliveries?exchange_number=${exchangeNumber}`)).json()) as { deliveries: { state: string }[] }).deliveries
    expect(delivery?.state).toBe('delivered')
  })

  it("with --emulator, an app whose API is another emulator's: 503 confirmation_pending, and trigger names the base URL to use", async () => {
    const result = await runCli(['trigger', 'succeeded', '--url', `${app}/misconfigured/fpx/callback`, '--emulator', emulator.url])
    expect(result.code).toBe(1)
    expect(result.stdout).toContain('503 Service Unavailable')
    expect(result.stdout).toContain('The emulator retries (next attempt at')
    expect(result.stderr).toContain('the API it asked does not know this payment, although the emulator made it')
    expect(result.stderr).toContain(`Point the app's base URL at ${emulator.baseUrl}`)
  })

  it("with --emulator, says at once when the emulator's faults lose the callback", async () => {
    expect((await emulator.control('/faults', { lose_results: 1 })).status).toBe(200)
    try {
      const result = await runCli(['trigger', 'succeeded', '--url', `${app}/fpx/callback`, '--emulator', emulator.url])
      expect(result.code).toBe(1)
      expect(result.stderr).toMatch(/the emulator's callback dlv_\d+ was lost by the emulator's lose_results fault/)
    } finally {
      await emulator.control('/faults', {})
    }
  })

  it('with --emulator, refuses what the emulator cannot make: an unknown uid, a result field, --format; and a URL that is no emulator', async () => {
    const [uid, field, format, notEmulator] = await Promise.all([
      runCli(['trigger', 'succeeded', '--url', `${app}/fpx/callback`, '--emulator', emulator.url, '--uid', '99999999-2222-4333-8444-555555555555']),
      runCli(['trigger', 'succeeded', '--url', `${app}/fpx/callback`, '--emulator', emulator.url, '--field', 'fpx_name=SOMEONE ELSE']),
      runCli(['trigger', 'succeeded', '--url', `${app}/fpx/callback`, '--emulator', emulator.url, '--format', 'json']),
      runCli(['trigger', 'succeeded', '--url', `${app}/fpx/callback`, '--emulator', app]),
    ])
    expect([uid.code, field.code, format.code, notEmulator.code]).toEqual([2, 2, 2, 2])
    expect(uid.stderr).toContain('the emulator refused: invalid parameters: uid')
    expect(uid.stderr).toContain('no merchant credential set has this API UID')
    expect(field.stderr).toContain("--field sets only the payment's request fields")
    expect(field.stderr).toContain('not fpx_name')
    expect(format.stderr).toContain('--format does not go with --emulator')
    expect(notEmulator.stderr).toContain('does not look like an fpx-collect emulator')
  })
})
