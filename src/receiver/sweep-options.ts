/*
 * The sweeper's settings: when an open payment is first looked up, how the lookups of one payment back off, when
 * the sweeper gives up, and how hard it may press the status API. Defaults and their reasons are in
 * docs/payment-lifecycle.md. Also what a pass reports, and what it asks of the API client (kept here so that
 * sweeper.ts stays the sweeper's logic).
 */
import type { PaymentBook, SweepLock } from '../contract/payment-book.js'

export interface SweepOptions {
  /** How old a payment is at its first lookup: the buyer may still be at the bank before that. Default 15 minutes. */
  firstLookupAfterMs?: number
  /** The wait between lookups of one payment: baseMs after the first, doubling, at most maxMs. Default 5 min → 1 h. */
  backoff?: { baseMs?: number; maxMs?: number }
  /**
   * A payment still without a bank answer this long after it was created is closed as `abandoned` (after one last
   * lookup). Default 24 hours.
   */
  abandonAfterMs?: number
  /**
   * A B2B1 payment still pending approval (99) this long after it was created is closed as `abandoned`. Default 8
   * days: FPX B2B gives the corporate approver up to 7 days.
   */
  pendingAbandonAfterMs?: number
  /** Status API lookups per minute, at most, across every process sharing the store. Default 30. */
  maxLookupsPerMinute?: number
  /** How often the in-process sweeper wakes up to look for payments due. Default 30 s. */
  everyMs?: number
  /** The sweep lock's lease; renewed while the sweeper holds it. Default 60 s. */
  lockMs?: number
  /** The most payments one pass takes from the book (oldest first). Default 500. */
  batch?: number
  /**
   * Lookups handed over at once: each still starts its turn under maxLookupsPerMinute, but a slow API or store no
   * longer holds the next one back. Default 4.
   */
  concurrency?: number
  /**
   * Sweep in this process, on a timer (unref'd: it never keeps the process alive), whenever the receiver has the API
   * client and the store a payment book. `false`: only when you call `receiver.sweep()` (or run `fpx-collect sweep`).
   * Default true.
   */
  inProcess?: boolean
}

export interface SweepSettings {
  readonly firstLookupAfterMs: number
  readonly backoff: { readonly baseMs: number; readonly maxMs: number }
  readonly abandonAfterMs: number
  readonly pendingAbandonAfterMs: number
  readonly maxLookupsPerMinute: number
  readonly everyMs: number
  readonly lockMs: number
  readonly batch: number
  readonly concurrency: number
  readonly inProcess: boolean
}

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

export const DEFAULT_SWEEP: SweepSettings = {
  firstLookupAfterMs: 15 * MINUTE,
  backoff: { baseMs: 5 * MINUTE, maxMs: HOUR },
  abandonAfterMs: DAY,
  pendingAbandonAfterMs: 8 * DAY,
  maxLookupsPerMinute: 30,
  everyMs: 30_000,
  lockMs: MINUTE,
  batch: 500,
  concurrency: 4,
  inProcess: true,
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback
  if (!(Number.isInteger(value) && value > 0)) throw new TypeError(`sweep.${name} must be a positive integer`)
  return value
}

