import { randomId } from '../core/crypto.js'
import type { Logger } from '../core/logger.js'
import type { VerifiedPayment } from '../core/result/verify.js'
import type { DeliveryResult } from '../contract/delivery-result.js'
import type { ReceiverStore } from '../contract/store.js'
import { type TimelineEntry, type TimelineEvent, type TimelineQuery, type TimelineSource, timelineKey } from '../contract/timeline.js'
import { answeredWithin } from './dispatch.js'
import type { RefusalLog } from './refusals.js'

/**
 * The receiver's side of the timeline: entries are queued and written to the store in batches after the answer
 * went out, so a delivery never waits for the store. A failed write is logged, never thrown.
 */

// Entries waiting while the store cannot take them: past this, the newest are dropped (and the drop logged).
const MAX_QUEUED = 10_000
// A batch this large is written at once rather than at the next timer: a loop of deliveries that never yields to
// timers (reconciliation over the memory store) would otherwise fill the queue.
const BATCH = 500
// The most one write carries, whatever piled up while the store was busy: one script or statement each.
const MOST_PER_WRITE = 2 * BATCH
// Entries wait this long for others to share their write. A round trip to the store costs the receiver more than
// the entries it carries, nobody reads a timeline this soon after a delivery, and flush() writes at once.
const WRITE_AFTER_MS = 200

export class TimelineRecorder {
  private queue: TimelineEntry[] = []
  private writing: Promise<void> = Promise.resolve()
  private scheduled = false
  /** Whether a write is chained that has not started: it takes whatever is queued by then. */
  private waiting = false
  private tag: string | undefined
  private attempts = 0
  private dropped = 0
  /** Entries queued or being written. */
  private pending = 0

  constructor(
    private readonly store: Pick<ReceiverStore<unknown>, 'appendTimeline' | 'readTimeline'>,
    private readonly logger: Logger,
    private readonly off: boolean,
    /** How long one write may take: what a delivery's store call may. */
    private readonly withinMs: number,
  ) {}

  /** Whether the store keeps a timeline at all. */
  get enabled(): boolean {
    return !this.off && typeof this.store.appendTimeline === 'function'
  }

  /** A new id grouping one delivery's (or inbox attempt's) entries. */
  nextAttempt(): string {
    return `${(this.tag ??= randomId().slice(0, 8))}-${++this.attempts}`
  }

  /** Queues entries; they reach the store within WRITE_AFTER_MS, in a batch. */
  record(entries: readonly TimelineEntry[]): void {
    if (!this.enabled || entries.length === 0) return
    if (this.pending + entries.length > MAX_QUEUED) this.dropped += entries.length
    else {
      this.queue.push(...entries)
      this.pending += entries.length
    }
    if (this.queue.length >= BATCH) void this.flush()
    else if (!this.scheduled) {
      this.scheduled = true
      setTimeout(() => {
        this.scheduled = false
        void this.flush()
      }, WRITE_AFTER_MS)
    }
  }

  /** Writes everything queued so far; resolves once it is written (or the failure logged). Never rejects. */
  flush(): Promise<void> {
    if (this.dropped > 0) {
      this.logger.error({ dropped: this.dropped }, `dropped ${this.dropped} timeline entries: the store could not keep up`)
      this.dropped = 0
    }
    if (this.queue.length === 0 || this.waiting) return this.writing
    this.waiting = true
    this.writing = this.writing.then(() => {
      this.waiting = false
      return this.write()
    })
    return this.writing
  }

  /**
   * One write at a time, of everything queued when it starts: entries that arrive while the store is busy with the
   * last batch go together in the next, so a busy receiver makes one store round trip for many deliveries rather
   * than one each.
   */
  private async write(): Promise<void> {
    const queued = this.queue
    this.queue = []
    for (let from = 0; from < queued.length; from += MOST_PER_WRITE) {
      const batch = queued.slice(from, from + MOST_PER_WRITE)
      try {
        // Bounded: writes are chained, so one the store never answered held every later one, and flush() and
        // receiver.close() with them, for ever. Past the bound its batch is counted lost, as when the write fails.
        if (this.store.appendTimeline !== undefined) await answeredWithin(this.store.appendTimeline(batch), this.withinMs)
      } catch (error) {
        this.logger.error({ err: error, entries: batch.length }, `the store failed to record ${batch.length} timeline entries; they are lost`)
      } finally {
        this.pending -= batch.length
      }
    }
  }

