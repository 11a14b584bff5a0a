import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FpxClient } from '../../src/client/index.js'
import { demoClient, type Emulator, launch, paymentInput } from './helpers.js'

let emulator: Emulator
let client: FpxClient
const approved: string[] = []
const rejected: string[] = []
const waiting: string[] = []

beforeAll(async () => {
  emulator = await launch()
  client = demoClient(emulator)
  // 23 payments through the client itself: 12 approved, 6 rejected, 5 never answered by a bank.
  for (let i = 0; i < 23; i++) {
    const { exchangeNumber } = await client.createPayment(paymentInput())
    const number = exchangeNumber as string
    if (i % 4 === 3) waiting.push(number)
    else if (i % 3 === 2) {
      await emulator.complete(number, 'reject')
      rejected.push(number)
    } else {
      await emulator.complete(number, 'approve')
      approved.push(number)
    }
  }
})
afterAll(() => emulator.stop())

describe('transactions', () => {
  it('reads one page with the pagination fields', async () => {
    const page = await client.transactions({ per_page: 5, page: 2, payment_status: 'all' })
    expect(page).toMatchObject({ current_page: 2, per_page: 5, total_entries: 23, total_page: 5, prev_page: 1, next_page: 3 })
    expect(page.transactions).toHaveLength(5)
  })

  it('applies the service defaults when nothing is given (successful payments, 10 a page)', async () => {
    const page = await client.transactions()
    expect(page).toMatchObject({ per_page: 10, total_entries: approved.length })
    expect(page.transactions.every((record) => record.payment_status)).toBe(true)
  })

  it('walks every page with all(), each transaction once', async () => {
    const seen: string[] = []
    for await (const record of client.transactions.all({ per_page: 3, payment_status: 'all' })) seen.push(record.exchange_number)
    expect(seen).toHaveLength(23)
    expect(new Set(seen)).toEqual(new Set([...approved, ...rejected, ...waiting]))
  })

  it('walks only the failed ones with payment_status false, and can start at a later page', async () => {
    const failed: string[] = []
    for await (const record of client.transactions.all({ per_page: 2, payment_status: false })) failed.push(record.exchange_number)
    expect(new Set(failed)).toEqual(new Set([...rejected, ...waiting]))
    const rest: string[] = []
    for await (const record of client.transactions.all({ per_page: 2, payment_status: false, page: 3 })) rest.push(record.exchange_number)
    expect(rest).toEqual(failed.slice(4))
  })

  it('takes a date window, and an empty window yields nothing', async () => {
    const today = new Date(Date.now() + 8 * 3_600_000).toISOString().slice(0, 10)
    const page = await client.transactions({ start_date: today, end_date: today, payment_status: 'all', per_page: 100 })
    expect(page.total_entries).toBe(23)
    const none: unknown[] = []
    for await (const record of client.transactions.all({ start_date: '2020-01-01', end_date: '2020-01-31' })) none.push(record)
    expect(none).toEqual([])
  })
})