/** The settings with defaults filled in; throws TypeError naming the option that is wrong. */
export function sweepSettings(options: SweepOptions | false | undefined): SweepSettings {
  if (options === false) return { ...DEFAULT_SWEEP, inProcess: false }
  const given = options ?? {}
  if (typeof given !== 'object' || given === null) throw new TypeError('sweep must be an object of options, or false')
  const baseMs = positive(given.backoff?.baseMs, DEFAULT_SWEEP.backoff.baseMs, 'backoff.baseMs')
  const maxMs = positive(given.backoff?.maxMs, Math.max(DEFAULT_SWEEP.backoff.maxMs, baseMs), 'backoff.maxMs')
  if (maxMs < baseMs) throw new TypeError('sweep.backoff.maxMs must be at least backoff.baseMs')
  const settings: SweepSettings = {
    firstLookupAfterMs: positive(given.firstLookupAfterMs, DEFAULT_SWEEP.firstLookupAfterMs, 'firstLookupAfterMs'),
    backoff: { baseMs, maxMs },
    abandonAfterMs: positive(given.abandonAfterMs, DEFAULT_SWEEP.abandonAfterMs, 'abandonAfterMs'),
    pendingAbandonAfterMs: positive(given.pendingAbandonAfterMs, DEFAULT_SWEEP.pendingAbandonAfterMs, 'pendingAbandonAfterMs'),
    maxLookupsPerMinute: positive(given.maxLookupsPerMinute, DEFAULT_SWEEP.maxLookupsPerMinute, 'maxLookupsPerMinute'),
    everyMs: positive(given.everyMs, DEFAULT_SWEEP.everyMs, 'everyMs'),
    lockMs: positive(given.lockMs, DEFAULT_SWEEP.lockMs, 'lockMs'),
    batch: positive(given.batch, DEFAULT_SWEEP.batch, 'batch'),
    concurrency: positive(given.concurrency, DEFAULT_SWEEP.concurrency, 'concurrency'),
    inProcess: given.inProcess !== false,
  }
  if (settings.abandonAfterMs < settings.firstLookupAfterMs) throw new TypeError('sweep.abandonAfterMs must be at least firstLookupAfterMs')
  // The in-process sweeper keeps the lock between passes, renewed at each wake-up once a third of the lease has
  // passed (and every quarter of it during a pass): a wait longer than half the lease could let it lapse between
  // them, and another process take over mid-minute with a rate count of its own.
  if (settings.inProcess && settings.everyMs > settings.lockMs / 2) throw new TypeError('sweep.everyMs must be at most half of sweep.lockMs')
  return settings
}

/** What the sweeper asks of the payment book. */
export type SweepBook = Pick<PaymentBook, 'listOpen' | 'summary' | 'find' | 'noteLookup' | 'settle'>
/** What the sweeper asks of the sweep lock. */
export type SweepLockCalls = Pick<SweepLock, 'acquire' | 'renew' | 'release' | 'notePass'>

/** One page of the transactions list as the sweeper asks for it: recent successes, 100 to a page. */
export interface SuccessesQuery {
  readonly payment_status: true
  readonly per_page: number
  readonly page: number
  readonly start_date: string
  readonly end_date: string
}

/**
 * What the sweeper asks of the API client (`createClient()` fits): every attempt at an order, and the list of
 * recent transactions. A client without `transactions` is swept by lookups alone.
 */
export interface LookupClient {
  searchTransactions(reference: 'order_number', value: string): Promise<readonly object[]>
  transactions?(query: SuccessesQuery): Promise<{ readonly transactions: readonly object[]; readonly next_page: number | null; readonly total_page: number }>
}

/** An order the pass could not settle, and why (never a field value); orderNumber null for the transactions list. */
export interface SweepFailure {
  readonly orderNumber: string | null
  readonly message: string
}

/** What one pass did. */
export interface SweepReport {
  /** False when another process holds the sweep lock: this pass did nothing. */
  readonly swept: boolean
  /** Open payments due for a lookup when the pass began (at most `batch`). */
  readonly due: number
  /** Pages of the transactions list read (recent successes), each an API request like a lookup. */
  readonly listed: number
  /** Open payments the transactions list showed paid: handed to the receiver without a lookup. */
  readonly found: number
  /** Status API lookups made. */
  readonly lookups: number
  /** Results the pass found that ran handlers (their redirect and callback had been lost). */
  readonly processed: number
  /** Payments found final (handled now or before): closed. */
  readonly closed: number
  /** Payments closed as abandoned: past their horizon with no final result. */
  readonly abandoned: number
  /** Looked up and still open (no bank answer yet, pending approval, or a result not taken): looked up again later. */
  readonly open: number
  /** Found final (or found in the list) when their turn came: not looked up. */
  readonly skipped: number
  /** Lookups and list pages the API did not answer, and results the receiver refused or failed to handle. */
  readonly failures: number
  /** Each failure: the order it concerns and its message. */
  readonly failing: readonly SweepFailure[]
}

export type Counts = { -readonly [K in Exclude<keyof SweepReport, 'failing'>]: SweepReport[K] } & { readonly failing: SweepFailure[] }

export function nothing(swept: boolean): Counts {
  return { swept, due: 0, listed: 0, found: 0, lookups: 0, processed: 0, closed: 0, abandoned: 0, open: 0, skipped: 0, failures: 0, failing: [] }
}
