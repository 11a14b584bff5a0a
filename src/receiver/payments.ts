/*
 * What the receiver offers of the payment book: the operator's view (open payments, counts), the `created` entry
 * that begins an order's timeline, and the sweeper put together from the store's book and lock and the API client.
 */
import type { Logger } from '../core/logger.js'
import type {
  BookedPayment,
  BookOverview,
  CreatedPayment,
  FindOptions,
  ListQuery,
  OpenQuery,
  OpenSummary,
  OverviewWindow,
  PaymentBook,
  PaymentPage,
  RecordOutcome,
  SweepLock,
  SweepStatus,
} from '../contract/payment-book.js'
import type { ReceiverStore } from '../contract/store.js'
import { type TimelineEntry, type TimelineQuery, timelineKey } from '../contract/timeline.js'
import { createdEntry } from './book-check.js'
import { BookMetrics } from './book-metrics.js'
import type { ConfirmingClient } from './confirm.js'
import type { ReceiverResponse } from './events.js'
import type { SweepSettings } from './sweep-options.js'
import { Sweeper, type SweepReport } from './sweeper.js'
import type { Telemetry } from './telemetry.js'
import type { TimelineRecorder } from './timeline.js'

/** The operator's view of the payment book (`receiver.payments`). */
export interface ReceiverPayments {
  /**
   * Records a payment created elsewhere (the client does this itself when given `book: receiver`): one store
   * write. An order_number recorded before shows this creation, its amount added to those asked (RecordOutcome).
   */
  record(payment: CreatedPayment): Promise<RecordOutcome>
  /** Open payments (no final result yet, or a B2B1 pending approval), oldest first; 100 unless `limit` says. */
  listOpen(query?: OpenQuery): Promise<BookedPayment[]>
  /**
   * The payment recorded under an order_number, open or closed, or undefined. Several merchants (credential sets)
   * may each have recorded the same order_number: `{ uid }` picks one; without it, the one created last.
   */
  find(orderNumber: string, options?: FindOptions): Promise<BookedPayment | undefined>
  /** How many payments are open, and when the oldest was created. */
  summary(): Promise<OpenSummary>
  /**
   * Every payment the store has seen (recorded by the client, or first known from a verified result: kind
   * `result`), newest first, a page at a time: by status (`paid_failing`: a success whose handlers keep failing),
   * creation window, and an exact order_number, exchange_number or buyer e-mail (`search`).
   */
  list(query?: ListQuery): Promise<PaymentPage>
  /** Counts for an operator's overview of a window: by status, the failing ones, open ones by age, results per hour. */
  overview(window: OverviewWindow): Promise<BookOverview>
  /** The sweeper's lock across the processes sharing the store: who holds it, until when, and its latest pass. */
  sweepStatus(): Promise<SweepStatus>
}

const NO_BOOK =
  'this receiver keeps no payment book: its store has none (the memory, Redis and PostgreSQL stores do; a custom ' +
  'store can add paymentBook()), or it was created with book: false'

const NO_LOCK = 'this receiver keeps no sweep lock: its store has none (the memory, Redis and PostgreSQL stores do; a custom store can add sweepLock())'

const KINDS = new Set(['form', 'payment', 'session'])

/** A payment recorded by hand is checked as the client's own records are made: a bad one never reaches the store. */
function checked(payment: CreatedPayment): CreatedPayment {
  const problem =
    typeof payment?.orderNumber !== 'string' || payment.orderNumber === ''
      ? 'orderNumber must be non-empty text'
      : !(Number.isSafeInteger(payment.amountSen) && payment.amountSen > 0)
        ? 'amountSen must be a positive whole number of sen'
        : typeof payment.uid !== 'string' || payment.uid === ''
          ? 'uid must be the API UID the payment was created with'
          : !KINDS.has(payment.kind)
            ? 'kind must be form, payment or session'
            : !(payment.createdAt instanceof Date) || Number.isNaN(payment.createdAt.getTime())
              ? 'createdAt must be a Date'
              : undefined
  if (problem !== undefined) throw new TypeError(`payments.record: ${problem}`)
  return { ...payment, exchangeNumber: payment.exchangeNumber ?? null, attached: payment.attached ?? {} }
}

/** `used`: told of every call, so that the receiver's sweeper starts at its first use. */
export function receiverPayments(book: PaymentBook | undefined, lock: SweepLock | undefined, used: () => void): ReceiverPayments {
  const sweepStatus = () => (lock === undefined ? Promise.reject(new TypeError(NO_LOCK)) : (used(), lock.status()))
  const noBook = () => Promise.reject(new TypeError(NO_BOOK))
  if (book === undefined) return { record: noBook, listOpen: noBook, find: noBook, summary: noBook, list: noBook, overview: noBook, sweepStatus }
  return {
    record: async (payment) => {
      used()
      return book.record(checked(payment))
    },
    listOpen: (query) => (used(), book.listOpen(query)),
    find: (orderNumber, options) => (used(), book.find(orderNumber, options)),
    summary: () => (used(), book.summary()),
    list: (query) => (used(), book.list(query)),
    overview: (window) => (used(), book.overview(window)),
    sweepStatus,
  }
}

