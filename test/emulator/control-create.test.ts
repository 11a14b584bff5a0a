/*
 * POST /__emulator/payments: a payment made for a tester with a configured merchant's credentials, which the
 * status and search API know and whose result the emulator signs and posts itself once completed.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { messageChecksum } from '../../src/core/result/checksum.js'
import { settled } from './delivery-merchant.js'
import { DEMO, type Emulator, launch } from './harness.js'

const OTHER = { uid: '11111111-2222-4333-8444-555555555555', authToken: 'OtherAuthToken000000', checksumToken: 'cd'.repeat(32) }
let emulator: Emulator
/** A callback_url that keeps each body it is posted and answers 200. */
const bodies: string[] = []
let server: Server
let callbackUrl: string

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      bodies.push(Buffer.concat(chunks).toString('utf8'))
      res.end('OK')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  callbackUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/fpx/callback`
  emulator = await launch({ delivery: { attempts: 1, timeoutMs: 2000 } })
})
afterAll(async () => {
  await emulator.stop()
  await new Promise<void>((resolve) => server.close(() => resolve()))
})

async function created(body: unknown, on: Emulator = emulator): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await on.control('/payments', body)
  return { status: response.status, json: (await response.json()) as Record<string, unknown> }
}

describe('POST /__emulator/payments', () => {
  it("makes a payment with the only merchant's credentials; the API knows it and its completed result is posted signed", async () => {
    const { status, json } = await created({ callback_url: callbackUrl })
    expect(status).toBe(201)
    expect(json).toMatchObject({ interface_uid: DEMO.uid, callback_url: callbackUrl, redirect_url: null, payment_status: false, fpx_model: 'B2C' })
    const exchangeNumber = json.exchange_number as string
    expect(json.order_number).toMatch(/^EMU-\d{10}$/)
    const searched = await emulator.get(`/v1/transactions/search?search_reference=exchange_number&reference_number=${exchangeNumber}`)
    expect(((await searched.json()) as unknown[]).length).toBe(1)

    await emulator.complete(exchangeNumber, 'approve')
    const [delivery] = await settled(emulator, exchangeNumber)
    expect(delivery?.state).toBe('delivered')
    expect(bodies).toHaveLength(1)
    const { checksum, ...fields } = Object.fromEntries(new URLSearchParams(bodies[0]))
    expect(messageChecksum(fields, DEMO.checksumToken)).toBe(checksum)
    expect(fields).toMatchObject({ exchange_number: exchangeNumber, payment_status: 'true', uid: DEMO.uid })
  })

  it('takes the request fields a tester sets, and B2B1 for a merchant with the module (pending approval then)', async () => {
    const { status, json } = await created({
      order_number: 'ORD-CONTROL-1',
      transaction_amount: '200',
      buyer_name: 'Tan Mei Ling',
      model: 'B2B1',
      redirect_url: 'http://127.0.0.1:9/fpx/redirect',
      params: { reference1: 'CART-9' },
    })
    expect(status).toBe(201)
    expect(json).toMatchObject({ order_number: 'ORD-CONTROL-1', transaction_amount: '200.00', buyer_name: 'Tan Mei Ling', fpx_model: 'B2B1', callback_url: null })
    const completion = await emulator.complete(json.exchange_number as string, 'pending')
    expect(completion).toMatchObject({ result: { fpx_debit_auth_code: '99', params: { reference1: 'CART-9' } }, callback: null })
  })

  it('refuses what it cannot make, naming each field', async () => {
    const refused = await created({ callback_url: 'ftp://shop.test/cb', buyer_email: 'nobody', model: 'B2B2', amount: '1.00', order_number: 7, params: ['x'] })
    expect(refused.status).toBe(422)
    expect(refused.json).toMatchObject({ code: 'invalid_parameters' })
    expect(Object.keys(refused.json.fields as object).sort()).toEqual(['amount', 'buyer_email', 'callback_url', 'model', 'order_number', 'params'])
    expect((await created({ uid: OTHER.uid })).json).toMatchObject({ fields: { uid: 'no merchant credential set has this API UID' } })
  })

  it('picks the merchant by uid when several are configured, and says so when none is named', async () => {
    const config = { merchants: [{ name: 'Demo', credentials: [DEMO] }, { name: 'Other', b2b1: false, credentials: [OTHER] }] }
    const two = await launch({ config })
    try {
      expect(await created({}, two)).toMatchObject({ status: 422, json: { fields: { uid: expect.stringContaining('2 merchants are configured') } } })
      expect(await created({ uid: OTHER.uid }, two)).toMatchObject({ status: 201, json: { interface_uid: OTHER.uid, merchant_name: 'Other' } })
      expect(await created({ uid: OTHER.uid, model: 'B2B1' }, two)).toMatchObject({ status: 422, json: { fields: { model: expect.stringContaining('B2B1 module') } } })
    } finally {
      await two.stop()
    }
  })
})
