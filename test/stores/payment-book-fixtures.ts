import { randomUUID } from 'node:crypto'
import type { ReceiverStore } from '../../src/index.js'
import type { CreatedPayment, PaymentBook, SweepLock } from '../../src/contract/payment-book.js'

/* What the payment book contract, the sweep lock contract and the stores' own book tests share. */

/** Opens a store on a space of its own, or on `space` when given (another process on the same book). */
export type OpenSpace = (
  space?: string,
  options?: { retentionMs?: number },
) => Promise<{ book: PaymentBook; lock: SweepLock; store: ReceiverStore<unknown>; space: string }>

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
export const MINUTE = 60_000

/** The credential set the fixtures' payments are recorded under. */
export const UID = 'c6b5f1c4-0000-4000-8000-000000000001'
/** A fixture payment's reference in the book. */
export const ref = (orderNumber: string, uid = UID) => ({ orderNumber, uid })

/** A payment as the client would record it: a fresh order_number, created now, unless `overrides` say otherwise. */
export const createdPayment = (overrides: Partial<CreatedPayment> = {}): CreatedPayment => ({
  orderNumber: `ORD-${randomUUID()}`,
  amountSen: 10_020,
  uid: UID,
  kind: 'form',
  createdAt: new Date(),
  exchangeNumber: null,
  attached: { cart: 'C-1', items: 3, gift: false, note: null, 'a key with spaces': 'ünïcode ✓' },
  ...overrides,
})
