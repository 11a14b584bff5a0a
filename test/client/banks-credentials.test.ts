import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { FpxApiError, FpxAuthenticationError, FpxValidationError } from '../../src/client/index.js'
import { countingFetch, demoClient, DEMO, type Emulator, launch, memoryLogger, PARTNER, PARTNER_CHECKSUM } from './helpers.js'

let emulator: Emulator
beforeAll(async () => {
  emulator = await launch()
})
afterAll(() => emulator.stop())
beforeEach(async () => {
  await emulator.control('/reset', {})
})

describe('validateCredentials', () => {
  it('answers the credential set and merchant for valid credentials', async () => {
    const result = await demoClient(emulator).validateCredentials()
    expect(result).toMatchObject({ credential: true, merchant_name: 'Demo Merchant Sdn Bhd', api_name: 'Demo API' })
  })

  it('throws FpxAuthenticationError for a wrong Checksum Token, with no secret in the message', async () => {
    const wrong = 'cd'.repeat(32)
    const error = await demoClient(emulator, { checksumToken: wrong }).validateCredentials().catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(FpxAuthenticationError)
    expect((error as FpxAuthenticationError).status).toBe(401)
    expect((error as Error).message).not.toContain(wrong)
    expect((error as Error).message).not.toContain(DEMO.authToken)
  })

  it('throws FpxAuthenticationError for a wrong Auth Token and is not retried (401 is final)', async () => {
    const counting = countingFetch()
    const client = demoClient(emulator, { authToken: 'WrongAuthToken000000', fetch: counting.fetch, maxRetries: 3 })
    await expect(client.validateCredentials()).rejects.toBeInstanceOf(FpxAuthenticationError)
    expect(counting.calls).toHaveLength(1)
  })
})

describe('Basic auth on the other endpoints', () => {
  it('answers FpxAuthenticationError for every Basic-auth endpoint with a wrong Auth Token, each sent once', async () => {
    const counting = countingFetch()
    const client = demoClient(emulator, { authToken: 'WrongAuthToken000000', fetch: counting.fetch })
    const calls = [
      () => client.transactions(),
      () => client.searchTransactions('order_number', 'A-1'),
      () => client.paymentStatus('A-1'),
      () => client.paymentStatusByReference('R-1'),
      () => client.createPaymentSession({ transaction_amount: '1.00' }),
    ]
    for (const call of calls) {
      const error = await call().catch((caught: unknown) => caught)
      expect(error).toBeInstanceOf(FpxAuthenticationError)
      expect((error as Error).message).not.toContain('WrongAuthToken000000')
    }
    expect(counting.calls).toHaveLength(calls.length)
  })
})

describe('bank lists', () => {
  it('reads the public B2C list, and filters it by status', async () => {
    await emulator.control('/banks/b2c/MB2U0227', { status: 'offline' })
    const client = demoClient(emulator)
    const all = await client.publicBanks('b2c')
    expect(all.verified).toBe(true)
    expect(all.model).toBe('B2C')
    expect(all.banks.find((bank) => bank.code === 'MB2U0227')).toEqual({ code: 'MB2U0227', name: 'Maybank2U', online: false })
    const online = await client.publicBanks('b2c', { status: 'online' })
    expect(online.banks.length).toBe(all.banks.filter((bank) => bank.online).length)
    expect(online.banks.every((bank) => bank.online)).toBe(true)
    const offline = await client.publicBanks('b2c', { status: 'offline' })
    expect(offline.banks.map((bank) => bank.code)).toContain('MB2U0227')
    expect(offline.banks.every((bank) => !bank.online)).toBe(true)
  })

  it('reads the public corporate list', async () => {
    const list = await demoClient(emulator).publicBanks('b2b')
    expect(list.model).toBe('B2B1')
    expect(list.banks.length).toBeGreaterThan(0)
  })

  it('reads the partner lists with partner credentials', async () => {
    const partner = demoClient(emulator, { uid: PARTNER.uid, authToken: PARTNER.authToken, checksumToken: PARTNER_CHECKSUM })
    expect((await partner.partnerBanks('b2c')).banks.length).toBeGreaterThan(0)
    expect((await partner.partnerBanks('b2b1', { status: 'online' })).model).toBe('B2B1')
  })

  it('answers FpxApiError 403 when a merchant asks for a partner list', async () => {
    const error = await demoClient(emulator).partnerBanks('b2c').catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(FpxApiError)
    expect(error).toMatchObject({ status: 403, code: 'not_partner' })
  })

  it('drops a list that says VerifySign false, and logs it', async () => {
    await emulator.control('/bank-lists/verify-sign', { verify_sign: false })
    const { lines, logger } = memoryLogger()
    const client = demoClient(emulator, { logger })
    const list = await client.publicBanks('b2c')
    expect(list).toMatchObject({ verified: false, banks: [] })
    const partner = demoClient(emulator, { uid: PARTNER.uid, authToken: PARTNER.authToken, checksumToken: PARTNER_CHECKSUM, logger })
    expect((await partner.partnerBanks('b2b1')).banks).toEqual([])
    expect(lines.filter((line) => line.includes('VerifySign'))).toHaveLength(2)
    await emulator.control('/bank-lists/verify-sign', { verify_sign: true })
    expect((await client.publicBanks('b2c')).banks.length).toBeGreaterThan(0)
  })

  it('refuses an unknown status or model before any request', async () => {
    const counting = countingFetch()
    const client = demoClient(emulator, { fetch: counting.fetch })
    const status = await client.publicBanks('b2c', { status: 'busy' as 'online' }).catch((caught: unknown) => caught)
    expect(status).toBeInstanceOf(FpxValidationError)
    expect((status as FpxValidationError).fields).toHaveProperty('status')
    const model = await client.partnerBanks('b2b' as 'b2b1').catch((caught: unknown) => caught)
    expect((model as FpxValidationError).fields).toHaveProperty('model')
    expect(counting.calls).toEqual([])
  })
})
