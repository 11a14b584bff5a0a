import { randomBytes } from 'node:crypto'
import type { RawDelivery } from '../core/result/body.js'
import { DEFAULT_MAX_BODY_BYTES, readFields } from '../core/result/body.js'
import type { Logger } from '../core/logger.js'
import type { VerifiedPayment } from '../core/result/verify.js'
import type { ReceiverStore } from '../contract/store.js'
import { detached } from '../contract/detached.js'
import { byTime, type TimelineEntry, type TimelineEvent, type TimelineQuery, type TimelineSource, timelineKey } from '../contract/timeline.js'
import type { DeliveryResult } from '../contract/delivery-result.js'
import { DeliveryTrace, type TraceAppender, traceAppender } from '../contract/delivery-trace.js'
import { RECENT_REFUSALS, RefusalLog } from './refusals.js'

/**
 * The receiver's side of the timeline: entries are queued and written to the store in batches after the answer
 * went out (write-behind), so a delivery never waits for the store. A failed write is logged, never thrown.
 */

// Entries waiting while the store cannot take them: past this, the oldest are dropped (and the drop logged).
const MAX_QUEUED = 10_000
// A batch is written as soon as it is this big, without waiting for the event loop to come round. Small: deliveries
// handled back to back (a burst, or a loop awaiting handle()) never let the event loop come round, and a queued
// trace outliving a young-generation GC is copied by it, with the body its numbers are views of when they are a
// duplicate's (500 made a duplicate's GC copy ~380 bytes a delivery, 32 ~140); the store's look-ups of a payment
// just completed also find its entry still in the CPU's caches. A batch costs a few hundred ns however small.
const BATCH = 32

export class TimelineRecorder {
  // A verified delivery is queued as its small trace, made as it is answered (so the queue keeps no message alive).
  // Traces become entries when written, for stores that want them.
  private queue: (TimelineEntry | DeliveryTrace | DeliveryRecord)[] = []
  // Refused deliveries never reach the store (refusals.ts): the latest wait here, as they are, to be read off the
  // answer's path into the refusal log. Only as many as the log keeps: older ones would be pushed out anyway.
  private refusedQueue: DeliveryRecord[] = []
  private scheduled = false
  private writing: Promise<void> = Promise.resolve()
  private readonly tag = randomBytes(4).toString('hex')
  private attempts = 0
  private dropped = 0
  /** Entries handed to the store and not yet written. */
  private pending = 0

  constructor(
    private readonly store: Pick<ReceiverStore<unknown>, 'appendTimeline' | 'readTimeline'>,
    private readonly logger: Logger,
    private readonly off = false,
    private readonly maxBodyBytes = DEFAULT_MAX_BODY_BYTES,
    readonly refusals = new RefusalLog(),
  ) {}

  /** Whether the store keeps a timeline at all. */
  get enabled(): boolean {
    return !this.off && typeof this.store.appendTimeline === 'function'
  }

  /** A new id grouping one delivery's (or inbox attempt's) entries. */
  nextAttempt(): string {
    return `${this.tag}-${this.nextAttemptNumber()}`
  }

  /** The counter part of a new attempt id: a delivery's trace keeps it and joins it to the tag when read. */
  nextAttemptNumber(): number {
    return ++this.attempts
  }

  /**
   * Queues entries (for example `dead_lettered` from the inbox, with `nextAttempt()` as their attempt); they
   * reach the store shortly, in a batch.
   */
  record(entries: readonly TimelineEntry[]): void {
    if (!this.enabled || entries.length === 0) return
    for (const entry of entries) this.enqueue(entry)
  }

  /**
   * Queues what one delivery adds to the timeline. A verified one becomes its small trace at once, so the queue
   * does not keep the whole message alive until the batch is written. A refused one never reaches the store: it
   * waits, as it is, for its body to be read off the answer's path, into the refusal log.
   */
  recordDelivery(delivery: DeliveryRecord): void {
    if (!this.enabled) return
    if (delivery.verified === undefined) {
      this.refusedQueue.push(delivery)
      if (this.refusedQueue.length > 2 * RECENT_REFUSALS) this.refusedQueue = this.refusedQueue.slice(-RECENT_REFUSALS)
      this.schedule()
      return
    }
    // No trace is built for a queue that will drop it: a store that stopped answering costs the answers nothing more.
    this.enqueue(this.full() ? delivery : (deliveryTrace(delivery, this.tag, this.maxBodyBytes) as DeliveryTrace))
  }

  /** Past the bound (a store that stopped answering), the newest are dropped: cheaper than shifting the oldest. */
  private full(): boolean {
    return this.queue.length + this.pending >= MAX_QUEUED
  }

  private enqueue(item: TimelineEntry | DeliveryTrace | DeliveryRecord): void {
    if (this.full()) this.dropped++
    else this.queue.push(item)
    // Still after the answer: flush() runs once the delivery's own answer has been returned.
    if (this.queue.length >= BATCH) queueMicrotask(this.flushNow)
    else this.schedule()
  }

  private readonly flushNow = (): void => void this.flush()