/** The store's sweep lock, or undefined when it has none (or could not open it: said in the log). */
export function storeLock(store: Pick<ReceiverStore<unknown>, 'sweepLock'>, logger: Logger): SweepLock | undefined {
  if (typeof store.sweepLock !== 'function') return undefined
  try {
    return store.sweepLock()
  } catch (error) {
    logger.error({ err: error }, 'the store failed to open its sweep lock')
    return undefined
  }
}

/**
 * The timeline of one payment with its `created` entry first, read from the book: by order_number directly, by
 * exchange_number through the order its verified entries name.
 */
export async function withCreation(entries: TimelineEntry[], query: TimelineQuery, book: PaymentBook | undefined): Promise<TimelineEntry[]> {
  if (book === undefined) return entries
  const { kind, value, limit } = timelineKey(query)
  const orderNumber = kind === 'order' ? value : entries.find((entry) => entry.orderNumber !== null && entry.verified)?.orderNumber
  if (orderNumber == null) return entries
  const booked = await book.find(orderNumber)
  return booked === undefined ? entries : creationFirst(entries, booked, limit)
}

/** A booked payment's timeline: its `created` entry, then what the store kept, at most `limit` entries. */
export function creationFirst(entries: TimelineEntry[], booked: BookedPayment, limit: number): TimelineEntry[] {
  const created = createdEntry(booked)
  return (created === undefined ? entries : [created, ...entries]).slice(-limit)
}

/** The store's book, unless the receiver was told not to use one (`book: false`) or the store has none. */
export function storeBook(store: Pick<ReceiverStore<unknown>, 'paymentBook'>, wanted: boolean | undefined, logger: Logger): PaymentBook | undefined {
  if (wanted === false || typeof store.paymentBook !== 'function') return undefined
  try {
    return store.paymentBook()
  } catch (error) {
    logger.error({ err: error }, 'the store failed to open its payment book; results are handled without it and nothing is swept')
    return undefined
  }
}

export interface SweepParts {
  readonly store: Pick<ReceiverStore<unknown>, 'sweepLock'>
  readonly book: PaymentBook | undefined
  /** The API client of the credential set a payment was created with (by its API UID); undefined: no API. */
  readonly client: ((uid: string) => ConfirmingClient | undefined) | undefined
  /** The credential sets whose transactions the sweeper lists at each pass (beside those of the payments due). */
  readonly uids: readonly string[]
  readonly handOver: (fields: Record<string, string>, uid: string) => Promise<ReceiverResponse>
  readonly timeline: TimelineRecorder
  readonly telemetry: Telemetry
  readonly logger: Logger
  readonly settings: SweepSettings
}

/** The receiver's sweep() and close(), and the start of the in-process sweeper when the parts are there. */
export function sweeping(parts: SweepParts): { start(): void; sweep(): Promise<SweepReport>; stop(): Promise<void> } {
  const { book, client, logger } = parts
  const metrics = book === undefined ? undefined : new BookMetrics(book, logger)
  if (metrics !== undefined) parts.telemetry.withMeter((meter) => metrics.use(meter))
  let lock
  try {
    lock = typeof parts.store.sweepLock === 'function' ? parts.store.sweepLock() : undefined
  } catch (error) {
    logger.error({ err: error }, 'the store failed to open its sweep lock; nothing is swept')
  }
  const missing = client === undefined ? 'the service API (environment and credentials, or client)' : book === undefined ? 'a store with a payment book' : lock === undefined ? 'a store with a sweep lock' : undefined
  if (missing !== undefined || book === undefined || client === undefined || lock === undefined || metrics === undefined) {
    return {
      start: () => {
        if (book !== undefined && client !== undefined && parts.settings.inProcess) logger.warn({}, `open payments are not swept: the receiver has no ${missing}`)
      },
      sweep: () => Promise.reject(new TypeError(`receiver.sweep() needs ${missing}`)),
      stop: async () => {},
    }
  }
  const sweeper = new Sweeper({
    book,
    lock,
    client: (uid) => {
      const found = client(uid)
      if (found === undefined) throw new Error('no API client for the credential set this payment was created with')
      return found
    },
    uids: parts.uids,
    handOver: parts.handOver,
    record: (entries) => parts.timeline.record(entries),
    counted: (outcome) => metrics.lookup(outcome),
    logger,
    settings: parts.settings,
  })
  return {
    start: () => {
      if (parts.settings.inProcess) sweeper.start()
    },
    sweep: () => sweeper.sweep(),
    stop: () => sweeper.stop(),
  }
}
