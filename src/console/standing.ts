/*
 * Where a payment stands, as the operator needs to tell it apart at a glance: above all "paid, handler failing"
 * (the money arrived and the shop has not acted on it) apart from every kind of "not paid".
 */
import type { PaymentState } from '../core/payment.js'
import type { BookedPayment } from '../contract/payment-book.js'
import type { TimelineEntry } from '../contract/timeline.js'
import { handlerTrouble } from './life.js'

export type Tone = 'succeeded' | 'failed' | 'open' | 'abandoned' | 'failing' | 'pending' | 'unknown'

export interface Standing {
  readonly label: string
  readonly tone: Tone
  readonly sentence: string
}

/** The latest state the timeline shows handled (processed, or acknowledged as handled before). */
function handledState(entries: readonly TimelineEntry[]): PaymentState | null {
  let state: PaymentState | null = null
  for (const entry of entries) if (entry.state !== null && (entry.event === 'processed' || entry.event === 'duplicate')) state = entry.state
  return state
}

export function standing(booked: BookedPayment | undefined, entries: readonly TimelineEntry[]): Standing {
  // The book counts handler failures since the state was last handled; the timeline shows them too (and is all
  // there is for a payment the book does not hold).
  const trouble = handlerTrouble(entries)
  const fromBook = booked !== undefined && booked.failures > 0 && booked.lastFailure !== null ? { failing: booked.lastFailure.state, failures: booked.failures } : undefined
  const { failing, failures } = fromBook ?? trouble
  const state = booked?.state ?? handledState(entries)
  if (failing === 'succeeded' && state !== 'succeeded')
    return {
      label: 'paid, handler failing',
      tone: 'failing',
      sentence: `The bank paid, but the shop’s handler failed ${failures === 1 ? 'once' : `${failures} times`} and the payment is not handled yet. Fix the handler, then retry.`,
    }
  if (failing !== null && failing !== state)
    return { label: `${failing}, handler failing`, tone: 'failing', sentence: `The handler of the ${failing} result keeps failing (${failures} times); it is retried.` }
  const status = booked?.status
  if (status === 'succeeded' || (status === undefined && state === 'succeeded')) return { label: 'paid', tone: 'succeeded', sentence: 'Paid: the success was handled.' }
  if (status === 'failed' || (status === undefined && state === 'failed')) return { label: 'not paid: failed', tone: 'failed', sentence: 'Not paid: the bank’s failure was handled.' }
  if (status === 'abandoned')
    return { label: 'not paid: abandoned', tone: 'abandoned', sentence: 'Not paid: no final result came within the horizon, so the sweeper closed it. A late result still counts.' }
  if (state === 'pending') return { label: 'pending approval (99)', tone: 'pending', sentence: 'Submitted for corporate approval (B2B1, code 99): not paid until the approver approves.' }
  if (status === 'open') return { label: 'not paid yet: open', tone: 'open', sentence: 'No final result has reached the receiver yet. The sweeper looks it up through the status API.' }
  return { label: 'unknown', tone: 'unknown', sentence: 'The payment book does not hold this payment; its timeline is all there is.' }
}
