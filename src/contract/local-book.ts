import type { PaymentState } from '../core/payment.js'
import { offerOwnPath, ownPath } from './own-path.js'
import type { BookedPayment, PaymentRef } from './payment-book.js'

/**
 * The receiver reads the payment book on every new payment state (is this order one the merchant created?), and
 * most deliveries are of payments it never saw. A book in this process (the memory store's) answers at once;
 * through its promise API that answer cost each delivery a promise and a trip through the microtask queue. Such
 * a book offers the find and settle its promise methods stand in for (see own-path.ts), as the memory store
 * offers its claims (local-claims.ts).
 */
const LOCAL_BOOK = Symbol('fpx-collect.localBook')
const STANDS_FOR = ['find', 'settle']

export interface LocalBook {
  /** Without uid: the most recently created payment of the order_number (PaymentBook.find's FindOptions). */
  find(orderNumber: string, uid: string | undefined): BookedPayment | undefined
  settle(payment: PaymentRef, state: PaymentState, exchangeNumber: string): boolean
}

/** Gives `book` the synchronous path for as long as its find and settle are the ones it has now. */
export function offerLocalBook<T extends object>(book: T, local: LocalBook): T {
  return offerOwnPath(book, LOCAL_BOOK, STANDS_FOR, local)
}

/** The book's synchronous path, if it has one and its find and settle are still the ones it came with. */
export function localBook(book: object): LocalBook | undefined {
  return ownPath<LocalBook>(book, LOCAL_BOOK, STANDS_FOR)
}