  /** One payment's timeline: the store's entries, after writing what is queued, with this process's refusals. */
  async read(query: TimelineQuery, refusals: RefusalLog): Promise<TimelineEntry[]> {
    if (this.off) throw new TypeError('no timeline is kept: the receiver was created with timeline: false')
    if (typeof this.store.readTimeline !== 'function')
      throw new TypeError(
        'this store keeps no timeline: it has no readTimeline(); the memory, Redis and PostgreSQL stores have one, ' +
          'and a custom store can add appendTimeline() and readTimeline() (see ReceiverStore)',
      )
    await this.flush()
    const stored = await this.store.readTimeline(query)
    const refused = refusals.entriesFor(query)
    if (refused.length === 0) return stored
    // Within one millisecond, this receiver's own entries keep the order it numbered its attempts in.
    const sequence = (entry: TimelineEntry) => (this.tag !== undefined && entry.attempt.startsWith(`${this.tag}-`) ? Number(entry.attempt.slice(this.tag.length + 1)) : -1)
    const merged = [...stored, ...refused].sort((a, b) => a.at.getTime() - b.at.getTime() || sequence(a) - sequence(b))
    return merged.slice(-timelineKey(query).limit)
  }
}

/** The event that ends a delivery or an inbox attempt, from the receiver's answer. */
export function closingEvent(response: Pick<DeliveryResult, 'outcome' | 'error'>): TimelineEvent {
  switch (response.outcome) {
    case 'processed':
    case 'duplicate':
    case 'stale':
    case 'busy':
    case 'queued':
      return response.outcome
    case 'rejected':
      return 'refused'
    case 'failed':
      return response.error?.code === 'handler_failed' ? 'handler_failed' : 'failed'
  }
}

/** One verified delivery (or inbox attempt) as it happened. */
export interface DeliveryRecord {
  readonly source: TimelineSource
  readonly attempt: string
  readonly receivedAt: number
  readonly verifiedAt: number
  readonly answeredAt: number
  /** The payment it was filed under: as handled (the API's record, when confirmed), else as delivered. */
  readonly payment: Pick<VerifiedPayment, 'exchangeNumber' | 'orderNumber' | 'state'>
  readonly response: DeliveryResult
  /** Why a handler failed, as the book keeps it (dispatch.ts failureOf: the result's values taken out), when one did. */
  readonly failure?: string
}

/**
 * An entry's message: the receiver's, and for a handler failure why the handler failed (its error's name and
 * message, the result's values taken out, as the payment book keeps it), so the operator reads why.
 */
function entryMessage(response: Pick<DeliveryResult, 'error'>, failure: string | undefined): string | null {
  const error = response.error
  if (error === undefined) return null
  const base = error.diagnosis === undefined ? error.message : `${error.message}. Diagnosis: ${error.diagnosis.summary}`
  return error.code === 'handler_failed' && failure !== undefined && failure !== '' ? `${base}. ${failure}` : base
}

/** What one verified delivery adds to its payment's timeline: received, verified, then its outcome. */
export function deliveryEntries(record: DeliveryRecord): TimelineEntry[] {
  const { payment, response } = record
  const common = {
    exchangeNumber: payment.exchangeNumber,
    orderNumber: payment.orderNumber,
    state: payment.state,
    source: record.source,
    attempt: record.attempt,
    verified: true,
  }
  const error = response.error
  const message = entryMessage(response, record.failure)
  return [
    { ...common, at: new Date(record.receivedAt), event: 'received', code: null, status: null, message: null },
    { ...common, at: new Date(record.verifiedAt), event: 'verified', code: null, status: null, message: null },
    { ...common, at: new Date(record.answeredAt), event: closingEvent(response), code: error?.code ?? null, status: response.status, message },
  ]
}

/** What one inbox attempt adds: its outcome, and `dead_lettered` when it was the last. */
export function inboxAttemptEntries(
  verified: VerifiedPayment,
  answer: Pick<DeliveryResult, 'outcome' | 'error'> & { readonly failure?: string },
  dead: boolean,
  attempt: string,
): TimelineEntry[] {
  const at = new Date()
  const code = answer.error?.code ?? null
  const entry = (event: TimelineEvent, message: string | null): TimelineEntry => ({
    at,
    event,
    exchangeNumber: verified.exchangeNumber,
    orderNumber: verified.orderNumber,
    state: verified.state,
    source: 'inbox',
    attempt,
    verified: true,
    code,
    status: null,
    message,
  })
  const entries = [entry(closingEvent(answer), entryMessage(answer, answer.failure))]
  if (dead) entries.push(entry('dead_lettered', 'no attempts left; retry it with receiver.inbox.retry() or fpx-collect inbox retry'))
  return entries
}
