import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Emulator, launch } from './harness.js'

/** Malaysian noon on 15 March 2026: "today" for these tests. */
const TODAY = new Date('2026-03-15T04:00:00Z')
let clock = TODAY
let emulator: Emulator

interface Page {
  next_page: number | null
  current_page: number
  per_page: number
  total_page: number
  prev_page: number | null
  total_entries: number
  transactions: Record<string, unknown>[]
}

async function payAt(when: string, outcome: 'approve' | 'reject'): Promise<string> {
  clock = new Date(when)
  const exchangeNumber = await emulator.pay()
  await emulator.complete(exchangeNumber, outcome)
  clock = TODAY
  return exchangeNumber
}

let justAfterMidnight: string
let tooOld: string

beforeAll(async () => {
  emulator = await launch({ now: () => clock })
  for (let i = 0; i < 25; i++) await payAt(`2026-03-15T0${i % 4}:${String(10 + i).padStart(2, '0')}:00Z`, 'approve')
  for (let i = 0; i < 3; i++) await payAt('2026-03-14T03:00:00Z', 'reject')
  // 00:30 on 11 March in Malaysia, still 10 March in UTC.
  justAfterMidnight = await payAt('2026-03-10T16:30:00Z', 'approve')
  tooOld = await payAt('2025-12-01T04:00:00Z', 'approve')
})
afterAll(() => emulator.stop())

async function list(query: string): Promise<Page> {
  const response = await emulator.get(`/v1/transactions/list${query}`)
  expect(response.status).toBe(200)
  return (await response.json()) as Page
}

async function refused(query: string): Promise<Record<string, string>> {
  const response = await emulator.get(`/v1/transactions/list${query}`)
  expect(response.status).toBe(422)
  return ((await response.json()) as { fields: Record<string, string> }).fields
}

describe('GET /v1/transactions/list pagination', () => {
  it('applies the defaults: 10 per page, first page, successful payments of the last 90 days', async () => {
    const page = await list('')
    expect(page).toMatchObject({ current_page: 1, per_page: 10, next_page: 2, prev_page: null, total_entries: 26, total_page: 3 })
    expect(page.transactions).toHaveLength(10)
    expect(page.transactions.every((record) => record.payment_status === true)).toBe(true)
    expect(page.transactions.map((record) => record.exchange_number)).not.toContain(tooOld)
  })

  it('lists newest first with the list fields', async () => {
    const [first, second] = (await list('?per_page=2')).transactions
    expect(String(first?.created_at) >= String(second?.created_at)).toBe(true)
    expect(first).toMatchObject({ fpx_model: 'B2C', payment_method: 'fpx_online_banking', payment_mode: 'merchant', merchant_name: 'Demo Merchant Sdn Bhd' })
    expect(first?.fpx_transaction_time).toMatch(/^\d{14}$/)
  })

  it('ends with a short last page', async () => {
    expect(await list('?page=3')).toMatchObject({ current_page: 3, next_page: null, prev_page: 2, total_page: 3 })
    expect((await list('?page=3')).transactions).toHaveLength(6)
  })

  it('answers an empty page past the end', async () => {
    const page = await list('?page=9')
    expect(page).toMatchObject({ current_page: 9, next_page: null, prev_page: 8, total_page: 3, total_entries: 26 })
    expect(page.transactions).toEqual([])
  })

  it('accepts per_page 100 and refuses 101', async () => {
    const page = await list('?per_page=100')
    expect(page).toMatchObject({ per_page: 100, total_page: 1, next_page: null })
    expect(page.transactions).toHaveLength(26)
    expect(await refused('?per_page=101')).toHaveProperty('per_page')
  })

  it.each(['?per_page=0', '?per_page=ten', '?page=0', '?page=-1', '?page=1.5'])('refuses %s', async (query) => {
    expect(Object.keys(await refused(query))).toHaveLength(1)
  })

  it('answers 401 without Basic auth', async () => {
    expect((await emulator.get('/v1/transactions/list', null)).status).toBe(401)
  })
})

describe('GET /v1/transactions/list filters', () => {
  it('payment_status=false lists failed payments only, all lists both', async () => {
    const failed = await list('?payment_status=false')
    expect(failed.total_entries).toBe(3)
    expect(failed.transactions.every((record) => record.payment_status === false)).toBe(true)
    expect((await list('?payment_status=all')).total_entries).toBe(29)
    expect(await refused('?payment_status=yes')).toHaveProperty('payment_status')
  })

  it('needs both dates or none', async () => {
    expect((await refused('?start_date=2026-03-01')).start_date).toBeUndefined()
    expect(await refused('?start_date=2026-03-01')).toHaveProperty('end_date')
    expect(await refused('?end_date=2026-03-01')).toHaveProperty('start_date')
  })

  it('reads a single day from the same date in both bounds', async () => {
    const day = await list('?start_date=2026-03-14&end_date=2026-03-14&payment_status=all')
    expect(day.total_entries).toBe(3)
  })

  it('includes end_date itself', async () => {
    expect((await list('?start_date=2026-03-01&end_date=2026-03-14&payment_status=all')).total_entries).toBe(4)
    expect((await list('?start_date=2026-03-01&end_date=2026-03-15&payment_status=all')).total_entries).toBe(29)
  })

  it('counts days in Malaysian time', async () => {
    const day = await list('?start_date=2026-03-11&end_date=2026-03-11')
    expect(day.transactions.map((record) => record.exchange_number)).toEqual([justAfterMidnight])
    expect((await list('?start_date=2026-03-10&end_date=2026-03-10')).total_entries).toBe(0)
  })

  it('allows a window of 90 days, both included, and refuses 91', async () => {
    const page = await list('?start_date=2025-12-01&end_date=2026-02-28')
    expect(page.transactions.map((record) => record.exchange_number)).toEqual([tooOld])
    const fields = await refused('?start_date=2025-12-01&end_date=2026-03-01')
    expect(fields.end_date).toMatch(/90 days/)
  })

  it.each([
    ['?start_date=2026-02-30&end_date=2026-03-01', 'start_date'],
    ['?start_date=2026-03-01&end_date=20260302', 'end_date'],
    ['?start_date=2026-03-05&end_date=2026-03-01', 'end_date'],
  ])('refuses %s', async (query, field) => {
    expect(await refused(query)).toHaveProperty(field)
  })
})
