import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startEmulator } from '../../src/emulator/index.js'
import { DEMO, type Emulator, launch, PARTNER } from './harness.js'

let emulator: Emulator

beforeAll(async () => {
  emulator = await launch()
})
afterAll(() => emulator.stop())

describe('startEmulator', () => {
  it('listens on loopback with a base URL ending in /api', () => {
    expect(emulator.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    expect(emulator.baseUrl).toBe(`${emulator.url}/api`)
  })

  it('seeds the demo merchant of the examples and a partner with a partner_uid', () => {
    const [merchant] = emulator.state.setup.merchants
    expect(merchant?.credentials[0]).toMatchObject({ uid: DEMO.uid, authToken: DEMO.authToken, checksumToken: DEMO.checksumToken })
    expect(emulator.state.setup.partners[0]?.partnerUids).toEqual([PARTNER.partnerUid])
  })

  it('generates credentials in the shapes of the spec for configured merchants', async () => {
    const other = await startEmulator({ config: { merchants: [{ name: 'Kedai A', credentials: [{}, { name: 'Second set' }] }] } })
    try {
      const sets = other.state.setup.merchants[0]?.credentials ?? []
      expect(sets).toHaveLength(2)
      for (const set of sets) {
        expect(set.uid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
        expect(set.authToken).toMatch(/^[A-Za-z0-9]{20}$/)
        expect(set.checksumToken).toMatch(/^[0-9a-f]{64}$/)
      }
      expect(sets[0]?.authToken).not.toBe(sets[1]?.authToken)
    } finally {
      await other.stop()
    }
  })

  it('refuses a configuration with a malformed Checksum Token', async () => {
    await expect(startEmulator({ config: { merchants: [{ name: 'X', credentials: [{ checksumToken: 'ABC' }] }] } })).rejects.toThrow(
      /64 lowercase hexadecimal/,
    )
  })

  it('refuses a partner linked to an unknown merchant', async () => {
    await expect(startEmulator({ config: { partners: [{ name: 'P', merchants: ['nobody'] }] } })).rejects.toThrow(/unknown merchant "nobody"/)
  })

  it('answers unknown paths with a JSON 404 and wrong methods with 405 and Allow', async () => {
    const unknown = await emulator.get('/v1/nothing')
    expect(unknown.status).toBe(404)
    expect(await unknown.json()).toMatchObject({ code: 'not_found' })
    const wrong = await emulator.get('/v1/merchants/validate')
    expect(wrong.status).toBe(405)
    expect(wrong.headers.get('allow')).toBe('POST')
  })
})

describe('POST /v1/merchants/validate', () => {
  it('confirms a credential set with its Checksum Token', async () => {
    const response = await emulator.postForm('/v1/merchants/validate', { checksum_token: DEMO.checksumToken })
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ credential: true, api_name: 'Demo API', merchant_name: 'Demo Merchant Sdn Bhd' })
  })

  it.each([
    ['a wrong Checksum Token', { checksum_token: 'ab'.repeat(32) }, DEMO],
    ['no Checksum Token', {}, DEMO],
    ['a wrong Auth Token', { checksum_token: DEMO.checksumToken }, { uid: DEMO.uid, authToken: 'WrongAuthToken000000' }],
  ])('answers 401 with error for %s', async (_case, fields, auth) => {
    const response = await emulator.postForm('/v1/merchants/validate', fields, auth)
    expect(response.status).toBe(401)
    const body = (await response.json()) as { error: string; code: string }
    // Word for word the service's documented answer (docs.securepay.my/api/validate).
    expect(body.error).toBe('Unauthorized. Invalid or expired token.')
    expect(body.code).toBe('unauthorized')
  })

  it('answers 401 without Basic auth', async () => {
    const response = await emulator.postForm('/v1/merchants/validate', { checksum_token: DEMO.checksumToken }, null)
    expect(response.status).toBe(401)
  })
})

interface BankList {
  VerifySign: boolean
  category: string
  model: string
  mode: string
  fpx_bankList: { name: string; code: string; status_format1: string; status_format2: boolean }[]
}

