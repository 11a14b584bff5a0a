/*
 * The receiver's side of the payment book (contract/payment-book.ts): a new payment state of an order the
 * merchant's client recorded is checked against what was asked before its handlers run (the automatic form of
 * the `expect` hook), and the book is settled once the handlers are done. Orders the book never saw are handled
 * as before, at the cost of one look-up (a Map read for the memory store, no promise).
 */
import type { Logger } from '../core/logger.js'
import { type PaymentState, toSen } from '../core/payment.js'
import { ReceiverError } from '../core/result/errors.js'
import type { VerifiedPayment } from '../core/result/verify.js'
import { type LocalBook, localBook } from '../contract/local-book.js'
import type { BookedPayment, PaymentBook } from '../contract/payment-book.js'
import type { ReceiverStore } from '../contract/store.js'
import type { TimelineEntry } from '../contract/timeline.js'

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

export class BookKeeper {
  private readonly local: LocalBook | undefined

  constructor(
    readonly book: PaymentBook,
    private readonly logger: Logger,
  ) {
    this.local = localBook(book)
  }

  /** Whether the book answers at once (the memory store's): then it is read after the claim, which duplicates skip. */
  get inProcess(): boolean {
    return this.local !== undefined
  }

  /**
   * The record a result is checked against: its order_number's, under the uid whose Checksum Token verified it
   * (several merchants may each have recorded that order_number; one that did not is handled as unrecorded), or,
   * when the receiver has one checksumToken and so one merchant, the order_number's latest.
   *
   * A book elsewhere (Redis, PostgreSQL) is read before the claim, and the read is done before the claim starts: a
   * transactional claim holds a pooled connection (PGlite's only one) until its handlers are done, so a read
   * queued behind claims that each wait for their own read stalls them all until their leases run out (seen: 5 s
   * stalls and lost leases with three receivers sharing a pg Pool). Costs a round trip, duplicates included.
   */
  find(result: VerifiedPayment): Promise<BookedPayment | undefined> {
    const uid = result.signerUid
    return uid === undefined ? this.book.find(result.orderNumber) : this.book.find(result.orderNumber, { uid })
  }

  /** The booked payment of a result's order in a book of this process, at once. May throw. */
  findNow(result: VerifiedPayment): BookedPayment | undefined {
    return (this.local as LocalBook).find(result.orderNumber, result.signerUid)
  }

  /**
   * Marks the handled state in the book. A failure is logged, never thrown: the handlers ran and their claim is
   * complete, and the sweeper settles the payment when it next looks it up (the API shows the state, the claim
   * answers duplicate).
   */
  settle(booked: BookedPayment, state: PaymentState, exchangeNumber: string): void | Promise<void> {
    const failed = (error: unknown) => {
      this.logger.error({ orderNumber: booked.orderNumber, exchangeNumber, state, err: error }, 'the store failed to settle the payment in its book; the sweeper will settle it')
    }
    try {
      if (this.local !== undefined) {
        this.local.settle(booked, state, exchangeNumber)
        return
      }
      return this.book.settle(booked, state, exchangeNumber).then(() => undefined, failed)
    } catch (error) {
      failed(error)
    }
  }
}

const ADDRESSES = ['status_url', 'receipt_url']

/**
 * What about `result` disagrees with the payment as it was created, as a sentence without values (they may be
 * the buyer's or a secret's), or undefined. The book was read by the result's order_number (under the uid whose
 * token verified it, when the receiver knows), so the order agrees by construction; what a rearranged result can
 * still get wrong is the amount and, read from the order's latest record, the credential set.
 */
export function disagreement(booked: BookedPayment, result: VerifiedPayment): string | undefined {
  // The amount's text, not the typed view: building that (dates parsed) cost more than the rest of the check.
  const text = result.text('transaction_amount')
  const amount = text === undefined || text === '' ? undefined : toSen(text)
  if (amount === undefined) {
    // The service's own results carry transaction_amount beside their status_url (spec, Events). One that names
    // a service address and no amount had its amount renamed away, the way a value is moved into order_number
    // from a field after it (docs/security.md, D). A minimal result (no address) has its order_number pinned by
    // its shape, and a genuine minimal redirect must not be refused: it is handled, with the usual warning.
    if (ADDRESSES.some((name) => result.has(name)))
      return 'the result carries a service address but no transaction_amount to compare with the amount recorded for its order_number'
  } else if (!booked.askedSen.includes(amount)) return 'transaction_amount differs from the amount recorded for its order_number (and from any asked for it before)'
  // Which credential set signed it, when the checksum proves it (several `credentials` with tokens of their own, or
  // resolveChecksumToken); names alone prove nothing.
  const signer = result.signerUid
  if (signer !== undefined && signer !== booked.uid) return 'the result was signed by another credential set than the one its order_number was created with'
  // API records (and real callbacks) name the credential set that made the payment (spec: interface_uid).
  const maker = result.text('interface_uid')
  if (maker !== undefined && maker !== '' && maker !== booked.uid) return 'interface_uid differs from the credential set its order_number was created with'
  return undefined
}

export function mismatchError(problem: string): ReceiverError {
  return new ReceiverError('result_mismatch', problem)
}

const CREATED_MESSAGES = {
  form: 'payment form built by the client (buildPaymentForm)',
  payment: 'payment created by the client (createPayment)',
  session: 'payment session created by the client (createPaymentSession)',
} as const

/**
 * The `created` entry that begins an order's timeline, made from the book's record when the timeline is read:
 * recording a payment stays one store write.
 */
export function createdEntry(booked: BookedPayment): TimelineEntry {
  return {
    at: booked.createdAt,
    event: 'created',
    exchangeNumber: booked.exchangeNumber,
    orderNumber: booked.orderNumber,
    state: null,
    source: 'client',
    attempt: `created:${booked.orderNumber}`,
    verified: true,
    code: null,
    status: null,
    message: CREATED_MESSAGES[booked.kind],
  }
}
