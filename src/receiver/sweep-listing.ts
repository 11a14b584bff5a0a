/*
 * The sweeper's reading of the transactions list (GET /v1/transactions/list): the service's recent successes,
 * 100 to a page, in the Malaysian dates from the oldest open payment to today. One page shows a hundred paid
 * payments, where a lookup shows one order: a paid payment whose results were all lost is found in the first pages
 * however many unpaid ones are open. The sweeper (sweeper.ts) takes each page's turn under its rate bound and
 * hands the successes of open payments to the receiver.
 */
import { localTime } from '../core/time.js'
import type { LookupClient, SuccessesQuery } from './sweep-options.js'

/** The list's largest page (spec: per_page maximum 100). */
export const PER_PAGE = 100
/** The list's data search window (spec: 3 months, 90 days), both dates counted. */
const WINDOW_DAYS = 90
const DAY_MS = 86_400_000
/**
 * How far the service's created_at may stand before the book's createdAt of the same payment: the merchant's clock
 * and the service's differ, and a payment is recorded when created, not when the service stamps it.
 */
export const CLOCK_MARGIN_MS = 60 * 60_000

export type ListingClient = Required<Pick<LookupClient, 'transactions'>>

/** The Malaysian dates covering payments created since `since` (less the margin) up to `now`, at most 90 days. */
export function listWindow(since: Date, now: Date): { start_date: string; end_date: string } {
  const earliest = now.getTime() - (WINDOW_DAYS - 1) * DAY_MS
  const start = Math.max(since.getTime() - CLOCK_MARGIN_MS, earliest)
  return { start_date: localTime(new Date(start)).slice(0, 10), end_date: localTime(now).slice(0, 10) }
}

/** A record's creation time in epoch ms (created_at, else created_at_unixtime), or NaN when it has neither. */
function createdAt(record: Readonly<Record<string, unknown>>): number {
  const iso = typeof record.created_at === 'string' ? Date.parse(record.created_at) : NaN
  return Number.isNaN(iso) ? Number(record.created_at_unixtime ?? NaN) * 1000 : iso
}

/**
 * Whether a page reaches back past `since` less the margin: the pages after it in the walk's direction hold only
 * payments older still, none of them an open one.
 */
function reachesPast(records: readonly Record<string, unknown>[], since: Date): boolean {
  return records.some((record) => createdAt(record) < since.getTime() - CLOCK_MARGIN_MS)
}

/** Whether a page lists its payments oldest first (its first created before its last). */
function oldestFirst(records: readonly Record<string, unknown>[]): boolean {
  return records.length > 1 && createdAt(records[0] as Record<string, unknown>) < createdAt(records.at(-1) as Record<string, unknown>)
}

/** The successes of a page made with the credential set `uid` (interface_uid, when the record names one). */
export function successesOf(records: readonly Record<string, unknown>[], uid: string): Map<string, Record<string, unknown>[]> {
  const byOrder = new Map<string, Record<string, unknown>[]>()
  for (const record of records) {
    const orderNumber = record.order_number
    if (record.payment_status !== true || typeof orderNumber !== 'string' || orderNumber === '') continue
    if (record.interface_uid !== undefined && record.interface_uid !== null && record.interface_uid !== '' && record.interface_uid !== uid) continue
    byOrder.set(orderNumber, [...(byOrder.get(orderNumber) ?? []), record])
  }
  return byOrder
}

export interface ListingTurns {
  /** Waits for the next request's turn under the rate bound; false to stop (no pages left, the lock lost, stopping). */
  turn(): Promise<boolean>
  /** A page's records, as they came. */
  page(records: readonly Record<string, unknown>[]): Promise<void>
}

/**
 * Reads the successes created since `since`, newest first, while `turns` gives turns. The spec does not say in
 * which order the list comes: newest first (the emulator's) is read from page 1 on, oldest first from its last
 * page back; either stops at the page that reaches back past the oldest open payment.
 */
export async function listSuccesses(client: ListingClient, since: Date, turns: ListingTurns): Promise<void> {
  const window = listWindow(since, new Date())
  const read = async (page: number) => {
    if (!(await turns.turn())) return undefined
    const query: SuccessesQuery = { payment_status: true, per_page: PER_PAGE, page, ...window }
    const answer = await client.transactions(query)
    const records = answer.transactions as readonly Record<string, unknown>[]
    await turns.page(records)
    return { records, next: answer.next_page, last: answer.total_page }
  }
  const first = await read(1)
  if (first === undefined) return
  if (oldestFirst(first.records)) {
    for (let page = first.last; page > 1; page--) {
      const answer = await read(page)
      if (answer === undefined || reachesPast(answer.records, since)) return
    }
    return
  }
  for (let answer = first; answer.next !== null && !reachesPast(answer.records, since); ) {
    const next = await read(answer.next)
    if (next === undefined) return
    answer = next
  }
}
