import { createClient } from '../src/client/index.js'
import type { ReceiverPayments } from '../src/receiver/payments.js'

/*
 * Issue 36's sweeper case: many open payments nobody paid (any visitor who starts a checkout makes one) and one
 * paid whose redirect and callback were all lost. Shared by the test (test/receiver/sweeper-scale.test.ts) and the
 * measurement (soak/sweep-finds-paid.ts).
 */

export interface LostPaidOptions {
  /** The emulator's base URL (…/api) and its address (for the control API). */
  readonly baseUrl: string
  readonly url: string
  readonly credentials: { readonly uid: string; readonly authToken: string; readonly checksumToken: string }
  /** Where the merchant's client records what it creates: the receiver's book. */
  readonly book: Pick<ReceiverPayments, 'record'>
  readonly unpaid: number
  /** How long ago the book says they were created: older than the first lookup's wait, so every one is due. */
  readonly ageMs: number
  /** Leave the paid one unpaid until `pay()` is called. */
  readonly payLater?: boolean
}

export interface LostPaid {
  readonly unpaid: readonly string[]
  /** The paid one: created last, so it is the newest open payment (the last a lookup in age order reaches). */
  readonly paid: string
  readonly paidExchangeNumber: string
  /** The bank approves it and every result of it is lost: done already unless `payLater` was asked. */
  readonly pay: () => Promise<void>
}

/** A POST to the emulator's control API at `url`. */
export const control = async (url: string, path: string, body: unknown): Promise<void> => {
  const response = await fetch(`${url}/__emulator${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  if (!response.ok) throw new Error(`${path} answered ${response.status}: ${await response.text()}`)
  await response.arrayBuffer()
}

/** Creates the payments through the emulator's API with the merchant's client, and records them in the book. */
export async function lostPaid(options: LostPaidOptions): Promise<LostPaid> {
  const client = createClient({ environment: { baseUrl: options.baseUrl }, ...options.credentials, logger: false })
  const createdAt = new Date(Date.now() - options.ageMs)
  const tag = Math.random().toString(36).slice(2, 8)
  const create = async (orderNumber: string) => {
    const input = {
      order_number: orderNumber,
      buyer_name: 'Nur Aisyah binti Ahmad',
      buyer_email: 'aisyah@example.com',
      buyer_phone: '+60123456789',
      transaction_amount: '100.20',
      product_description: 'Two kilos of coffee beans',
      callback_url: 'http://127.0.0.1:9/fpx/callback',
    }
    const created = await client.createPayment(input)
    await options.book.record({ orderNumber, amountSen: 10_020, uid: options.credentials.uid, kind: 'payment', createdAt, exchangeNumber: created.exchangeNumber, attached: {} })
    return created.exchangeNumber as string
  }
  const unpaid = Array.from({ length: options.unpaid }, (_, i) => `OPEN-${tag}-${String(i).padStart(5, '0')}`)
  // Ten at a time: the emulator and the book take them as a busy shop would make them.
  for (let i = 0; i < unpaid.length; i += 10) await Promise.all(unpaid.slice(i, i + 10).map(create))
  const paid = `PAID-${tag}`
  const paidExchangeNumber = await create(paid)
  const pay = async () => {
    await control(options.url, '/faults', { lose_results: 1 })
    await control(options.url, `/payments/${paidExchangeNumber}/complete`, { outcome: 'approve' })
    await control(options.url, '/faults', { lose_results: 0 })
  }
  if (options.payLater !== true) await pay()
  return { unpaid, paid, paidExchangeNumber, pay }
}
