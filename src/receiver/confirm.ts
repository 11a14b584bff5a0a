/*
 * Confirmation: the authenticated API's record of a result's exchange_number. The checksum proves which values
 * the service signed, not which name each had; the API's record says what they mean, so handlers get it instead
 * of the delivered names (docs/security.md).
 */
import { apiRecordText, hasBankAnswer, STATE_RANK } from '../core/payment.js'
import type { CredentialSet, MatchedCredential } from '../core/result/credentials.js'
import { ReceiverError } from '../core/result/errors.js'
import { trustedPayment, type VerifiedPayment } from '../core/result/verified.js'
import { refusalSecrets } from '../core/result/without-secrets.js'

/**
 * What confirmation needs of the API client: `createClient()` from fpx-collect/client fits. By exchange_number to
 * confirm a result; by order_number for the sweeper's lookups.
 */
export interface ConfirmingClient {
  searchTransactions(reference: 'exchange_number' | 'order_number', value: string): Promise<readonly object[]>
}

/** Who signed a result (or a link of the receiver's own): the credential set, and how it was matched. */
export interface Signer {
  readonly set: CredentialSet | undefined
  readonly credential: MatchedCredential | undefined
  /** The uid the result names: finds the set again for a result read back from the inbox, which has none. */
  readonly uid?: string | undefined
}

/** The API client that confirms what `signer` signed: its credential set's (partners have several). */
export type Confirmer = (signer: Signer) => ConfirmingClient | Promise<ConfirmingClient>

/** One client for every result, or the client of the credential set that signed it (partners). */
export type ConfirmingClients = ConfirmingClient | ((credential: MatchedCredential | undefined) => ConfirmingClient)

/** The error's kind and HTTP status, never its body: an API or a proxy may echo the request's credentials. */
export function described(error: unknown): string {
  if (!(error instanceof Error)) return 'unknown error'
  const status = (error as { status?: unknown }).status
  return typeof status === 'number' ? `${error.name} (HTTP ${status})` : error.name
}

/**
 * The API's record of `exchangeNumber` at its latest state, as a trusted result; or why there is none: the API
 * has no bank answer for it yet (`confirmation_pending`), or it cannot be asked (`confirmation_unavailable`, also
 * when it does not answer within `withinMs`). Never rejects.
 */
export async function confirmThroughApi(confirmer: Confirmer, signer: Signer, exchangeNumber: string, withinMs: number): Promise<VerifiedPayment | ReceiverError> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), withinMs)
  })
  let records: readonly object[]
  try {
    // The client is found within the same time: finding it may look the credential set up (a resolver).
    const client = await Promise.race([confirmer(signer), late])
    if (client === 'late') return new ReceiverError('confirmation_unavailable', `the status API did not answer within ${withinMs} ms; retry later`)
    const answer = await Promise.race([client.searchTransactions('exchange_number', exchangeNumber), late])
    if (answer === 'late') return new ReceiverError('confirmation_unavailable', `the status API did not answer within ${withinMs} ms; retry later`)
    records = answer
  } catch (error) {
    return new ReceiverError('confirmation_unavailable', `the status API could not confirm the result (${described(error)}); retry later`, { cause: error })
  } finally {
    clearTimeout(timer)
  }
  // A client of the merchant's (the `client` option) may answer anything: what is no list of records, or a record
  // that throws when read, is an API that could not be asked, never a rejection here (the claim would stay held).
  if (!Array.isArray(records))
    return new ReceiverError('confirmation_unavailable', 'the status API client answered something other than a list of records; retry later', {
      cause: new TypeError(`searchTransactions answered ${records === null ? 'null' : typeof records}, not an array`),
    })
  let known: VerifiedPayment | undefined
  for (const record of records as readonly Record<string, unknown>[]) {
    let answered: boolean
    try {
      answered = record?.exchange_number === exchangeNumber && hasBankAnswer(record)
    } catch (error) {
      return new ReceiverError('confirmation_unavailable', 'a record the status API client answered could not be read; retry later', { cause: error })
    }
    if (!answered) continue
    let candidate: VerifiedPayment
    try {
      candidate = trustedPayment(apiRecordText(record))
    } catch {
      continue
    }
    if (known === undefined || STATE_RANK[candidate.state] > STATE_RANK[known.state]) known = candidate
  }
  if (known === undefined) return new ReceiverError('confirmation_pending', 'the status API has no result for this exchange_number yet; retry later')
  // The record holds what the buyer typed (name, e-mail), as the signed result does: a buyer holding the Auth Token
  // from a result that echoed it can type it there, and the record is what handlers, the book and its pages get.
  if (signer.set !== undefined) known.hideValues(refusalSecrets([signer.set], []))
  return known
}

/**
 * Whether a payment handled for a delivered result can be the result's own: its order number is one of the values the
 * result signed, under whatever name. The exchange_number a result is confirmed by is itself only one of its signed
 * values, and a buyer can have typed another payment's as their name and renamed it exchange_number; that payment's
 * order number is not among the values of the buyer's result unless they typed it too (docs/security.md).
 */
export function ofResult(delivered: VerifiedPayment, orderNumber: string): boolean {
  return delivered.signedFields().some((field) => field.text === orderNumber)
}

/** The refusal of a result whose exchange_number names a payment of another order (ofResult). */
export function otherPayment(): ReceiverError {
  return new ReceiverError('result_mismatch', "the status API's record of this exchange_number is of an order the result does not carry; the result was renamed")
}
