/*
 * The receiver's side of the payment book (contract/payment-book.ts): a new payment state of an order the
 * merchant's client recorded is checked against what was asked before its handlers run (the automatic form of the
 * `expect` hook). The store reads the book with its claim and settles it with its completion.
 */
import { toSen } from '../core/payment.js'
import { ReceiverError } from '../core/result/errors.js'
import type { VerifiedPayment } from '../core/result/verify.js'
import type { BookedPayment } from '../contract/payment-book.js'
import type { TimelineEntry } from '../contract/timeline.js'

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
 * recording a payment stays one store write. None for a record the book made from a result: nothing created it here.
 */
export function createdEntry(booked: BookedPayment): TimelineEntry | undefined {
  if (booked.kind === 'result') return undefined
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
