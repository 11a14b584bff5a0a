/*
 * Lookups over HTTP as a merchant makes them, kept right through a retried order and a reload of the state file,
 * and every list the emulator serves bounded: the search answers at most 100 records (and says so), the control
 * API's lists come in pages of at most 1000.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { DEMO, type Emulator, launch, paymentForm } from './harness.js'

const directory = mkdtempSync(join(tmpdir(), 'fpx-emulator-lookups-'))
afterAll(() => rmSync(directory, { recursive: true, force: true }))

async function search(emulator: Emulator, kind: string, value: string): Promise<Record<string, unknown>[]> {
  const response = await emulator.get(`/v1/transactions/search?search_reference=${kind}&reference_number=${encodeURIComponent(value)}`)
  expect(response.status).toBe(200)
  return (await response.json()) as Record<string, unknown>[]
}

async function json(response: Response): Promise<Record<string, unknown>> {
  return (await response.json()) as Record<string, unknown>
}

/** A failed attempt at an order, then the buyer's retry through retry_url: a new attempt of the same order. */
async function retriedOrder(emulator: Emulator): Promise<{ orderNumber: string; first: string; second: string }> {
  const { order_number: orderNumber } = paymentForm()
  const first = await emulator.pay({ order_number: orderNumber })
  const { payment } = (await emulator.complete(first, 'reject')) as { payment: { retry_url: string } }
  const retried = await fetch(payment.retry_url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '', redirect: 'manual' })
  expect(retried.status).toBe(303)
  return { orderNumber, first, second: retried.headers.get('x-exchange-number') as string }
}

describe('lookups by order, exchange_number and merchant_reference_number', () => {
  it('follow a retried order, its completion, a reload of the state file and a reset', async () => {
    const stateFile = join(directory, 'state.json')
    const emulator = await launch({ stateFile })
    let order: { orderNumber: string; first: string; second: string }
    try {
      order = await retriedOrder(emulator)
      expect((await search(emulator, 'order_number', order.orderNumber)).map((record) => record.exchange_number)).toEqual([order.second, order.first])
      expect(await json(await emulator.get(`/v1/payments/status/${order.orderNumber}`))).toMatchObject({ exchange_number: order.second, payment_status: false })
      await emulator.complete(order.second, 'approve')
      expect(await json(await emulator.get(`/v1/payments/status/${order.orderNumber}`))).toMatchObject({ exchange_number: order.second, payment_status: true })
    } finally {
      await emulator.stop()
    }

    const reloaded = await launch({ stateFile })
    try {
      expect((await search(reloaded, 'order_number', order.orderNumber)).map((record) => [record.exchange_number, record.payment_status])).toEqual([
        [order.second, true],
        [order.first, false],
      ])
      expect((await search(reloaded, 'exchange_number', order.first)).map((record) => record.order_number)).toEqual([order.orderNumber])
      const byReference = await reloaded.get(`/v1/payments/status/merchant_reference_number/${order.second}`)
      expect(await json(byReference)).toMatchObject({ order_number: order.orderNumber, payment_status: true })
      const list = await json(await reloaded.get('/v1/transactions/list?payment_status=all'))
      expect(list).toMatchObject({ total_entries: 2 })
      // A payment made after the reload joins the same lookups.
      const third = await reloaded.pay({ order_number: order.orderNumber })
      expect((await search(reloaded, 'order_number', order.orderNumber)).map((record) => record.exchange_number)).toEqual([third, order.second, order.first])

      expect((await reloaded.control('/reset', {})).status).toBe(200)
      expect(await search(reloaded, 'order_number', order.orderNumber)).toEqual([])
      expect(await search(reloaded, 'exchange_number', order.second)).toEqual([])
      expect((await reloaded.get(`/v1/payments/status/${order.orderNumber}`)).status).toBe(404)
      expect((await reloaded.get(`/v1/payments/status/merchant_reference_number/${order.second}`)).status).toBe(404)
      expect(await json(await reloaded.get('/v1/transactions/list?payment_status=all'))).toMatchObject({ total_entries: 0, transactions: [] })
    } finally {
      await reloaded.stop()
    }
  })

  it("keeps another merchant's attempts at the same order number apart", async () => {
    const other = { uid: '11111111-2222-4333-8444-555555555555', authToken: 'OtherAuthToken000000', checksumToken: 'cd'.repeat(32) }
    const config = { merchants: [{ name: 'Demo', credentials: [DEMO] }, { name: 'Other', credentials: [other] }] }
    const emulator = await launch({ config })
    try {
      const mine = await emulator.pay({ order_number: 'ORD-SHARED' })
      const theirs = await emulator.postForm('/v1/payments', { ...paymentForm({ order_number: 'ORD-SHARED', uid: other.uid }, other.checksumToken), token: other.authToken }, null)
      expect(theirs.status).toBe(200)
      expect((await search(emulator, 'order_number', 'ORD-SHARED')).map((record) => record.exchange_number)).toEqual([mine])
      expect(await json(await emulator.get('/v1/payments/status/ORD-SHARED'))).toMatchObject({ exchange_number: mine })
      const theirSearch = await emulator.get('/v1/transactions/search?search_reference=order_number&reference_number=ORD-SHARED', other)
      expect(((await theirSearch.json()) as Record<string, unknown>[]).map((record) => record.exchange_number)).toEqual([theirs.headers.get('x-exchange-number')])
    } finally {
      await emulator.stop()
    }
  })
})