describe('public bank lists', () => {
  it.each([
    ['/public/v1/banks/b2c', 'B2C'],
    ['/public/v1/banks/b2b', 'B2B1'],
  ])('%s is a verified bank list object', async (path, model) => {
    const response = await emulator.get(path, null)
    expect(response.status).toBe(200)
    const list = (await response.json()) as BankList
    expect(list).toMatchObject({ VerifySign: true, category: 'fpx', model, mode: 'staging' })
    expect(list.fpx_bankList.length).toBeGreaterThan(1)
    for (const bank of list.fpx_bankList) {
      expect(bank.status_format2).toBe(bank.status_format1 === 'online')
      expect(typeof bank.code).toBe('string')
    }
  })

  it('filters by status', async () => {
    const online = (await (await emulator.get('/public/v1/banks/b2c?status=online', null)).json()) as BankList
    const offline = (await (await emulator.get('/public/v1/banks/b2c?status=offline', null)).json()) as BankList
    expect(online.fpx_bankList.every((bank) => bank.status_format1 === 'online')).toBe(true)
    expect(offline.fpx_bankList.map((bank) => bank.code)).toEqual(['UOB0226'])
  })

  it('follows a bank taken offline through the control API', async () => {
    await emulator.control('/banks/b2c/MB2U0227', { status: 'offline' })
    const offline = (await (await emulator.get('/public/v1/banks/b2c?status=offline', null)).json()) as BankList
    expect(offline.fpx_bankList.map((bank) => bank.code)).toContain('MB2U0227')
    await emulator.control('/banks/b2c/MB2U0227', { status: 'online' })
  })

  it('says VerifySign false on every list once a tester turns it off, and true again after reset', async () => {
    const answer = await emulator.control('/bank-lists/verify-sign', { verify_sign: false })
    expect(answer.status).toBe(200)
    for (const [path, credentials] of [
      ['/public/v1/banks/b2c', null],
      ['/public/v1/banks/b2b', null],
      ['/v1/banks/b2c', PARTNER],
    ] as const) {
      expect(await (await emulator.get(path, credentials)).json()).toMatchObject({ VerifySign: false })
    }
    await emulator.control('/reset', {})
    expect(await (await emulator.get('/public/v1/banks/b2c', null)).json()).toMatchObject({ VerifySign: true })
  })

  it('refuses a verify-sign switch that is not a boolean', async () => {
    const answer = await emulator.control('/bank-lists/verify-sign', { verify_sign: 'no' })
    expect(answer.status).toBe(422)
  })

  it('refuses an unknown status with 422 and the field', async () => {
    const response = await emulator.get('/public/v1/banks/b2c?status=sleeping', null)
    expect(response.status).toBe(422)
    expect(await response.json()).toMatchObject({ code: 'invalid_parameters', fields: { status: expect.any(String) } })
  })
})

describe('partner bank lists', () => {
  it('serves partners both lists', async () => {
    for (const [path, model] of [
      ['/v1/banks/b2c', 'B2C'],
      ['/v1/banks/b2b1', 'B2B1'],
    ] as const) {
      const response = await emulator.get(path, PARTNER)
      expect(response.status).toBe(200)
      expect(await response.json()).toMatchObject({ VerifySign: true, model })
    }
  })

  it('answers 401 without or with wrong Basic auth', async () => {
    expect((await emulator.get('/v1/banks/b2c', null)).status).toBe(401)
    const wrong = await emulator.get('/v1/banks/b2c', { uid: PARTNER.uid, authToken: 'x'.repeat(20) })
    expect(wrong.status).toBe(401)
    expect(wrong.headers.get('www-authenticate')).toMatch(/^Basic/)
  })

  it('answers 403 to a merchant that is not a partner', async () => {
    const response = await emulator.get('/v1/banks/b2c', DEMO)
    expect(response.status).toBe(403)
    expect(await response.json()).toMatchObject({ code: 'not_partner' })
  })

  it('serves the B2B1 list only with the B2B1 module enabled', async () => {
    const other = await startEmulator({ config: { partners: [{ name: 'Small Partner', b2b1: false }] } })
    try {
      const credential = other.state.setup.partners[0]?.credentials[0]
      const authorization = `Basic ${Buffer.from(`${credential?.uid}:${credential?.authToken}`).toString('base64')}`
      const b2b1 = await fetch(`${other.baseUrl}/v1/banks/b2b1`, { headers: { authorization } })
      expect(b2b1.status).toBe(403)
      expect(await b2b1.json()).toMatchObject({ code: 'b2b1_not_enabled' })
      expect((await fetch(`${other.baseUrl}/v1/banks/b2c`, { headers: { authorization } })).status).toBe(200)
    } finally {
      await other.stop()
    }
  })
})
