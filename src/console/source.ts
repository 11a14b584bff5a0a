/*
 * What the console reads and does, from one of two places: a receiver (the console mounted in the merchant's
 * app: its store, its in-process refusals, its API client and handlers for "look up now"), or a store alone (the
 * `fpx-collect console` command: the store a fleet shares; no handlers, so nothing is looked up from there).
 */
import type { InboxItem, InboxListQuery, InboxQueue } from '../contract/inbox-queue.js'
import type {
  BookedPayment,
  BookOverview,
  FindOptions,
  ListQuery,
  OpenQuery,
  OpenSummary,
  OverviewWindow,
  PaymentBook,
  PaymentPage,
  SweepLock,
  SweepStatus,
} from '../contract/payment-book.js'
import type { ReceiverStore } from '../contract/store.js'
import { type TimelineEntry, type TimelineQuery, timelineKey } from '../contract/timeline.js'
import type { ReceiverInbox } from '../inbox/inbox.js'
import { operatorName, type LookUpAnswer, type OperatorOrder, type RetryItem } from '../receiver/operator.js'
import { creationFirst } from '../receiver/payments.js'
import type { Receiver } from '../receiver/receiver.js'
import type { RefusalSummary } from '../receiver/refusals.js'

/** What the console shows of a receiver: any receiver fits, whatever its store's transaction type. */
export type ConsoleReceiver = Pick<Receiver<unknown>, 'timeline' | 'payments' | 'inbox' | 'refusals' | 'operator' | 'confirming'>

/** The payment book as the console reads it. Methods reject when there is none (the page says so). */
export interface ConsoleBook {
  find(orderNumber: string, options?: FindOptions): Promise<BookedPayment | undefined>
  listOpen(query?: OpenQuery): Promise<BookedPayment[]>
  summary(): Promise<OpenSummary>
  list(query?: ListQuery): Promise<PaymentPage>
  overview(window: OverviewWindow): Promise<BookOverview>
  /** The sweeper: who holds its lock, and its latest pass. */
  sweepStatus(): Promise<SweepStatus>
}

export interface ConsoleInbox {
  list(query?: InboxListQuery): Promise<InboxItem[]>
  /** The entries of one exchange_number, with their fields as delivered. */
  show(exchangeNumber: string): Promise<(InboxItem & { readonly fields: Record<string, unknown> })[]>
  counts(): Promise<{ pending: number; dead: number }>
  /** Makes the entries due now, each noted on its payment's timeline as done by `by`. */
  retry(items: readonly RetryItem[], by: string): Promise<number>
}

export interface ConsoleSource {
  /** Where the data comes from, for the page's footer. */
  readonly origin: 'receiver' | 'store'
  readonly book: ConsoleBook
  /** One payment's timeline, oldest first, its `created` entry first when the book holds it. */
  timeline(query: TimelineQuery): Promise<TimelineEntry[]>
  /** The inbox, or undefined when there is none (a receiver without inbox mode; a store without one). */
  inbox(): ConsoleInbox | undefined
  /** Refusals seen by this process (a receiver's); undefined for a store alone, which never keeps them. */
  refusals(): RefusalSummary | undefined
  /** The service API, when the receiver has credentials; undefined otherwise (and always for a store alone). */
  readonly api: { records(order: OperatorOrder): Promise<readonly Record<string, unknown>[]>; lookUp(order: OperatorOrder, by: string): Promise<LookUpAnswer> } | undefined
  /** Whether results are confirmed over the API before handlers run; undefined when not known (a store alone). */
  readonly confirming: boolean | undefined
  /** An error's message as the page may show it (a store URL's password scrubbed, for one). */
  describe(error: unknown): string
}

const plainMessage = (error: unknown) => (error instanceof Error ? error.message : String(error))

