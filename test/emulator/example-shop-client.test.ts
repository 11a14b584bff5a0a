import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startExpressShop } from '../../examples/express/app.js'
import type { RunningShop } from '../../examples/shared/shop.js'
import { DEMO, type Emulator, launch } from './harness.js'

/**
 * The example shop's use of the client against the emulator: the checkout's bank list, the bank the buyer picks
 * there, a checkout that still works with the service down, and the Express shop's scheduled reconciliation
 * recovering a payment whose callback never came.
 */
let emulator: Emulator
let shop: RunningShop
const log: string[] = []

beforeAll(async () => {
  emulator = await launch()
  // Short, so the test waits for one run rather than the default quarter of an hour.
  shop = await startExpressShop({ config: { baseUrl: emulator.baseUrl, ...DEMO }, log: (line) => log.push(line), reconcileEveryMs: 50 })
})
afterAll(async () => {
  await shop.close()
  await emulator.stop()
})

function hiddenFields(html: string): Record<string, string> {
  const unescape = (text: string) => text.replace(/&#(\d+);/g, (_match, code: string) => String.fromCharCode(Number(code)))
  const fields: Record<string, string> = {}
  for (const found of html.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g)) fields[unescape(found[1] ?? '')] = unescape(found[2] ?? '')
  return fields
}

const BUYER = { name: 'Tan Mei Ling', email: 'mei@example.com', phone: '+60129876543', amount: '42.50', product: 'Teh tarik set' }

function checkout(url: string, extra: Record<string, string> = {}): Promise<Response> {
  return fetch(`${url}/checkout`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ ...BUYER, ...extra }),
  })
}

describe('the example shop with the client', () => {
  it('lists the banks on the checkout, choosing at the bank page by default, offline banks not selectable', async () => {
    const html = await (await fetch(`${shop.url}/`)).text()
    expect(html).toContain('<select name="bank">')
    expect(html).toMatch(/<option value="">Let me choose at the bank selection page<\/option>/)
    expect(html).toContain('<option value="MB2U0227">Maybank2U</option>')
    expect(html).toContain('<option value="UOB0226" disabled>UOB Bank (offline)</option>')
  })

  it('sends the chosen bank as buyer_bank_code, signed by the client, and the emulator accepts it', async () => {
    const fields = hiddenFields(await (await checkout(shop.url, { bank: 'MB2U0227' })).text())
    expect(fields).toMatchObject({ buyer_bank_code: 'MB2U0227', uid: DEMO.uid, transaction_amount: '42.50' })
    const created = await emulator.postForm('/v1/payments', fields, null)
    expect(created.status).toBe(200)
    await created.text()
    const exchangeNumber = created.headers.get('x-exchange-number') as string
    expect(emulator.state.payment(exchangeNumber)?.buyerBankCode).toBe('MB2U0227')
  })

  it('sends no buyer_bank_code by default, and refuses an offline bank with the form again', async () => {
    expect(hiddenFields(await (await checkout(shop.url)).text())).not.toHaveProperty('buyer_bank_code')
    const refused = await checkout(shop.url, { bank: 'UOB0226' })
    expect(refused.status).toBe(400)
    expect(await refused.text()).toContain('That bank cannot be used now')
  })

  it('recovers a paid order whose callback was held back, by the scheduled reconciliation', async () => {
    // Every callback postponed beyond the test: only the reconciliation can tell the shop.
    expect((await emulator.control('/faults', { delay_ms: 600_000 })).status).toBe(200)
    const fields = hiddenFields(await (await checkout(shop.url)).text())
    const created = await emulator.postForm('/v1/payments', fields, null)
    await created.text()
    await emulator.complete(created.headers.get('x-exchange-number') as string, 'approve')
    await expect.poll(() => shop.orders.get(fields.order_number ?? '')?.state, { timeout: 10_000 }).toBe('paid')
    expect(log.filter((line) => line.startsWith(`order ${fields.order_number} paid`))).toEqual([expect.stringContaining('(reconcile)')])
  })
})

describe('the example shop without the service', () => {
  it('still renders the checkout, with a note instead of the bank choice, and still takes the order', async () => {
    const closed = await startExpressShop({ config: { ...DEMO, baseUrl: 'http://127.0.0.1:9/api' }, log: () => {}, reconcileEveryMs: 0 })
    try {
      const page = await fetch(`${closed.url}/`)
      expect(page.status).toBe(200)
      const html = await page.text()
      expect(html).toContain('The list of banks could not be loaded')
      expect(html).not.toContain('<select')
      expect(hiddenFields(await (await checkout(closed.url)).text()).order_number).toMatch(/^ORD-/)
    } finally {
      await closed.close()
    }
  })
})
