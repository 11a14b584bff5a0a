import type { Outcome } from '../contract/delivery-result.js'
import { dayNumber, MAX_WINDOW_DAYS, type SearchReference, type Transaction, type TransactionsQuery } from './schemas.js'
import { FpxValidationError } from './errors.js'
import { apiRecordText, hasBankAnswer } from '../core/payment.js'

/**
 * The part of the client that reconciliation reads. Declared here, not taken from index.ts, so the module does not
 * import the client's entry point that re-exports it (an import cycle); any `FpxClient` fits.
 */
export interface ReconcileClient {
  readonly transactions: { all(query?: TransactionsQuery): AsyncGenerator<Transaction> }
  searchTransactions(reference: SearchReference, value: string): Promise<Transaction[]>
}

/** What reconciliation needs of the receiver (createReceiver's fits). */
export interface ReconcilingReceiver {
  handleTrusted(fields: Readonly<Record<string, string>>): Promise<{
    readonly outcome: Outcome
    readonly payment?: { readonly state: string }
    readonly error?: { readonly code: string; readonly message: string }
  }>
}

export interface ReconcileOptions {
  client: ReconcileClient
  /** The receiver that also takes the redirects and callbacks, so one store deduplicates all three paths. */
  receiver: ReconcilingReceiver
  /** First and last Malaysian calendar day (yyyy-mm-dd, or a Date taken in UTC+08:00), both included. */
  from: string | Date
  to: string | Date
  /** Orders to look up as well (every attempt at each), for payments outside the window or not yet listed. */
  orderNumbers?: readonly string[]
}

export interface ReconcileProblem {
  readonly exchangeNumber: string
  readonly orderNumber: string
  readonly outcome: Outcome
  readonly code: string | undefined
  readonly message: string | undefined
}

export interface ReconcileReport {
  /** Records read from the API (after removing repeats). */
  readonly examined: number
  /** Handlers ran for these: their result had been lost. */
  readonly processed: number
  /** Already handled (by a callback, a redirect or an earlier reconciliation). */
  readonly duplicate: number
  /** Older than a result already handled (a B2B1 99 after its 00). */
  readonly stale: number
  /** Written to the inbox of a receiver in inbox mode: its workers run the handlers (and find duplicates). */
  readonly queued: number
  /** No bank result yet: nothing to hand to the receiver. */
  readonly unfinished: number
  /** The receiver refused or failed: run the reconciliation again after fixing the cause. */
  readonly problems: readonly ReconcileProblem[]
  /** orderNumbers the API does not know. */
  readonly notFound: readonly string[]
}

const MYT_OFFSET_MS = 8 * 3_600_000
const DAY_MS = 86_400_000

function day(value: string | Date, field: string): number {
  const text = value instanceof Date ? new Date(value.getTime() + MYT_OFFSET_MS).toISOString().slice(0, 10) : value
  const number = typeof text === 'string' ? dayNumber(text) : undefined
  if (number === undefined) throw new FpxValidationError({ [field]: 'must be a Date or a real date written yyyy-mm-dd' }, { prefix: 'reconcile: invalid input' })
  return number
}

const dateText = (dayNo: number): string => new Date(dayNo * DAY_MS).toISOString().slice(0, 10)

/**
 * Walks the transactions list (payment_status all, in windows of at most 90 days) and the given orders, and
 * hands every settled record to the receiver, through the same classification and deduplication as a callback:
 * a payment whose callback and redirect were both lost runs its handlers once, one already handled does not.
 *
 * The records are trusted because they came over the authenticated API (Basic auth over TLS), not because of
 * a checksum: the API signs nothing. Handlers see them as `event.delivery === 'reconcile'`.
 */
export async function reconcile(options: ReconcileOptions): Promise<ReconcileReport> {
  const { client, receiver } = options
  const first = day(options.from, 'from')
  const last = day(options.to, 'to')
  if (last < first) throw new FpxValidationError({ to: 'must not be before from' }, { prefix: 'reconcile: invalid input' })
  const seen = new Set<string>()
  const counts = { examined: 0, processed: 0, duplicate: 0, stale: 0, queued: 0, unfinished: 0 }
  const problems: ReconcileProblem[] = []
  const notFound: string[] = []

  async function feed(record: Transaction): Promise<void> {
    // The same result can appear twice (pages shift as payments arrive; an order is also looked up by number).
    const key = `${record.exchange_number}|${String(record.payment_status)}|${record.fpx_debit_auth_code ?? ''}`
    if (seen.has(key)) return
    seen.add(key)
    counts.examined++
    if (!hasBankAnswer(record)) {
      counts.unfinished++
      return
    }
    const response = await receiver.handleTrusted(apiRecordText(record))
    const { outcome } = response
    if (outcome === 'processed' || outcome === 'duplicate' || outcome === 'stale' || outcome === 'queued') counts[outcome]++
    else
      problems.push({
        exchangeNumber: record.exchange_number,
        orderNumber: record.order_number,
        outcome: response.outcome,
        code: response.error?.code,
        message: response.error?.message,
      })
  }

  for (let start = first; start <= last; start += MAX_WINDOW_DAYS) {
    const end = Math.min(last, start + MAX_WINDOW_DAYS - 1)
    const query = { payment_status: 'all' as const, start_date: dateText(start), end_date: dateText(end) }
    for await (const record of client.transactions.all(query)) await feed(record)
  }
  for (const orderNumber of options.orderNumbers ?? []) {
    // Search, not status: only the list and search records carry fpx_debit_auth_code, which tells a B2B1
    // payment pending approval from a failed one, and search answers every attempt at the order.
    const records = await client.searchTransactions('order_number', orderNumber)
    if (records.length === 0) notFound.push(orderNumber)
    for (const record of records) await feed(record)
  }
  return { ...counts, problems, notFound }
}