/** The console over a receiver: everything it offers, as the merchant's app configured it. */
export function receiverSource(receiver: ConsoleReceiver): ConsoleSource {
  const inbox: ReceiverInbox = receiver.inbox
  // A receiver made without `inbox` has one whose methods throw at once: asked once, at the first page that needs it.
  let hasInbox: boolean | undefined
  return {
    origin: 'receiver',
    book: receiver.payments,
    timeline: (query) => receiver.timeline(query),
    inbox() {
      if (hasInbox === undefined)
        try {
          inbox.counts().catch(() => {})
          hasInbox = true
        } catch {
          hasInbox = false
        }
      if (!hasInbox) return undefined
      return {
        list: (query) => inbox.list(query),
        show: (exchangeNumber) => inbox.show(exchangeNumber),
        counts: () => inbox.counts(),
        retry: (items, by) => receiver.operator.retry(items, by),
      }
    },
    refusals: () => receiver.refusals(),
    api: receiver.operator.canLookUp ? { records: (order) => receiver.operator.records(order), lookUp: (order, by) => receiver.operator.lookUp(order, by) } : undefined,
    confirming: receiver.confirming,
    describe: plainMessage,
  }
}

export interface StoreParts {
  /** The store's book, or undefined when it has none (the pages say so). */
  readonly book: PaymentBook | undefined
  readonly inbox: InboxQueue | undefined
  readonly sweepLock: SweepLock | undefined
  readonly timeline: Pick<ReceiverStore<unknown>, 'readTimeline' | 'appendTimeline'>
  /** Scrubs what an error may echo of the store's URL. */
  readonly describe?: (error: unknown) => string
}

const NO_BOOK = 'this store holds no payment book yet (no client has recorded a payment in it)'

/** The console over a store alone (the command line's): what the store keeps; retries noted on the timeline directly. */
export function storeSource(parts: StoreParts): ConsoleSource {
  const { book, timeline, sweepLock } = parts
  const noBook = () => Promise.reject(new TypeError(NO_BOOK))
  const sweepStatus = () => (sweepLock === undefined ? Promise.reject(new TypeError('this store keeps no sweep lock')) : sweepLock.status())
  const consoleBook: ConsoleBook =
    book === undefined
      ? { find: noBook, listOpen: noBook, summary: noBook, list: noBook, overview: noBook, sweepStatus }
      : {
          find: (order, options) => book.find(order, options),
          listOpen: (query) => book.listOpen(query),
          summary: () => book.summary(),
          list: (query) => book.list(query),
          overview: (window) => book.overview(window),
          sweepStatus,
        }
  let attempts = 0
  const tag = `console-${Date.now().toString(36)}`
  return {
    origin: 'store',
    book: consoleBook,
    async timeline(query) {
      if (typeof timeline.readTimeline !== 'function') throw new TypeError('this store keeps no timeline')
      const stored = await timeline.readTimeline(query)
      const { kind, value, limit } = timelineKey(query)
      const orderNumber = kind === 'order' ? value : stored.find((entry) => entry.orderNumber !== null && entry.verified)?.orderNumber
      const booked = orderNumber == null || book === undefined ? undefined : await book.find(orderNumber)
      return booked === undefined ? stored : creationFirst(stored, booked, limit)
    },
    inbox() {
      const queue = parts.inbox
      if (queue === undefined) return undefined
      return {
        list: (query) => queue.list(query),
        show: (exchangeNumber) => queue.show(exchangeNumber),
        counts: () => queue.counts(),
        async retry(items, by) {
          const who = operatorName(by)
          let count = 0
          const notes: TimelineEntry[] = []
          for (const item of items) {
            const retried = await queue.retry({ exchangeNumber: item.exchangeNumber, state: item.state })
            if (retried === 0) continue
            count += retried
            notes.push({
              at: new Date(),
              event: 'retried',
              exchangeNumber: item.exchangeNumber,
              orderNumber: item.orderNumber,
              state: item.state,
              source: 'console',
              attempt: `${tag}-${++attempts}`,
              verified: true,
              code: null,
              status: null,
              message: `inbox entry made due now by ${who}`,
            })
          }
          if (notes.length > 0) await timeline.appendTimeline?.(notes)
          return count
        },
      }
    },
    refusals: () => undefined,
    api: undefined,
    confirming: undefined,
    describe: parts.describe ?? plainMessage,
  }
}
