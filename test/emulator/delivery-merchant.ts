import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import express from 'express'
import { fpxCallback, fpxRedirect } from '../../adapters/express.js'
import { createReceiver, type PaymentEvent } from '../../src/index.js'
import { afterAll, afterEach } from 'vitest'
import type { EmulatorOptions } from '../../src/emulator/index.js'
import { DEMO, type Emulator, launch } from './harness.js'

/**
 * A merchant app as a merchant would write it: Express with the receiver's adapter on its callback and redirect
 * routes, over real HTTP. It can be told to fail its next callbacks, and records what reached it.
 */
export interface Merchant {
  readonly url: string
  readonly callbackUrl: string
  readonly redirectUrl: string
  /** Handler runs, in order. */
  readonly events: PaymentEvent[]
  /** Every callback request that reached the app (failed ones included): its fpx_debit_auth_code and answer status. */
  readonly callbacks: { code: string; status: number }[]
  /** The next `count` callbacks are answered 500 before the receiver sees them. */
  failNext(count: number): void
  close(): Promise<void>
}

export async function startMerchant(): Promise<Merchant> {
  const receiver = createReceiver({ signatureOnly: true, credentials: [{ uid: DEMO.uid, checksumToken: DEMO.checksumToken }] })
  const events: PaymentEvent[] = []
  const callbacks: { code: string; status: number }[] = []
  for (const name of ['payment.succeeded', 'payment.failed', 'payment.pending'] as const) receiver.on(name, (event) => void events.push(event))
  let failures = 0
  const app = express()
  app.post('/fpx/callback', (req, res, next) => {
    // The test reads the code, so the app reads the body itself and hands the raw bytes on to the adapter.
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const raw = Buffer.concat(chunks)
      const code = new URLSearchParams(raw.toString('utf8')).get('fpx_debit_auth_code') ?? ''
      res.on('finish', () => callbacks.push({ code, status: res.statusCode }))
      if (failures > 0) {
        failures--
        res.status(500).send('down for maintenance')
        return
      }
      // rawBody is how the adapter finds a body read earlier; other packages type it differently, hence assign.
      Object.assign(req, { rawBody: raw })
      next()
    })
  })
  app.post('/fpx/callback', fpxCallback(receiver))
  app.post('/fpx/redirect', fpxRedirect(receiver, { successUrl: '/paid', failureUrl: '/failed', pendingUrl: '/pending' }))
  const server: Server = await new Promise((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening))
  })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    callbackUrl: `${url}/fpx/callback`,
    redirectUrl: `${url}/fpx/redirect`,
    events,
    callbacks,
    failNext(count) {
      failures = count
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error === undefined ? resolve() : reject(error)))
        server.closeAllConnections()
      }),
  }
}

export interface DeliveryView {
  id: string
  exchange_number: string
  reason: string
  state: string
  fpx_debit_auth_code: string
  created_at: string
  next_attempt_at: string | null
  attempts: { number: number; status: number | null; error: string | null; duration_ms: number; started_at: string; answer: string | null }[]
}

export async function deliveriesOf(emulator: Emulator, exchangeNumber: string): Promise<DeliveryView[]> {
  const response = await emulator.control(`/deliveries?exchange_number=${exchangeNumber}`)
  return ((await response.json()) as { deliveries: DeliveryView[] }).deliveries
}

/** Polls until `done` holds; the limit only turns a hang into a readable failure. */
export async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 5000
  for (;;) {
    const value = await read()
    if (done(value)) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** Waits until `count` deliveries of the payment exist and none is still waiting or sending. */
export function settled(emulator: Emulator, exchangeNumber: string, count = 1): Promise<DeliveryView[]> {
  return until(
    () => deliveriesOf(emulator, exchangeNumber),
    (list) => list.length >= count && list.every((delivery) => delivery.state === 'delivered' || delivery.state === 'failed'),
    `${count} settled deliveries of ${exchangeNumber}`,
  )
}

/**
 * An emulator and a merchant app for one test file, started now (top-level await) and stopped after it; each
 * test starts from a reset emulator and a merchant with no recorded callbacks that answers every one.
 */
export async function emulatorWithMerchant(options: EmulatorOptions): Promise<{ emulator: Emulator; merchant: Merchant }> {
  const emulator = await launch(options)
  const merchant = await startMerchant()
  afterAll(async () => {
    await emulator.stop()
    await merchant.close()
  })
  afterEach(async () => {
    await emulator.control('/reset', {})
    merchant.failNext(0)
    merchant.events.length = 0
    merchant.callbacks.length = 0
  })
  return { emulator, merchant }
}
