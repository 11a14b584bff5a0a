import { apiRecordText, hasBankAnswer } from '../core/api-record.js'
import type { MatchedCredential } from '../core/result/credentials.js'
import { ReceiverError } from '../core/result/errors.js'
import { STATE_RANK } from '../core/payment.js'
import type { ShapeCache } from '../core/result/shape.js'
import { trustedPayment } from '../core/result/trusted.js'
import type { VerifiedPayment } from '../core/result/verify.js'

/**
 * What confirmation needs of the API client: `createClient()` from fpx-collect/client fits. Declared here so the
 * receiver does not import the client (which imports the receiver for reconciliation).
 */
export interface ConfirmingClient {
  /** By exchange_number to confirm a result; by order_number for the sweeper's lookups (payments.ts). */
  searchTransactions(reference: 'exchange_number' | 'order_number', value: string): Promise<readonly object[]>
}

/** One client for every result, or the client of the credential set that signed it (partners). */
export type ConfirmingClients = ConfirmingClient | ((credential: MatchedCredential | undefined) => ConfirmingClient)

/** The option as one function; checks its shape when the receiver is made. */
export function confirmingClients(clients: ConfirmingClients): (credential: MatchedCredential | undefined) => ConfirmingClient {
  if (typeof clients === 'function') return clients
  if (typeof clients?.searchTransactions !== 'function')
    throw new TypeError('client must be the API client (createClient from fpx-collect/client) or a function returning one')
  return () => clients
}

/** The error's kind and HTTP status, never its body: an API or a proxy may echo the request's credentials. */
export function described(error: unknown): string {
  if (!(error instanceof Error)) return 'unknown error'
  const status = (error as { status?: unknown }).status
  return typeof status === 'number' ? `${error.name} (HTTP ${status})` : error.name
}

function deadline(ms: number): { expired: Promise<'expired'>; cancel(): void } {
  let timer: NodeJS.Timeout | undefined
  const expired = new Promise<'expired'>((resolve) => {
    timer = setTimeout(() => resolve('expired'), ms)
    timer.unref()
  })
  return { expired, cancel: () => clearTimeout(timer) }
}

/**
 * The payment as the authenticated API knows it, for a signed result: the API's record of the same
 * exchange_number, checked to be for the same order and amount. The checksum proves the values came from the
 * service, not which names they had; the API's record answers that. Resolves to a ReceiverError when the API
 * disagrees (`result_mismatch`), does not know the payment yet (`confirmation_pending`), or cannot be reached
 * (`confirmation_unavailable`). Never rejects.
 */
export async function confirmThroughApi(
  clients: (credential: MatchedCredential | undefined) => ConfirmingClient,
  verified: VerifiedPayment,
  shapes: ShapeCache,
  withinMs: number,
): Promise<VerifiedPayment | ReceiverError> {
  let records: readonly object[]
  // Within the claim's lease: an answer that comes later is not waited for, so no other delivery takes over.
  const timer = deadline(withinMs)
  try {
    const answer = await Promise.race([clients(verified.credential).searchTransactions('exchange_number', verified.exchangeNumber), timer.expired])
    if (answer === 'expired') return new ReceiverError('confirmation_unavailable', `the status API did not answer within ${withinMs} ms; retry later`)
    records = answer
  } catch (error) {
    return new ReceiverError('confirmation_unavailable', `the status API could not confirm the result (${described(error)}); retry later`)
  } finally {
    timer.cancel()
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
    return new ReceiverError('confirmation_pending', 'the status API has no result for this exchange_number yet; retry later')
  if (known.orderNumber !== verified.orderNumber)
    return new ReceiverError('result_mismatch', "the status API's record of this exchange_number is for another order_number")
  const amount = verified.payment.amountSen
  if (amount !== undefined && known.payment.amountSen !== undefined && amount !== known.payment.amountSen)
    return new ReceiverError('result_mismatch', "the status API's record of this exchange_number has another transaction_amount")
  known.credential = verified.credential
  known.signerUid = verified.signerUid
  return known
}
