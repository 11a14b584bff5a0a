/*
 * What a delivery tells the payment book besides its state (contract/store.ts): the result it handled, so that an
 * order the client did not record is recorded too and the buyer is known, and why its handlers failed.
 */
import { toSen } from '../core/payment.js'
import type { VerifiedPayment } from '../core/result/verify.js'
import { failureText } from '../contract/book-query.js'
import type { FailureNote, SeenResult } from '../contract/payment-book.js'

/** Shorter values are left in a message: taking out every "00" or "MY" would leave no sentence to read. */
const SHORTEST_HIDDEN = 3
const HIDDEN = '[field value]'

const present = (text: string | undefined) => (text === undefined || text === '' ? null : text)

/**
 * The result handled as the book keeps it (the API record's values when it was confirmed). The uid is the credential
 * set the receiver verified or confirmed it with, never the message's uid field read by name.
 */
export function seenOf(handled: VerifiedPayment): SeenResult {
  const amount = present(handled.text('transaction_amount'))
  return {
    uid: handled.signerUid ?? handled.credential?.uid ?? null,
    amountSen: amount === null ? null : toSen(amount),
    buyerEmail: present(handled.text('buyer_email')),
    buyerName: present(handled.text('buyer_name')),
  }
}

/**
 * A handler's failure for the book: its error's name and message, on one line and cut short, with every value of the
 * result handled and of the one delivered taken out (a handler's message may quote the buyer's name or e-mail). The
 * handlers are given no secret to echo: their event names the credential set, never its tokens.
 */
export function failureOf(error: unknown, handled: VerifiedPayment, delivered: VerifiedPayment): FailureNote {
  let message = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
  const values = [handled, delivered].flatMap((result) => result.signedFields().map((field) => field.text))
  for (const value of new Set(values.filter((text) => text.length >= SHORTEST_HIDDEN).sort((a, b) => b.length - a.length)))
    message = message.split(value).join(HIDDEN)
  return { message: failureText(message), seen: seenOf(handled) }
}