  private schedule(): void {
    if (!this.scheduled) {
      this.scheduled = true
      setImmediate(() => {
        this.scheduled = false
        void this.flush()
      })
    }
  }

  /** Writes everything queued so far; resolves once it is written (or the failure logged). Never rejects. */
  flush(): Promise<void> {
    this.keepRefusals()
    if (this.dropped > 0) {
      this.logger.error({ dropped: this.dropped }, `dropped ${this.dropped} timeline records: the store could not keep up`)
      this.dropped = 0
    }
    if (this.queue.length === 0) return this.writing
    const batch = this.queue
    this.queue = []
    // A store in this process takes the batch at once, unless an earlier write is still under way.
    const local = this.pending === 0 ? traceAppender(this.store) : undefined
    if (local !== undefined) {
      this.writeHere(local, batch)
      return this.writing
    }
    this.pending += batch.length
    this.writing = this.writing.then(() => this.write(batch))
    return this.writing
  }

  /** Reads the numbers the queued refusals claim and keeps them in the refusal log. */
  keepRefusals(): void {
    const refused = this.refusedQueue
    if (refused.length === 0) return
    this.refusedQueue = []
    for (const record of refused.slice(-RECENT_REFUSALS)) {
      const trace = deliveryTrace(record, this.tag, this.maxBodyBytes, true)
      if (trace !== undefined) this.refusals.keep(trace)
    }
  }

  /** The batch as the store takes it: traces whole for a store that keeps them (`traces`), their entries otherwise. */
  private itemsOf(batch: (TimelineEntry | DeliveryTrace | DeliveryRecord)[], traces: boolean): { items: (TimelineEntry | DeliveryTrace)[]; entries: number } {
    const items: (TimelineEntry | DeliveryTrace)[] = []
    let entries = 0
    for (const item of batch) {
      let trace: DeliveryTrace | undefined
      if (item instanceof DeliveryTrace) trace = item
      else if ('response' in item) trace = deliveryTrace(item, this.tag, this.maxBodyBytes)
      else {
        items.push(item)
        entries++
        continue
      }
      if (trace === undefined) continue
      entries += trace.size
      if (traces) items.push(trace)
      else for (const entry of trace.entries()) items.push(entry)
    }
    return { items, entries }
  }

  private writeHere(append: TraceAppender, batch: (TimelineEntry | DeliveryTrace | DeliveryRecord)[]): void {
    let entries = 0
    try {
      const made = this.itemsOf(batch, true)
      entries = made.entries
      if (made.items.length > 0) append(made.items)
    } catch (error) {
      this.failed(error, entries)
    }
  }

  private async write(batch: (TimelineEntry | DeliveryTrace | DeliveryRecord)[]): Promise<void> {
    const appendTraces = traceAppender(this.store)
    let entries = 0
    try {
      const { items, entries: count } = this.itemsOf(batch, appendTraces !== undefined)
      entries = count
      if (items.length > 0) {
        if (appendTraces !== undefined) appendTraces(items)
        else await this.store.appendTimeline?.(items as TimelineEntry[])
      }
    } catch (error) {
      this.failed(error, entries)
    } finally {
      this.pending -= batch.length
    }
  }

  private failed(error: unknown, entries: number): void {
    this.logger.error({ err: error, entries }, `the store failed to record ${entries} timeline entries; they are lost`)
  }

  /** Reads one payment's timeline, after writing what this process still has queued. */
  async read(query: TimelineQuery): Promise<TimelineEntry[]> {
    if (this.off) throw new TypeError('no timeline is kept: the receiver was created with timeline: false')
    if (typeof this.store.readTimeline !== 'function')
      throw new TypeError(
        'this store keeps no timeline: it has no readTimeline(); the memory, Redis and PostgreSQL stores have one, ' +
          'and a custom store can add appendTimeline() and readTimeline() (see ReceiverStore)',
      )
    await this.flush()
    const stored = await this.store.readTimeline(query)
    const refused = this.refusals.entriesFor(query)
    if (refused.length === 0) return stored
    // The merge keeps the latest `limit`, as the store's own read does.
    return this.merged(stored, byTime(refused)).slice(-timelineKey(query).limit)
  }

  /**
   * The store's entries and the refusals', both oldest first, in one list. Entries of one millisecond are ordered by
   * this receiver's attempt sequence when both are its own (a refusal answered in the millisecond the next delivery
   * arrived comes first); the store's go first otherwise, as the store wrote them.
   */
  private merged(stored: readonly TimelineEntry[], refused: readonly TimelineEntry[]): TimelineEntry[] {
    const merged: TimelineEntry[] = []
    let i = 0
    let j = 0
    while (i < stored.length && j < refused.length) {
      const [a, b] = [stored[i] as TimelineEntry, refused[j] as TimelineEntry]
      const gap = a.at.getTime() - b.at.getTime()
      const later = gap > 0 || (gap === 0 && this.sequence(a) > this.sequence(b))
      merged.push(later ? b : a)
      if (later) j++
      else i++
    }
    for (; i < stored.length; i++) merged.push(stored[i] as TimelineEntry)
    for (; j < refused.length; j++) merged.push(refused[j] as TimelineEntry)
    return merged
  }

