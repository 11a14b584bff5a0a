import { apiRecordText, hasBankAnswer } from '../core/api-record.js'
import { ReceiverError } from '../core/errors.js'
import { STATE_RANK } from '../core/payment.js'
import type { ShapeCache } from '../core/shape.js'
import { trustedPayment } from '../core/trusted.js'
import type { VerifiedPayment } from '../core/verify.js'

/**
 * What confirmation needs of the API client: `createClient()` from fpx-collect/client fits. Declared here so the
 * receiver does not import the client (which imports the receiver for reconciliation).
 */
export interface ConfirmingClient {
  searchTransactions(reference: 'exchange_number', value: string): Promise<readonly object[]>
}

/**
 * The payment as the authenticated API knows it, for a signed result: the API's record of the same
 * exchange_number, checked to be for the same order and amount. The checksum proves the values came from the
 * service, not which names they had; the API's record answers that. Resolves to a ReceiverError when the API
 * disagrees (`result_mismatch`), does not know the payment yet (`confirmation_pending`), or cannot be reached
 * (`confirmation_unavailable`). Never rejects.
 */
export async function confirmThroughApi(client: ConfirmingClient, verified: VerifiedPayment, shapes: ShapeCache): Promise<VerifiedPayment | ReceiverError> {
  let records: readonly object[]
  try {
    records = await client.searchTransactions('exchange_number', verified.exchangeNumber)
  } catch (error) {
    return new ReceiverError('confirmation_unavailable', 'the status API could not confirm the result; retry later', { cause: error })
  }
  let known: VerifiedPayment | undefined
  for (const record of records as readonly Record<string, unknown>[]) {
    if (record.exchange_number !== verified.exchangeNumber || !hasBankAnswer(record)) continue
    let candidate: VerifiedPayment
    try {
      candidate = trustedPayment(apiRecordText(record), shapes)
    } catch {
      continue
    }
    if (known === undefined || STATE_RANK[candidate.state] > STATE_RANK[known.state]) known = candidate
  }
  if (known === undefined)
    return new ReceiverError('confirmation_pending', `the status API has no result for exchange_number ${verified.exchangeNumber} yet; retry later`)
  if (known.orderNumber !== verified.orderNumber)
    return new ReceiverError('result_mismatch', "the status API's record of this exchange_number is for another order_number")
  const amount = verified.payment.amountSen
  if (amount !== undefined && known.payment.amountSen !== undefined && amount !== known.payment.amountSen)
    return new ReceiverError('result_mismatch', "the status API's record of this exchange_number has another transaction_amount")
  known.credential = verified.credential
  return known
}
