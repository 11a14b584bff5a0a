/**
 * What the timeline and telemetry read of a receiver's answer: the shape of ReceiverResponse they need, kept
 * here so that they do not import the receiver that imports them.
 */
export interface DeliveryResult {
  readonly status: number
  readonly outcome: 'processed' | 'duplicate' | 'stale' | 'busy' | 'rejected' | 'failed' | 'queued'
  readonly error?: { readonly code: string; readonly message: string; readonly diagnosis?: { readonly summary: string } }
}
