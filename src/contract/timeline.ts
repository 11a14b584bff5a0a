import type { PaymentState } from '../core/payment.js'

/**
 * The per-order timeline: what happened to every delivery (and every inbox attempt) of a payment, kept by the
 * store for as long as it keeps handled states, and read by order_number or exchange_number.
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
 * - `dead_lettered`: the inbox gave up retrying after its last attempt;
 * - `created`: the merchant's client created the payment (read from the payment book, never stored twice);
 * - `lookup`: the sweeper asked the status API about the payment; `code` and `message` say what it showed;
 * - `abandoned`: the sweeper closed the payment after its horizon with no final result.
 */
export type TimelineEvent =
  | 'received'
  | 'refused'
  | 'verified'
  | 'duplicate'
  | 'stale'
  | 'busy'
  | 'handler_failed'
  | 'failed'
  | 'processed'
  /** Inbox mode: written to the inbox, the handlers run from there. */
  | 'queued'
  | 'dead_lettered'
  | 'created'
  | 'lookup'
  | 'abandoned'

/**
 * Where an attempt came from: a delivery, a reconciliation's API record, or a retry from the inbox; and for the
 * payment book's entries, the merchant's client (`created`) or the sweeper (`lookup`, `abandoned`).
 */
export type TimelineSource = 'callback' | 'redirect' | 'reconcile' | 'inbox' | 'client' | 'sweep'

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
  /** A short explanation (never a field value or a secret), else null. */
  readonly message: string | null
}

/** Which payment to read: by the merchant's order_number or by the service's exchange_number. */
export type TimelineQuery = ({ readonly orderNumber: string } | { readonly exchangeNumber: string }) & {
  /** The most entries to return (the latest ones, oldest first). Default 1000. */
  readonly limit?: number
}

export const DEFAULT_TIMELINE_LIMIT = 1000
/** Entries kept per order_number or exchange_number: a flood of forged deliveries cannot grow one without bound. */
export const MAX_TIMELINE_ENTRIES = 1000

/** Checks a query and says which key it names. Throws TypeError on anything else. */
export function timelineKey(query: TimelineQuery): { kind: 'order' | 'exchange'; value: string; limit: number } {
  const limit = query?.limit ?? DEFAULT_TIMELINE_LIMIT
  if (!(Number.isInteger(limit) && limit > 0)) throw new TypeError('limit must be a positive integer')
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