  /** The attempt sequence of one of this receiver's entries (nextAttemptNumber); -1 for another process's. */
  private sequence(entry: TimelineEntry): number {
    const prefix = `${this.tag}-`
    return entry.attempt.startsWith(prefix) ? Number(entry.attempt.slice(prefix.length)) : -1
  }
}

function orderNumberOf(verified: VerifiedPayment): string | null {
  try {
    // The raw text: building the typed view for the timeline alone would cost more than the rest of a duplicate.
    return verified.orderNumber
  } catch {
    return null
  }
}

/**
 * The order_number as a string of its own (contract/detached.ts): the field's text is a view of the delivery's body,
 * and a trace waiting in the queue (up to a batch of them while deliveries come back to back) kept each whole body
 * alive through every young-generation GC it met. A store in this process keeps the number for the retention anyway,
 * so the copy is made once, here, instead of when the store takes the trace.
 */
function keptOrderNumber(verified: VerifiedPayment): string | null {
  const orderNumber = orderNumberOf(verified)
  return orderNumber === null ? null : detached(orderNumber)
}

// What an unverified message may put in the timeline: printable ASCII, no longer than the service's numbers.
const PLAIN_NUMBER = /^[\x20-\x7e]{1,64}$/

/**
 * The exchange_number and order_number a refused delivery claims, if its body can be read at all. Never
 * trusted: they are stored with `verified: false`.
 */
export function claimedNumbers(delivery: RawDelivery, maxBodyBytes: number): { exchangeNumber: string | null; orderNumber: string | null } {
  try {
    const fields = readFields(delivery, maxBodyBytes)
    const text = (name: string): string | null => {
      const at = fields.names.indexOf(name)
      const value = at < 0 ? undefined : fields.value(at)
      return typeof value === 'string' && PLAIN_NUMBER.test(value) ? value : null
    }
    return { exchangeNumber: text('exchange_number'), orderNumber: text('order_number') }
  } catch {
    return { exchangeNumber: null, orderNumber: null }
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

export interface DeliveryRecord {
  source: TimelineSource
  /** From nextAttemptNumber(). */
  attempt: number
  receivedAt: number
  verifiedAt: number
  answeredAt: number
  verified: VerifiedPayment | undefined
  /** For a refused delivery: the delivery, to read the numbers its body claims. */
  refused: RawDelivery | undefined
  response: DeliveryResult
}

/**
 * What one delivery adds to its payment's timeline (received, then verified or refused, then the outcome), as one
 * record; undefined when there is nothing to file it under.
 */
export function deliveryTrace(record: DeliveryRecord, attemptTag: string, maxBodyBytes: number, unnamed = false): DeliveryTrace | undefined {
  const { verified, response } = record
  const claimed = verified === undefined && record.refused !== undefined ? claimedNumbers(record.refused, maxBodyBytes) : undefined
  // Nothing to file it under: a refusal whose body names no payment is only logged (and kept if `unnamed`).
  if (!unnamed && verified === undefined && claimed?.exchangeNumber == null && claimed?.orderNumber == null) return undefined
  return new DeliveryTrace(
    verified?.exchangeNumber ?? claimed?.exchangeNumber ?? null,
    verified === undefined ? (claimed?.orderNumber ?? null) : keptOrderNumber(verified),
    verified?.state ?? null,
    record.source,
    attemptTag,
    record.attempt,
    verified !== undefined,
    record.receivedAt,
    record.verifiedAt,
    record.answeredAt,
    closingEvent(response),
    response.error?.code ?? null,
    response.status,
    timelineMessage(response),
  )
}

/** The closing entry's message: the error's, and for a refused checksum its diagnosis (never the sender's to see). */
function timelineMessage(response: DeliveryResult): string | null {
  const error = response.error
  if (error === undefined) return null
  return error.diagnosis === undefined ? error.message : `${error.message}. Diagnosis: ${error.diagnosis.summary}`
}

/** What one attempt from the inbox adds: its outcome, and `dead_lettered` when it was the last. */
export function inboxAttemptEntries(
  verified: VerifiedPayment,
  answer: Pick<DeliveryResult, 'outcome' | 'error'>,
  dead: boolean,
  attempt: string,
): TimelineEntry[] {
  const at = new Date()
  const code = answer.error?.code ?? null
  const entry = (event: TimelineEvent, message: string | null): TimelineEntry => ({
    at,
    event,
    exchangeNumber: verified.exchangeNumber,
    orderNumber: orderNumberOf(verified),
    state: verified.state,
    source: 'inbox',
    attempt,
    verified: true,
    code,
    status: null,
    message,
  })
  const entries = [entry(closingEvent(answer), answer.error?.message ?? null)]
  if (dead) entries.push(entry('dead_lettered', 'no attempts left; retry it with receiver.inbox.retry() or fpx-collect inbox retry'))
  return entries
}
