/*
 * Payments known from creation: a client given a `book` (the receiver, its store, or the store's PaymentBook)
 * records every payment it creates there, in one store write, so that the receiver can check results against
 * what was asked and the sweeper can look up what never came back (docs/payment-lifecycle.md).
 */
import type { Logger } from '../core/logger.js'
import { toSen } from '../core/payment.js'
import type { AttachedData, CreatedPayment, CreationKind, RecordOutcome } from '../contract/payment-book.js'

/** What the client needs of a book: `receiver.payments`, a store's `paymentBook()`, or any PaymentBook. */
export interface PaymentRecorder {
  record(payment: CreatedPayment): Promise<RecordOutcome>
}

/** The `book` option: the receiver (`createReceiver()`), its store, or a PaymentBook. */
export type PaymentBookSource = PaymentRecorder | { readonly payments: PaymentRecorder } | { paymentBook?(): PaymentRecorder }

/** The second argument of buildPaymentForm, createPayment and createPaymentSession. */
export interface CreationOptions {
  /**
   * Kept with the payment in the book, returned by `receiver.payments` and handed to handlers as
   * `event.booked.attached`: your own references (a cart id, a customer id). Flat text, numbers, booleans or null;
   * at most 4 KiB as JSON. Needs a `book`.
   */
  attach?: AttachedData
}

const MAX_ATTACHED_BYTES = 4096

/** The buyer as the request's fields name them (absent or empty: not known). */
export interface Buyer {
  readonly buyer_email?: string | null | undefined
  readonly buyer_name?: string | null | undefined
}

const hasRecord = (value: unknown): value is PaymentRecorder => typeof (value as PaymentRecorder | null)?.record === 'function'

/** The recorder behind a `book` option, or a TypeError saying what was given instead. */
export function recorderOf(source: PaymentBookSource): PaymentRecorder {
  if (hasRecord(source)) return source
  const payments = (source as { payments?: unknown } | null)?.payments
  if (hasRecord(payments)) return payments
  const open = (source as { paymentBook?: unknown } | null)?.paymentBook
  if (typeof open === 'function') {
    const book: unknown = open.call(source)
    if (hasRecord(book)) return book
  }
  throw new TypeError(
    'createClient: book must be the receiver, its store, or a PaymentBook; this store keeps no payment book (the memory, Redis and PostgreSQL stores do)',
  )
}

function checkedAttachment(attach: unknown): AttachedData {
  if (attach === undefined) return {}
  if (typeof attach !== 'object' || attach === null || Array.isArray(attach)) throw new TypeError('attach must be an object of text, numbers, booleans or null')
  for (const [name, value] of Object.entries(attach))
    if (!(value === null || ['string', 'number', 'boolean'].includes(typeof value)) || (typeof value === 'number' && !Number.isFinite(value)))
      throw new TypeError(`attach.${name} must be text, a finite number, a boolean or null`)
  if (new TextEncoder().encode(JSON.stringify(attach)).byteLength > MAX_ATTACHED_BYTES) throw new TypeError(`attach must be at most ${MAX_ATTACHED_BYTES} bytes as JSON`)
  return { ...(attach as AttachedData) }
}

/** The client's book: turns what a creation sent (or got back) into the book's record. */
export class Booking {
  constructor(
    private readonly recorder: PaymentRecorder | undefined,
    private readonly uid: string,
    private readonly logger: Logger,
  ) {}

  get enabled(): boolean {
    return this.recorder !== undefined
  }

  /** What `attach` holds, checked before any request; a TypeError when there is no book to keep it in. */
  attachment(options: CreationOptions | undefined): AttachedData {
    if (options?.attach !== undefined && this.recorder === undefined) throw new TypeError('attach is kept in the payment book: give createClient a book')
    return checkedAttachment(options?.attach)
  }

  /** Records the payment (and the buyer the request named, for the operator's search); rejects when the store cannot take it. */
  async record(kind: CreationKind, orderNumber: string, amount: string, exchangeNumber: string | null, attached: AttachedData, buyer: Buyer = {}): Promise<void> {
    if (this.recorder === undefined) return
    const payment: CreatedPayment = {
      orderNumber,
      amountSen: toSen(amount),
      uid: this.uid,
      kind,
      createdAt: new Date(),
      exchangeNumber,
      attached,
      buyerEmail: buyer.buyer_email || null,
      buyerName: buyer.buyer_name || null,
    }
    const outcome = await this.recorder.record(payment)
    // A reused order_number with another amount is easy to do by mistake (a cart total changed, a retry built anew):
    // both amounts are accepted for its results from now on, which the merchant should know.
    if (outcome === 'added')
      this.logger.warn(
        { orderNumber, kind },
        'the payment book already held this order_number with another amount: results carrying any amount asked for it are accepted, and the record shows this creation',
      )
    else if (outcome === 'known') this.logger.info({ orderNumber, kind }, 'the payment book already held this order_number with this amount; the record shows this creation')
  }

  /**
   * Records a payment the service has (or may have) created already, or a form on its way to the buyer: a failure
   * to record must not hide that payment from the caller, so it is logged, not thrown. The result is still handled
   * when it comes, unchecked, unless the book holds the order from an earlier creation with another amount: the
   * log says how to let that result through. Resolves to whether it was recorded.
   */
  async recordQuietly(kind: CreationKind, orderNumber: string, amount: string, exchangeNumber: string | null, attached: AttachedData, buyer: Buyer = {}): Promise<boolean> {
    try {
      await this.record(kind, orderNumber, amount, exchangeNumber, attached, buyer)
      return true
    } catch (error) {
      this.logger.error(
        { orderNumber, kind, amount, err: error },
        'the payment book could not record a payment: it is not swept, and its result is handled unchecked; but if the book holds this ' +
          'order_number from an earlier creation with another amount, that result is refused (result_mismatch) until you record the payment ' +
          '(receiver.payments.record); the sweeper then handles it',
      )
      return false
    }
  }
}

/**
 * Whether a failed creation may still have created the payment: anything but a refusal the service answered
 * (4xx). A time-out or a lost answer leaves the payment possibly made, and then the sweeper should find out.
 */
export function mayHaveCreated(error: unknown): boolean {
  const status = (error as { status?: unknown } | null)?.status
  return !(typeof status === 'number' && status >= 400 && status < 500) && !(error instanceof TypeError)
}

/** The form with its `recorded` promise, not enumerable (spreads, JSON and paymentFormHtml see the form only). */
export function withRecorded<T extends object>(form: T, recorded: Promise<boolean>): T {
  return Object.defineProperty(form, 'recorded', { value: recorded, enumerable: false })
}
