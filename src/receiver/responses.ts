/* What the receiver answers (ReceiverResponse), and what a redirect needs to check again later. */
import { ReceiverError } from '../core/result/errors.js'
import type { Outcome, ReceiverResponse } from './events.js'
import type { VerifiedPayment } from '../core/result/verify.js'

/**
 * For a verified redirect not handled yet (being confirmed elsewhere, the API not answering, queued): the signed
 * link the buyer's page follows to check again in a moment (recheck.ts, http/answers.ts). Kept beside the answer,
 * not in it: the answer's own properties are what the merchant logs.
 */
const recheckable = new WeakMap<ReceiverResponse, Recheck>()

export interface Recheck {
  /** The link's query: the URL's own parameters, then the check's number, the exchange_number and the signature. */
  readonly query: string
  /** This check's number, from 1. */
  readonly attempt: number
}

export function recheckOf(response: ReceiverResponse): Recheck | undefined {
  return recheckable.get(response)
}

export function withRecheck(response: ReceiverResponse, recheck: Recheck | undefined): ReceiverResponse {
  if (recheck !== undefined) recheckable.set(response, recheck)
  return response
}

export function acknowledged(outcome: Outcome, verified: VerifiedPayment | undefined): ReceiverResponse {
  const response: ReceiverResponse = { status: 200, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: 'OK', outcome }
  if (verified !== undefined) response.payment = verified.payment
  return response
}

export function refused(error: ReceiverError, outcome: Outcome, verified?: VerifiedPayment, retryAfterS?: number): ReceiverResponse {
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' }
  // The rest of a late body may still be trickling in: closing the connection ends it.
  if (error.code === 'body_timeout') headers.connection = 'close'
  if (retryAfterS !== undefined) headers['retry-after'] = String(retryAfterS)
  // The sender gets the code and message only: a diagnosis is for the merchant (logs, timeline, this object).
  const body = JSON.stringify({ error: { code: error.code, message: error.message } })
  const response: ReceiverResponse = { status: error.status, headers, body, outcome }
  if (verified !== undefined) response.payment = verified.payment
  response.error = error.diagnosis === undefined ? { code: error.code, message: error.message } : { code: error.code, message: error.message, diagnosis: error.diagnosis }
  return response
}

/** A refused checksum's diagnosis in a log line's details: its verdict and what matched, not the whole table. */
export function diagnosisDetails(error: ReceiverError): { diagnosis?: { verdict: string; kind?: string; field?: string; hmacs: number } } {
  const { diagnosis } = error
  if (diagnosis === undefined) return {}
  const { verdict, match, hmacs } = diagnosis
  return { diagnosis: { verdict, hmacs, ...(match === undefined ? {} : { kind: match.kind }), ...(match?.field === undefined ? {} : { field: match.field }) } }
}
