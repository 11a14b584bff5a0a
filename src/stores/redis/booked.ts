/* A booked payment as the Redis book's hashes hold it (payment-book.ts describes the fields), read back. */
import type { PaymentState } from '../../core/payment.js'
import type { AttachedData, BookedPayment, BookStatus, SeenKind } from '../../contract/payment-book.js'

/** What the created field holds: the payment as asked (or as its result showed it), but for the parts kept in fields of their own. */
export interface Asked {
  amountSen: number
  uid: string
  kind: SeenKind
  attached: AttachedData
}

export const dateOf = (ms: string | null | undefined) => (ms === null || ms === undefined || ms === '' ? null : new Date(Number(ms)))

const text = (value: string | null | undefined) => (value === null || value === undefined || value === '' ? null : value)

/** A booked payment from the values of BOOK_FIELDS, or undefined when the payment is not in the book. */
export function bookedPayment(orderNumber: string, values: readonly (string | null)[]): BookedPayment | undefined {
  const [created, askedSen, createdAt, status, state, exchange, lookups, last, next, email, name, failures, failedAt, failedState, failedMessage, settled] = values
  if (created === null || created === undefined) return undefined
  const asked = JSON.parse(created) as Asked
  return {
    orderNumber,
    amountSen: asked.amountSen,
    // '' for a result that carried no amount.
    askedSen: askedSen === '' ? [] : (askedSen ?? String(asked.amountSen)).split(',').map(Number),
    uid: asked.uid,
    kind: asked.kind,
    createdAt: new Date(Number(createdAt)),
    exchangeNumber: text(exchange),
    attached: asked.attached,
    status: status as BookStatus,
    state: text(state) as PaymentState | null,
    lookups: Number(lookups),
    lastLookupAt: dateOf(last),
    nextLookupAt: dateOf(next),
    buyerEmail: text(email),
    buyerName: text(name),
    failures: Number(failures ?? 0),
    lastFailure: text(failedState) === null ? null : { at: new Date(Number(failedAt)), state: failedState as PaymentState, message: failedMessage ?? '' },
    settledAt: dateOf(settled),
  }
}

