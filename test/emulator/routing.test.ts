import { request } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { basic, DEMO, type Emulator, launch, paymentForm } from './harness.js'

/**
 * Issue 9 §1, over real HTTP: paths normalised as a Rails router does, an empty query value filters nothing,
 * and the public bank lists readable cross-origin. Each tolerance is reported as a warning; strict mode refuses.
 */
let emulator: Emulator
const logged: string[] = []
beforeAll(async () => {
  emulator = await launch({ log: (line) => logged.push(line) })
  // One offline bank, so "no filter" and "online only" differ.
  expect((await emulator.control('/banks/b2c/MB2U0227', { status: 'offline' })).status).toBe(200)
})
afterAll(() => emulator.stop())

interface BankList {
  fpx_bankList: Array<{ code: string; status_format1: string }>
}

/** A raw request, so the path reaches the server exactly as written. */
function raw(method: string, path: string, headers: Record<string, string> = {}, body?: string) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((resolve, reject) => {
    const req = request(`${emulator.url}${path}`, { method, headers }, (res) => {
      let text = ''
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

async function codes(path: string): Promise<string[]> {
  const response = await raw('GET', path)
  expect(response.status, `${path}: ${response.body}`).toBe(200)
  return (JSON.parse(response.body) as BankList).fpx_bankList.map((bank) => bank.code)
}

describe('paths are normalised like a Rails router', () => {
  it('collapses repeated slashes and ignores a trailing slash', async () => {
    const expected = await codes('/api/public/v1/banks/b2c')
    expect(expected.length).toBeGreaterThan(1)
    for (const path of ['/api/public/v1//banks/b2c', '/api//public/v1/banks/b2c', '//api/public/v1/banks/b2c', '/api/public/v1/banks/b2c/', '/api/public//v1/banks//b2c//'])
      expect(await codes(path)).toEqual(expected)
  })

  it('routes a POST the same way: a payment created at //v1//payments/', async () => {
    const body = new URLSearchParams(paymentForm()).toString()
    const response = await raw('POST', '/api//v1//payments/', { 'content-type': 'application/x-www-form-urlencoded' }, body)
    expect(response.status, response.body).toBe(200)
    expect(response.headers['x-exchange-number']).toMatch(/^[A-Z0-9]+$/)
  })

  it('still answers 404 for a path that differs by more than slashes', async () => {
    const response = await raw('GET', '/api/public/v1/banks/b2c/x')
    expect(response.status).toBe(404)
    expect(JSON.parse(response.body)).toMatchObject({ code: 'not_found' })
  })
})

describe('an empty query value means no filter', () => {
  it('?status and ?status= list every bank, as no status does; an unknown status is still 422', async () => {
    const all = await codes('/api/public/v1/banks/b2c')
    const online = await codes('/api/public/v1/banks/b2c?status=online')
    expect(online.length).toBeLessThan(all.length)
    expect(await codes('/api/public/v1/banks/b2c?status')).toEqual(all)
    expect(await codes('/api/public/v1/banks/b2c?status=')).toEqual(all)
    expect((await raw('GET', '/api/public/v1/banks/b2c?status=busy')).status).toBe(422)
  })

  it('empty filters of the transaction list take their defaults', async () => {
    await emulator.pay()
    const auth = { authorization: basic(DEMO) }
    const plain = await raw('GET', '/api/v1/transactions/list?payment_status=all', auth)
    const empty = await raw('GET', '/api/v1/transactions/list?payment_status=all&page=&per_page=&start_date=&end_date', auth)
    expect(empty.status, empty.body).toBe(200)
    expect(JSON.parse(empty.body)).toEqual(JSON.parse(plain.body))
    expect((JSON.parse(plain.body) as { total_entries: number }).total_entries).toBeGreaterThan(0)
    const defaultStatus = await raw('GET', '/api/v1/transactions/list?payment_status=', auth)
    expect(defaultStatus.status, defaultStatus.body).toBe(200)
    expect(JSON.parse(defaultStatus.body)).toEqual(JSON.parse((await raw('GET', '/api/v1/transactions/list', auth)).body))
  })

  it('an empty required value is still refused: a search needs its reference', async () => {
    const response = await raw('GET', '/api/v1/transactions/search?search_reference=order_number&reference_number=', { authorization: basic(DEMO) })
    expect(response.status).toBe(422)
    expect(JSON.parse(response.body)).toMatchObject({ fields: { reference_number: 'is required' } })
  })
})

describe('public bank lists are readable cross-origin', () => {
  it('answers GET, HEAD and errors with Access-Control-Allow-Origin: *', async () => {
    for (const path of ['/public/v1/banks/b2c', '/public/v1/banks/b2b']) {
      const response = await fetch(`${emulator.baseUrl}${path}`, { headers: { origin: 'https://shop.example' } })
      expect(response.status).toBe(200)
      expect(response.headers.get('access-control-allow-origin')).toBe('*')
      const head = await fetch(`${emulator.baseUrl}${path}`, { method: 'HEAD' })
      expect(head.headers.get('access-control-allow-origin')).toBe('*')
    }
    const refused = await fetch(`${emulator.baseUrl}/public/v1/banks/b2c?status=busy`)
    expect(refused.status).toBe(422)
    expect(refused.headers.get('access-control-allow-origin')).toBe('*')
  })

  it('answers a preflight with 204 and the methods and headers it allows', async () => {
    const response = await fetch(`${emulator.baseUrl}/public/v1/banks/b2c`, {
      method: 'OPTIONS',
      headers: { origin: 'https://shop.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'x-requested-with' },
    })
    expect(response.status).toBe(204)
    expect(response.headers.get('access-control-allow-origin')).toBe('*')
    expect(response.headers.get('access-control-allow-methods')).toBe('GET, HEAD, OPTIONS')
    expect(response.headers.get('access-control-allow-headers')).toBe('x-requested-with')
  })

  it('keeps every other endpoint same-origin: the partner bank lists and the payment API send no CORS header', async () => {
    const partner = await fetch(`${emulator.baseUrl}/v1/banks/b2c`, { headers: { origin: 'https://shop.example' } })
    expect(partner.status).toBe(401)
    expect(partner.headers.get('access-control-allow-origin')).toBeNull()
    const preflight = await fetch(`${emulator.baseUrl}/v1/payments`, { method: 'OPTIONS' })
    expect(preflight.status).toBe(405)
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull()
  })
})

describe('what was normalised is reported, and strict mode refuses it', () => {
  interface Warning {
    source: string
    where: string
    exchange_number: string | null
    message: string
  }

  it('lists each normalised path and dropped empty value under /__emulator/warnings and in the log', async () => {
    await emulator.control('/reset', {})
    logged.length = 0
    expect((await raw('GET', '/api/public/v1//banks/b2c/?status=&x=1')).status).toBe(200)
    const { warnings } = (await (await emulator.control('/warnings')).json()) as { warnings: Warning[] }
    expect(warnings.map(({ source, where, exchange_number, message }) => ({ source, where, exchange_number, message }))).toEqual([
      { source: 'request', where: 'GET /public/v1/banks/b2c', exchange_number: null, message: 'query parameter "status" was empty; treated as absent' },
      { source: 'request', where: 'GET /public/v1/banks/b2c', exchange_number: null, message: 'path /api/public/v1//banks/b2c/ was read as /api/public/v1/banks/b2c' },
    ])
    expect(logged).toEqual(warnings.map((warning) => `fpx-collect emulator: warning: ${warning.message} (${warning.where})`))
    // A request that needed nothing normalised adds nothing.
    expect((await raw('GET', '/api/public/v1/banks/b2c?status=online')).status).toBe(200)
    expect(((await (await emulator.control('/warnings')).json()) as { warnings: Warning[] }).warnings).toHaveLength(2)
  })

  it('in strict mode, repeated and trailing slashes are 404 and an empty status is 422; CORS stays', async () => {
    const strict = await launch({ strict: true, log: () => {} })
    try {
      const get = (path: string) => fetch(`${strict.url}${path}`)
      expect((await get('/api/public/v1/banks/b2c')).status).toBe(200)
      expect((await get('/api/public/v1//banks/b2c')).status).toBe(404)
      expect((await get('/api/public/v1/banks/b2c/')).status).toBe(404)
      const empty = await get('/api/public/v1/banks/b2c?status=')
      expect(empty.status).toBe(422)
      expect(empty.headers.get('access-control-allow-origin')).toBe('*')
      expect(((await (await strict.control('/warnings')).json()) as { warnings: Warning[] }).warnings).toEqual([])
    } finally {
      await strict.stop()
    }
  })
})
