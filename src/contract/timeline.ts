import type { PaymentState } from '../core/payment.js'
import { RESULT_SOURCES } from './delivery-result.js'

/**
 * The per-order timeline: what happened to every delivery (and every inbox attempt) of a payment, kept by the
 * store and read by order_number or exchange_number. The receiver writes it after answering, in batches, and
 * never writes refused deliveries (anyone can send them: receiver/refusals.ts keeps the latest in memory).
 *
 * When a store may forget a payment's timeline, the same for every store:
 * - an entry is kept at least `retentionMs` after it was written (the store's retention of handled states, 30 days
 *   by default); a store may keep it longer, until the payment itself is forgotten;
 * - a store with a bound on the payments it keeps (the memory store's maxEntries) may forget a payment's timeline
 *   earlier, once that many payments have been written after it (the memory store caps its timeline's keys at the
 *   same number);
 * - at least the latest MAX_TIMELINE_ENTRIES entries of each exchange_number and order_number are kept (older ones
 *   may go, and beyond twice that of one exchange_number they do), and a read returns at most that many.
 */

/**
 * - `received`: a delivery arrived (its first step, always followed by `verified` or `refused`);
 * - `refused`: it was turned away before its checksum matched (or its fields were invalid); `code` says why;
 * - `verified`: its checksum matched and its fields are valid;
 * - `duplicate` / `stale`: acknowledged without running handlers (handled already / a later state was);
 * - `busy`: another process held the payment; answered 409 for a retry;
 * - `handler_failed`: a handler threw; answered 500 for a redelivery (or retried from the inbox);
 * - `failed`: the store failed, the lease was lost, or something unexpected happened; `code` says which;
 * - `processed`: the handlers ran and the state was recorded;
 * - `queued`: inbox mode wrote it to the inbox; the handlers run from there;
 * - `dead_lettered`: the inbox gave up retrying after its last attempt;
 * - `created`: the merchant's client created the payment (read from the payment book, never stored twice);
 * - `lookup`: the sweeper asked the status API about the payment; `code` and `message` say what it showed;
 * - `abandoned`: the sweeper closed the payment after its horizon with no final result;
 * - `looked_up`: an operator had the payment looked up now (the console's "look up now"); `message` says who and what
 *   the status API showed (the hand-over that follows has entries of its own, source `reconcile`);
 * - `retried`: an operator made the payment's inbox entry due now (the console's retry); `message` says who.
 */
export const TIMELINE_EVENTS = [
  'received',
  'refused',
  'verified',
  'duplicate',
  'stale',
  'busy',
  'handler_failed',
  'failed',
  'processed',
  'queued',
  'dead_lettered',
  'created',
  'lookup',
  'abandoned',
  'looked_up',
  'retried',
] as const
export type TimelineEvent = (typeof TIMELINE_EVENTS)[number]

/**
 * Where an attempt came from: a delivery, a reconciliation's API record, or a retry from the inbox; for the
 * payment book's entries, the merchant's client (`created`) or the sweeper (`lookup`, `abandoned`); and an
 * operator's action in the console (`looked_up`, `retried`).
 */
export const TIMELINE_SOURCES = [...RESULT_SOURCES, 'inbox', 'client', 'sweep', 'console'] as const
export type TimelineSource = (typeof TIMELINE_SOURCES)[number]

export interface TimelineEntry {
  readonly at: Date
  readonly event: TimelineEvent
  readonly exchangeNumber: string | null
  readonly orderNumber: string | null
  readonly state: PaymentState | null
  readonly source: TimelineSource
  /** Groups the entries of one delivery or inbox attempt. */
  readonly attempt: string
  /**
   * False when `exchangeNumber` and `orderNumber` were read from a message that was refused: anyone could have
   * sent it, so they say what the message claimed, not what the service sent.
   */
  readonly verified: boolean
  /** The error code of a refusal or failure (`checksum_mismatch`, `handler_failed`, ...), else null. */
  readonly code: string | null
  /** The HTTP status answered, when the entry ends a delivery; else null. */
  readonly status: number | null
  /**
   * A short explanation (never a field value or a secret), else null. For `handler_failed`, it ends with why the
   * handler failed: its error's name and message on one line, every value of the result taken out, as the payment
   * book keeps it (receiver/dispatch.ts, failureOf).
   */
  readonly message: string | null
}

/** Which payment to read: by the merchant's order_number or by the service's exchange_number. */
export type TimelineQuery = ({ readonly orderNumber: string } | { readonly exchangeNumber: string }) & {
  /** The most entries to return (the latest ones, oldest first). Default and most: 1000 (MAX_TIMELINE_ENTRIES). */
  readonly limit?: number
}

/**
 * The timeline's limit, the same in every store: a read returns at most this many entries (the latest); a store
 * keeps at least the latest this many of each exchange_number and of each order_number, and at most twice as many of
 * each exchange_number, so that no payment's timeline grows without bound, however many deliveries name it.
 */
export const MAX_TIMELINE_ENTRIES = 1000

/**
 * Checks a query and says which key it names, with the most entries to return (its limit, at most
 * MAX_TIMELINE_ENTRIES). Throws TypeError on anything else. Every store reads through it.
 */
export function timelineKey(query: TimelineQuery): { kind: 'order' | 'exchange'; value: string; limit: number } {
  const given = query?.limit ?? MAX_TIMELINE_ENTRIES
  if (!(Number.isInteger(given) && given > 0)) throw new TypeError('limit must be a positive integer')
  const limit = Math.min(given, MAX_TIMELINE_ENTRIES)
  const order = (query as { orderNumber?: unknown } | null)?.orderNumber
  const exchange = (query as { exchangeNumber?: unknown } | null)?.exchangeNumber
  if (typeof order === 'string' && order !== '' && exchange === undefined) return { kind: 'order', value: order, limit }
  if (typeof exchange === 'string' && exchange !== '' && order === undefined) return { kind: 'exchange', value: exchange, limit }
  throw new TypeError('timeline needs an order number, or { orderNumber } or { exchangeNumber } (one of them, non-empty)')
}

/** Entries as plain JSON (dates as epoch milliseconds), for stores that keep them as text. */
export function entryToJson(entry: TimelineEntry): string {
  return JSON.stringify({ ...entry, at: entry.at.getTime() })
}

export function entryFromJson(text: string): TimelineEntry {
  const raw = JSON.parse(text) as Omit<TimelineEntry, 'at'> & { at: number }
  return { ...raw, at: new Date(raw.at) }
}

/** Oldest first; entries of one instant keep the order they were written in (Array.prototype.sort is stable). */
export function byTime(entries: TimelineEntry[]): TimelineEntry[] {
  return entries.sort((a, b) => a.at.getTime() - b.at.getTime())
}
