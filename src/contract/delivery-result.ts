/**
 * How a payment result reaches the receiver and how its handling ends: the receiver's events, the inbox, the
 * timeline and the stores' inbox tables all take these unions from here.
 */

/** Every way a result reaches the receiver: a delivery of the service, or a record read over the API (reconcile). */
export const RESULT_SOURCES = ['callback', 'redirect', 'reconcile'] as const

/** How a result reached the receiver: a delivery, or a record read over the API by a reconciliation. */
export type ResultSource = (typeof RESULT_SOURCES)[number]

/** The service's two deliveries: server-to-server callback, or the buyer's browser through redirect_url. */
export type DeliveryKind = Exclude<ResultSource, 'reconcile'>

/** How the receiver answered. `queued`: inbox mode wrote the verified result to the inbox; workers run the handlers. */
export type Outcome = 'processed' | 'duplicate' | 'stale' | 'busy' | 'rejected' | 'failed' | 'queued'

/**
 * What the timeline, the inbox and telemetry read of a receiver's answer: the part of ReceiverResponse they need,
 * kept here so that they do not import the receiver that imports them.
 */
export interface DeliveryResult {
  readonly status: number
  readonly outcome: Outcome
  readonly error?: { readonly code: string; readonly message: string; readonly diagnosis?: { readonly summary: string } }
}
