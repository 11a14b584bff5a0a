import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { retryDelayMs } from '../../src/emulator/delivery.js'
import { deliveriesOf, emulatorWithMerchant, settled, until } from './delivery-merchant.js'
import { launch } from './harness.js'

/** Callbacks from the emulator to a real merchant app (Express + the receiver's adapter), over HTTP. */
// Tiny backoff so retries happen within the test; the sequence of waits is checked in the delivery log.
const { emulator, merchant } = await emulatorWithMerchant({ delivery: { attempts: 4, initialDelayMs: 5, maxDelayMs: 20, timeoutMs: 5000 } })

function pay(overrides: Record<string, string> = {}): Promise<string> {
  return emulator.pay({ callback_url: merchant.callbackUrl, redirect_url: merchant.redirectUrl, ...overrides })
}

/** A port nothing listens on: one the system just gave out and took back. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

function eventsOf(exchangeNumber: string): string[] {
  return merchant.events.filter((event) => event.payment.exchangeNumber === exchangeNumber).map((event) => event.state)
}

describe('callback delivery', () => {
  it('posts the signed result to callback_url; the handler runs once and the attempt is logged', async () => {
    const exchangeNumber = await pay()
    const completion = await emulator.complete(exchangeNumber, 'approve')
    expect(completion.callback).toMatchObject({ exchange_number: exchangeNumber, reason: 'result', callback_url: merchant.callbackUrl })
    const [delivery, ...others] = await settled(emulator, exchangeNumber)
    expect(others).toEqual([])
    expect(delivery).toMatchObject({ state: 'delivered', fpx_debit_auth_code: '00' })
    expect(delivery?.attempts).toHaveLength(1)
    expect(delivery?.attempts[0]).toMatchObject({ number: 1, status: 200, error: null, answer: 'OK' })
    expect(delivery?.attempts[0]?.duration_ms).toBeGreaterThanOrEqual(0)
    expect(eventsOf(exchangeNumber)).toEqual(['succeeded'])
  })

  it('retries until a 2xx: 500, 500, then 200', async () => {
    merchant.failNext(2)
    const exchangeNumber = await pay()
    await emulator.complete(exchangeNumber, 'reject')
    const [delivery] = await settled(emulator, exchangeNumber)
    expect(delivery?.state).toBe('delivered')
    expect(delivery?.attempts.map((attempt) => attempt.status)).toEqual([500, 500, 200])
    expect(delivery?.attempts[0]?.answer).toBe('down for maintenance')
    expect(merchant.callbacks.map((callback) => callback.status)).toEqual([500, 500, 200])
    expect(eventsOf(exchangeNumber)).toEqual(['failed'])
  })

  it('gives up after the configured attempts and says so', async () => {
    merchant.failNext(10)
    const exchangeNumber = await pay()
    await emulator.complete(exchangeNumber, 'approve')
    const [delivery] = await settled(emulator, exchangeNumber)
    expect(delivery?.state).toBe('failed')
    expect(delivery?.attempts.map((attempt) => attempt.status)).toEqual([500, 500, 500, 500])
    expect(eventsOf(exchangeNumber)).toEqual([])
  })

  it('logs the network error when nobody listens at callback_url', async () => {
    const exchangeNumber = await emulator.pay({ callback_url: `http://127.0.0.1:${await closedPort()}/fpx/callback` })
    await emulator.complete(exchangeNumber, 'approve')
    const [delivery] = await settled(emulator, exchangeNumber)
    expect(delivery?.state).toBe('failed')
    expect(delivery?.attempts.every((attempt) => attempt.status === null && attempt.error === 'ECONNREFUSED')).toBe(true)
  })

  it('sends nothing when the payment has no callback_url', async () => {
    const exchangeNumber = await emulator.pay({ callback_url: '' })
    const completion = await emulator.complete(exchangeNumber, 'approve')
    expect(completion.callback).toBeNull()
    expect(await deliveriesOf(emulator, exchangeNumber)).toEqual([])
  })

  it('B2B1: 99 then 00 after approval; the handler sees pending, then succeeded', async () => {
    const exchangeNumber = await pay({ model: 'B2B1' })
    await emulator.complete(exchangeNumber, 'pending')
    await settled(emulator, exchangeNumber, 1)
    const approval = await emulator.control(`/payments/${exchangeNumber}/approve`, {})
    expect(approval.status).toBe(200)
    const deliveries = await settled(emulator, exchangeNumber, 2)
    expect(deliveries.map((delivery) => delivery.fpx_debit_auth_code)).toEqual(['99', '00'])
    expect(merchant.callbacks.map((callback) => callback.code)).toEqual(['99', '00'])
    expect(eventsOf(exchangeNumber)).toEqual(['pending', 'succeeded'])
    expect((await emulator.control(`/payments/${exchangeNumber}/approve`, {})).status).toBe(409)
  })

  it('redelivers on request as a new delivery; the receiver answers it as a duplicate', async () => {
    const exchangeNumber = await pay()
    await emulator.complete(exchangeNumber, 'approve')
    await settled(emulator, exchangeNumber, 1)
    const again = await emulator.control(`/payments/${exchangeNumber}/redeliver`, {})
    expect(again.status).toBe(202)
    const { id } = (await again.json()) as { id: string }
    const deliveries = await settled(emulator, exchangeNumber, 2)
    expect(deliveries.find((delivery) => delivery.id === id)).toMatchObject({ reason: 'redelivery', state: 'delivered' })
    expect(await (await emulator.control(`/deliveries/${id}`)).json()).toMatchObject({ id, reason: 'redelivery' })
    expect(eventsOf(exchangeNumber)).toEqual(['succeeded'])
  })

  it('refuses to redeliver before the bank answered, or without callback_url', async () => {
    const unanswered = await pay()
    expect((await emulator.control(`/payments/${unanswered}/redeliver`, {})).status).toBe(409)
    const silent = await emulator.pay({ callback_url: '' })
    await emulator.complete(silent, 'approve')
    expect((await emulator.control(`/payments/${silent}/redeliver`, {})).status).toBe(409)
    expect((await emulator.control('/deliveries/dlv_999')).status).toBe(404)
  })

  it('waits 1, 2, 4, ... times the first delay between attempts, up to the cap', () => {
    expect([1, 2, 3, 4, 5, 6].map((number) => retryDelayMs(number, 1000, 10_000))).toEqual([1000, 2000, 4000, 8000, 10_000, 10_000])
  })

  it('reset cancels a pending retry and forgets the log', async () => {
    const slow = await launch({ delivery: { attempts: 3, initialDelayMs: 60_000 } })
    try {
      merchant.failNext(1)
      const exchangeNumber = await slow.pay({ callback_url: merchant.callbackUrl })
      await slow.complete(exchangeNumber, 'approve')
      const [waiting] = await until(
        () => deliveriesOf(slow, exchangeNumber),
        (list) => list[0]?.attempts.length === 1,
        'the first attempt',
      )
      expect(waiting).toMatchObject({ state: 'scheduled' })
      expect(Date.parse(waiting?.next_attempt_at ?? '') - Date.parse(waiting?.attempts[0]?.started_at ?? '')).toBeGreaterThanOrEqual(59_000)
      expect((await slow.control('/reset', {})).status).toBe(200)
      expect(await deliveriesOf(slow, exchangeNumber)).toEqual([])
    } finally {
      // stop() must not wait for the minute-long retry: it is cancelled, not awaited.
      await slow.stop()
    }
  })
})