describe('bounded answers', () => {
  it('the search answers the newest 100 attempts of an order, and warns that more matched', async () => {
    const logged: string[] = []
    const emulator = await launch({ log: (line) => void logged.push(line) })
    try {
      const attempts: string[] = []
      for (let i = 0; i < 102; i++) attempts.push(await emulator.pay({ order_number: 'ORD-MANY' }))
      const found = await search(emulator, 'order_number', 'ORD-MANY')
      expect(found.map((record) => record.exchange_number)).toEqual(attempts.slice(2).reverse())
      expect(logged.some((line) => line.includes('102 payments have order_number "ORD-MANY"; answered the newest 100'))).toBe(true)
    } finally {
      await emulator.stop()
    }
  })

  it('the control API lists payments and deliveries in pages of at most 1000, oldest first', async () => {
    const emulator = await launch({ delivery: { attempts: 1, timeoutMs: 500 } })
    try {
      const made = [await emulator.pay(), await emulator.pay(), await emulator.pay()]
      const first = await json(await emulator.control('/payments?per_page=2'))
      expect(first).toMatchObject({ page: 1, per_page: 2, total_entries: 3, next_page: 2 })
      expect((first.payments as { exchange_number: string }[]).map((payment) => payment.exchange_number)).toEqual(made.slice(0, 2))
      const second = await json(await emulator.control('/payments?per_page=2&page=2'))
      expect(second).toMatchObject({ page: 2, next_page: null })
      expect((second.payments as { exchange_number: string }[]).map((payment) => payment.exchange_number)).toEqual(made.slice(2))
      expect(await json(await emulator.control('/payments'))).toMatchObject({ per_page: 100, total_entries: 3 })
      for (const query of ['per_page=1001', 'per_page=0', 'page=0', 'page=x']) {
        const refused = await emulator.control(`/payments?${query}`)
        expect(refused.status, query).toBe(422)
        expect(await json(refused)).toMatchObject({ code: 'invalid_parameters' })
      }
      for (const exchangeNumber of made) await emulator.complete(exchangeNumber, 'approve')
      const deliveries = await json(await emulator.control('/deliveries?per_page=2'))
      expect(deliveries).toMatchObject({ total_entries: 3, next_page: 2 })
      expect((deliveries.deliveries as { exchange_number: string }[]).map((delivery) => delivery.exchange_number)).toEqual(made.slice(0, 2))
      const ofOne = await json(await emulator.control(`/deliveries?exchange_number=${made[1]}`))
      expect((ofOne.deliveries as { exchange_number: string }[]).map((delivery) => delivery.exchange_number)).toEqual([made[1]])
      expect((await emulator.control('/deliveries?per_page=1001')).status).toBe(422)
    } finally {
      await emulator.stop()
    }
  })
})
