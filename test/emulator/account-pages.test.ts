import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEMO, type Emulator, launch } from './harness.js'

let emulator: Emulator

beforeAll(async () => {
  emulator = await launch()
})
afterAll(() => emulator.stop())

/** The addresses from the control API's record of a payment (the same fields status, list and search answer). */
async function addresses(exchangeNumber: string): Promise<Record<'status_url' | 'retry_url' | 'receipt_url', string | null>> {
  return (await (await emulator.control(`/payments/${exchangeNumber}`)).json()) as Record<'status_url' | 'retry_url' | 'receipt_url', string | null>
}

function withUid(address: string, uid: string | null): string {
  const url = new URL(address)
  if (uid === null) url.searchParams.delete('uid')
  else url.searchParams.set('uid', uid)
  return url.toString()
}

describe('receipt_url (its content: receipt-pdf.test.ts)', () => {
  it('answers 404 JSON for a wrong or missing uid, a failed payment and an unknown exchange number', async () => {
    const paid = await emulator.pay()
    await emulator.complete(paid, 'approve')
    const { receipt_url } = await addresses(paid)
    const failed = await emulator.pay()
    await emulator.complete(failed, 'reject')
    const wrong = [
      withUid(receipt_url!, '00000000-0000-4000-8000-000000000000'),
      withUid(receipt_url!, null),
      `${emulator.baseUrl}/v1/receipt/${failed}.pdf?uid=${DEMO.uid}`,
      `${emulator.baseUrl}/v1/receipt/ABCDE0000000000.pdf?uid=${DEMO.uid}`,
    ]
    for (const address of wrong) {
      const response = await fetch(address)
      expect(response.status, address).toBe(404)
      expect(((await response.json()) as { code: string }).code).toBe('not_found')
    }
  })
})

describe('status_url', () => {
  it('shows the outcome, with links to the receipt or to a retry', async () => {
    const paid = await emulator.pay({ order_number: 'ORD-STATUS-OK' })
    await emulator.complete(paid, 'approve')
    const okPage = await (await fetch((await addresses(paid)).status_url!)).text()
    expect(okPage).toContain('Payment successful')
    expect(okPage).toContain('ORD-STATUS-OK')
    expect(okPage).toContain('id="receipt"')
    expect(okPage).not.toContain('id="retry"')

    const failed = await emulator.pay()
    await emulator.complete(failed, 'cancel')
    const failedPage = await (await fetch((await addresses(failed)).status_url!)).text()
    expect(failedPage).toContain('Payment unsuccessful')
    expect(failedPage).toContain('id="retry"')

    const waiting = await emulator.pay()
    expect(await (await fetch((await addresses(waiting)).status_url!)).text()).toContain('Waiting for the bank')
  })

  it('answers 404 for another uid', async () => {
    const exchangeNumber = await emulator.pay()
    const response = await fetch(withUid((await addresses(exchangeNumber)).status_url!, 'someone'))
    expect(response.status).toBe(404)
  })
})

describe('retry_url', () => {
  it('makes a new attempt for the same order on POST and continues to the bank page', async () => {
    const failed = await emulator.pay({ order_number: 'ORD-RETRY-1', transaction_amount: '42.00' })
    await emulator.complete(failed, 'reject')
    const { retry_url } = await addresses(failed)
    const before = ((await (await emulator.control('/payments')).json()) as { payments: unknown[] }).payments.length

    const page = await fetch(retry_url!)
    expect(page.status).toBe(200)
    expect(await page.text()).toContain('ORD-RETRY-1')
    const afterGet = ((await (await emulator.control('/payments')).json()) as { payments: unknown[] }).payments.length
    expect(afterGet).toBe(before)

    const post = () => fetch(retry_url!, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' })
    const response = await post()
    expect(response.status).toBe(303)
    const attempt = response.headers.get('x-exchange-number')!
    expect(attempt).not.toBe(failed)
    expect(response.headers.get('location')).toBe(`${emulator.baseUrl}/pay/${attempt}`)
    const record = (await (await emulator.control(`/payments/${attempt}`)).json()) as Record<string, unknown>
    expect(record).toMatchObject({ order_number: 'ORD-RETRY-1', transaction_amount: '42.00', payment_stage: 'payment_pending' })

    await emulator.complete(attempt, 'approve')
    const again = await post()
    expect(again.status).toBe(409)
  })

  it('refuses a payment that did not fail, and a wrong uid', async () => {
    const paid = await emulator.pay()
    const { merchant_reference_number } = (await (await emulator.control(`/payments/${paid}`)).json()) as Record<string, string>
    await emulator.complete(paid, 'approve')
    expect((await fetch(`${emulator.baseUrl}/v1/retry/${merchant_reference_number}?uid=${DEMO.uid}`)).status).toBe(409)
    expect((await fetch(`${emulator.baseUrl}/v1/retry/${merchant_reference_number}?uid=other`)).status).toBe(404)
  })
})
