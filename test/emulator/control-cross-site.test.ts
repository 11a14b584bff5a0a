/**
 * The control API against a page of another site the developer has open: the browser can post a form to
 * http://127.0.0.1:<port>/__emulator/… without a preflight (form-encoded or text/plain), and names the page's
 * Origin. Neither such a post nor any request from another origin may change the emulator's state.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Emulator, launch } from './harness.js'

let emulator: Emulator

beforeAll(async () => {
  emulator = await launch()
})
afterAll(() => emulator.stop())

const FOREIGN = 'http://shop.attacker.example'

function post(path: string, headers: Record<string, string>, body?: string): Promise<Response> {
  return fetch(`${emulator.url}/__emulator${path}`, { method: 'POST', headers, body })
}

/** A payment that has its result, so approve and redeliver would both act on it. */
async function paidPayment(): Promise<string> {
  const exchangeNumber = await emulator.pay()
  await emulator.complete(exchangeNumber, 'approve')
  return exchangeNumber
}

async function paymentCount(): Promise<number> {
  return ((await (await emulator.control('/payments')).json()) as { payments: unknown[] }).payments.length
}

async function deliveryCount(exchangeNumber: string): Promise<number> {
  return ((await (await emulator.control(`/deliveries?exchange_number=${exchangeNumber}`)).json()) as { deliveries: unknown[] }).deliveries.length
}

describe('control API POSTs from a page of another site', () => {
  it.each([
    ['a form-encoded', 'application/x-www-form-urlencoded', 'x=1'],
    ['an empty form-encoded', 'application/x-www-form-urlencoded', ''],
    ['a text/plain', 'text/plain', '{"outcome":"approve","x":"="}'],
    ['a multipart', 'multipart/form-data; boundary=b', '--b--\r\n'],
  ])('refuses %s reset with 415 and keeps the payments', async (_name, type, body) => {
    await paidPayment()
    const before = await paymentCount()
    const response = await post('/reset', { 'content-type': type }, body)
    expect(response.status).toBe(415)
    expect(await response.json()).toMatchObject({ code: 'unsupported_media_type', error: expect.stringContaining('application/json') })
    expect(await paymentCount()).toBe(before)
  })

  it('refuses a POST with no Content-Type at all', async () => {
    const before = await paymentCount()
    const response = await post('/reset', {})
    expect(response.status).toBe(415)
    expect(await paymentCount()).toBe(before)
  })

  it('refuses form-encoded and text/plain approve, redeliver and complete', async () => {
    // A B2B1 payment pending corporate approval (99): approve and redeliver would both act on it.
    const exchangeNumber = await emulator.pay({ model: 'B2B1' })
    await emulator.complete(exchangeNumber, 'pending')
    const deliveries = await deliveryCount(exchangeNumber)
    for (const path of ['approve', 'redeliver', 'complete'])
      for (const type of ['application/x-www-form-urlencoded', 'text/plain']) {
        const response = await post(`/payments/${exchangeNumber}/${path}`, { 'content-type': type }, type === 'text/plain' ? '{"outcome":"approve"}' : '')
        expect(response.status, `${path} ${type}`).toBe(415)
        expect(await response.json()).toMatchObject({ code: 'unsupported_media_type' })
      }
    expect(await deliveryCount(exchangeNumber)).toBe(deliveries)
    const payment = (await (await emulator.control(`/payments/${exchangeNumber}`)).json()) as Record<string, unknown>
    expect(payment.fpx_debit_auth_code).toBe('99')
  })

  it('refuses a request from another origin with 403, even as JSON; takes it with no Origin or the emulator’s own', async () => {
    const exchangeNumber = await paidPayment()
    const before = await paymentCount()
    const deliveries = await deliveryCount(exchangeNumber)
    for (const origin of [FOREIGN, 'null', emulator.url.replace('127.0.0.1', 'localhost')]) {
      const reset = await post('/reset', { 'content-type': 'application/json', origin }, '{}')
      expect(reset.status, origin).toBe(403)
      expect(await reset.json()).toMatchObject({ code: 'forbidden_origin', error: expect.any(String) })
    }
    const form = await post(`/payments/${exchangeNumber}/redeliver`, { 'content-type': 'application/x-www-form-urlencoded', origin: FOREIGN }, '')
    expect(form.status).toBe(403)
    expect(await form.json()).toMatchObject({ code: 'forbidden_origin' })
    expect(await paymentCount()).toBe(before)
    expect(await deliveryCount(exchangeNumber)).toBe(deliveries)

    // The legitimate calls: a program's (no Origin, JSON with or without a body), or a page of the emulator's own.
    const redelivered = await post(`/payments/${exchangeNumber}/redeliver`, { 'content-type': 'application/json' })
    expect(redelivered.status).toBe(202)
    expect(await redelivered.json()).toMatchObject({ reason: 'redelivery' })
    const own = await post(`/payments/${exchangeNumber}/redeliver`, { 'content-type': 'application/json; charset=utf-8', origin: emulator.url }, '{}')
    expect(own.status).toBe(202)
    await own.text()
    expect(await deliveryCount(exchangeNumber)).toBe(deliveries + 2)
    const reset = await post('/reset', { 'content-type': 'application/json' })
    expect(reset.status).toBe(200)
    expect(await reset.json()).toEqual({ reset: true })
    expect(await paymentCount()).toBe(0)
  })
})
