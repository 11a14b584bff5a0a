/**
 * What the operator commands on the payment book (payments, timeline) share: the flags naming the store, its book
 * (looked for, never created), and a payment's timeline by order_number or exchange_number.
 */
import type { PaymentBook } from '../contract/payment-book.js'
import type { TimelineEntry, TimelineQuery } from '../contract/timeline.js'
import type { FlagSpec } from './args.js'
import { type OpenedStore, StoreUnreachable } from './store-url.js'

export const URL_ENV = 'FPX_STORE_URL'

export const STORE_FLAGS: Record<string, FlagSpec> = { url: { type: 'string' }, table: { type: 'string' }, prefix: { type: 'string' } }

/** The store's payment book; StoreUnreachable when it keeps none (or, in PostgreSQL, its table was never made). */
export async function bookOf(opened: OpenedStore): Promise<PaymentBook> {
  if (opened.table !== undefined) {
    // The store would create a missing table; an operator's command must not, so it looks first.
    const { bookTable } = await import('../stores/postgres/payment-book-schema.js')
    const name = bookTable(opened.table).sql
    if (!(await opened.exists(name))) throw new StoreUnreachable(`there is no payment book table ${name} in this database (no client has recorded a payment in it yet)`)
  }
  const book = typeof opened.store.paymentBook === 'function' ? opened.store.paymentBook() : undefined
  if (book === undefined) throw new StoreUnreachable('this store keeps no payment book')
  return book
}

/**
 * The timeline of `value` as an order_number, else (when it has none, and `asOrder` is not set) as an
 * exchange_number, with the query that found it; none where the store keeps no timeline.
 */
export async function readTimeline(opened: OpenedStore, value: string, asOrder = false): Promise<{ query: TimelineQuery; entries: TimelineEntry[] }> {
  const byOrder: TimelineQuery = { orderNumber: value }
  if (typeof opened.store.readTimeline !== 'function') return { query: byOrder, entries: [] }
  if (opened.table !== undefined) {
    const { timelineTable } = await import('../stores/postgres/timeline.js')
    if (!(await opened.exists(timelineTable(opened.table).sql))) return { query: byOrder, entries: [] }
  }
  const entries = await opened.store.readTimeline(byOrder)
  if (entries.length > 0 || asOrder) return { query: byOrder, entries }
  const byExchange: TimelineQuery = { exchangeNumber: value }
  const exchanged = await opened.store.readTimeline(byExchange)
  return exchanged.length > 0 ? { query: byExchange, entries: exchanged } : { query: byOrder, entries }
}
