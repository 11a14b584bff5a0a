/*
 * What a durable store provides for inbox mode: a queue of verified payment results, one entry per
 * (exchange_number, state), taken by workers under a lease, retried with backoff, dead-lettered after too many
 * attempts. The PostgreSQL and Redis stores implement it (src/stores/postgres/inbox.ts, src/stores/redis/inbox.ts);
 * the memory store does not, because an inbox that a restart empties would lose exactly what it promises to keep.
 */
import type { Rendering } from '../core/result/message.js'
import { PAYMENT_STATES, type PaymentState } from '../core/payment.js'
import type { ResultSource } from './delivery-result.js'

/** `pending`: waiting for (or in) an attempt; `dead`: gave up after maxAttempts, until an operator retries it. */
export type InboxStatus = 'pending' | 'dead'

/** The states an exchange_number can have entries for: every payment state, one entry each. */
export const INBOX_STATES: readonly PaymentState[] = PAYMENT_STATES

/** A verified result as written to the inbox: every field as received, and the rendering its checksum matched. */
export interface InboxEntry {
  readonly exchangeNumber: string
  readonly state: PaymentState
  readonly source: ResultSource
  readonly orderNumber: string | null
  /** JSON text of the fields (kept as text so that their order survives the round trip). */
  readonly fields: string
  readonly rendering: Rendering
  /**
   * JSON text of who signed the result, as verification found it (the credential set's uid and how it was
   * matched), so that a result read back is filed under the same order as one handled at once; absent in entries
   * written before it was kept, and for API records without one.
   */
  readonly signer?: string
}

/** An entry a worker took: it holds the lease until it finishes or fails it. */
export interface TakenEntry extends InboxEntry {
  /** Attempts so far, this one included. */
  readonly attempts: number
  readonly owner: string
}

/** What an operator sees of an entry. */
export interface InboxItem {
  /** `exchange_number:state`, the same as the handlers' event.id. */
  readonly id: string
  readonly exchangeNumber: string
  readonly state: PaymentState
  readonly source: ResultSource
  readonly orderNumber: string | null
  readonly status: InboxStatus
  readonly attempts: number
  readonly receivedAt: Date
  /** When the next attempt is due (pending), or when it was dead-lettered (dead). */
  readonly nextAttemptAt: Date | null
  /** Until when a worker holds it, while an attempt runs. */
  readonly leasedUntil: Date | null
  readonly lastError: string | null
}

export interface InboxListQuery {
  status?: InboxStatus
  orderNumber?: string
  /**
   * At most this many, oldest first, in the order they arrived: within one millisecond too on Redis (its arrival
   * counter) and PostgreSQL (microseconds); PGlite's clock counts milliseconds, so there entries of one
   * millisecond come by exchange_number. Default 100.
   */
  limit?: number
}

/** One entry (both parts given), every state of an exchange_number, or every dead-lettered entry. */
export type InboxRetryTarget = { exchangeNumber: string; state?: PaymentState } | { allDead: true }

export interface FailOutcome {
  /** What went wrong, for operators (truncated by the queue). */
  readonly error: string
  /** When pending: the delay before the next attempt. */
  readonly delayMs: number
  readonly dead: boolean
  /** The attempt did not count (the payment was busy elsewhere): attempts goes back down by one. */
  readonly refund?: boolean
}

/** fail()'s answer: a boolean as before, so existing callers keep working; 'revived' only when it did not dead-letter as asked. */
export type FailResult = boolean | 'revived'

export interface InboxQueue {
  /** Creates the table (PostgreSQL) if missing; nothing for Redis. */
  ready(): Promise<void>
  /** 'queued', or 'present' when this (exchange_number, state) is in the inbox already (pending or dead). */
  enqueue(entry: InboxEntry): Promise<'queued' | 'present'>
  /**
   * Leases up to `limit` due entries to `owner` for `leaseMs`, counting an attempt on each. The entries of one
   * exchange_number are taken in the order they arrived: one waits while an earlier one is pending (not while it
   * is dead), and while a higher state that arrived no later is in the inbox at all (dead included), so a 99
   * never runs after the 00 that arrived before it, exactly as with direct deliveries in that order.
   */
  take(owner: string, limit: number, leaseMs: number): Promise<TakenEntry[]>
  /** Removes the entry: it was handled (or found already handled). False when `owner` no longer holds it. */
  finish(entry: TakenEntry): Promise<boolean>
  /**
   * Gives the entry back for a later attempt, or dead-letters it. False when `owner` no longer holds it; true when
   * done as asked; 'revived' when asked to dead-letter an entry that was delivered again while this attempt ran
   * (retry() reset its attempts below this entry's): it is given back pending, due now, since the sender was
   * answered 200 for that delivery and no attempt has run since.
   */
  fail(entry: TakenEntry, outcome: FailOutcome): Promise<FailResult>
  list(query?: InboxListQuery): Promise<InboxItem[]>
  /** The entries of one exchange_number (at most one per state), with their fields. */
  show(exchangeNumber: string): Promise<(InboxItem & { fields: Record<string, unknown> })[]>
  /**
   * Makes the targets due now (dead ones pending again, attempts back to 0); says how many. A leased entry stays
   * leased and is not counted, but its attempts go back to 0 too, as do those of an entry whose worker has not
   * reported since its lease ran out: that attempt may have started before the result was delivered again, so if
   * it was the last allowed and fails, fail() gives the entry back instead of dead-lettering it (see fail). An
   * entry whose lease ran out is not leased (list() shows no leasedUntil): it is made due and counted, whether or
   * not a take() has looked at it since. An absent target counts nothing.
   */
  retry(target: InboxRetryTarget): Promise<number>
  /**
   * Makes due now every pending entry that waits out a backoff after a failed attempt (leased and dead ones are
   * left alone, as is one due already that waits only behind an earlier state of its payment); says how many. The inbox calls it when the handlers work again (see InboxOptions.resumeOnRecovery).
   */
  hasten(): Promise<number>
  counts(): Promise<{ pending: number; dead: number }>
}

export const MAX_ERROR_LENGTH = 1000

export function errorText(text: string): string {
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH - 1)}…` : text
}

export function parseFields(text: string): Record<string, unknown> {
  const value = JSON.parse(text) as unknown
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('the inbox entry holds no fields object')
  return value as Record<string, unknown>
}
