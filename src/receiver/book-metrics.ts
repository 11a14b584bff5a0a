/*
 * The payment book in OpenTelemetry: how many payments are open and how old the oldest is (gauges read from the
 * book when the SDK collects), and the sweeper's lookups by outcome (a counter). Every receiver process sharing
 * a store reports the same store-wide gauges: aggregate them with max, not sum (docs/payment-lifecycle.md).
 */
import type { Logger } from '../core/logger.js'
import type { OpenSummary, PaymentBook } from '../contract/payment-book.js'
import type { MeterLike } from './telemetry.js'

export const BOOK_METRIC = {
  open: 'fpx.payments.open',
  oldestOpenAge: 'fpx.payments.oldest_open_age',
  lookups: 'fpx.sweeper.lookups',
} as const

export type LookupOutcome = 'closed' | 'open' | 'abandoned' | 'failed'

// Both gauges are read in one collection: one summary of the book serves them.
const SUMMARY_REUSE_MS = 1000

export class BookMetrics {
  private lookups: ReturnType<MeterLike['createCounter']> | undefined

  constructor(
    private readonly book: PaymentBook,
    private readonly logger: Logger,
  ) {}

  /** Creates the instruments on `meter` (Telemetry.withMeter calls it once OpenTelemetry is set up). */
  use(meter: MeterLike): void {
    try {
      this.lookups = meter.createCounter(BOOK_METRIC.lookups, { description: 'Status API lookups of open payments by the sweeper, by outcome', unit: '{lookup}' })
      if (typeof meter.createObservableGauge !== 'function') return
      let last: { at: number; summary: Promise<OpenSummary | undefined> } | undefined
      const summary = () => {
        const now = Date.now()
        if (last === undefined || now - last.at > SUMMARY_REUSE_MS)
          last = {
            at: now,
            summary: this.book.summary().catch((error: unknown) => {
              this.logger.warn({ err: error }, 'telemetry: the store failed to summarise its payment book')
              return undefined
            }),
          }
        return last.summary
      }
      meter
        .createObservableGauge(BOOK_METRIC.open, { description: 'Payments created and without a final result yet (the payment book)', unit: '{payment}' })
        .addCallback(async (result) => {
          const found = await summary()
          if (found !== undefined) result.observe(found.open)
        })
      meter
        .createObservableGauge(BOOK_METRIC.oldestOpenAge, { description: 'Age of the oldest payment without a final result (0 when none is open)', unit: 's' })
        .addCallback(async (result) => {
          const found = await summary()
          if (found !== undefined) result.observe(found.oldestCreatedAt === null ? 0 : (Date.now() - found.oldestCreatedAt.getTime()) / 1000)
        })
    } catch (error) {
      this.logger.error({ err: error }, 'telemetry: could not set up the payment book metrics')
    }
  }

  lookup(outcome: LookupOutcome): void {
    this.lookups?.add(1, { 'fpx.lookup.outcome': outcome })
  }
}
