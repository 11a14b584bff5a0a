import { ReceiverError } from '../core/errors.js'
import type { Logger } from '../core/logger.js'
import type { VerifiedPayment } from '../core/verify.js'
import type { ReceiverStore } from '../stores/store.js'
import type { ReceiverResponse, ResultSource } from './events.js'
import { acknowledged, busy, refused } from './responses.js'

/**
 * The key under which a signed value sequence is claimed. It cannot be an exchange_number the service issues:
 * those carry no `~`.
 */
const SEQUENCE_KEY = '~signed:'

const HANDLED = new Set(['processed', 'duplicate', 'stale', 'queued'])

export interface SequenceClaim {
  readonly store: ReceiverStore<unknown>
  readonly verified: VerifiedPayment
  readonly owner: string
  readonly leaseMs: number
  readonly logger: Logger
  readonly source: ResultSource
}

/**
 * Runs `handle` at most once per signed value sequence. For a result no service address pins: its names, the
 * exchange_number's included, may have been rearranged, but every rearrangement of one genuine result carries the
 * same checksum (the signature covers the values in order), so the checksum names the result whatever its names.
 * Claimed in the payment store like an exchange_number, so it holds across processes.
 */
export async function oncePerSignedSequence(claim: SequenceClaim, handle: () => Promise<ReceiverResponse>): Promise<ReceiverResponse> {
  const { store, verified, logger, source } = claim
  const lease = { exchangeNumber: SEQUENCE_KEY + (verified.checksum ?? ''), state: verified.state, owner: claim.owner, leaseMs: claim.leaseMs }
  const log = { exchangeNumber: verified.exchangeNumber, state: verified.state, delivery: source }
  let claimed
  try {
    claimed = await store.claim(lease)
  } catch (error) {
    logger.error({ ...log, err: error }, 'the store failed to claim the signed result')
    const response = refused(new ReceiverError('store_unavailable', 'the payment store is unavailable; retry later'), 'failed', verified)
    response.headers['retry-after'] = '5'
    return response
  }
  if (claimed.outcome === 'duplicate' || claimed.outcome === 'stale') {
    logger.warn(log, 'this signed result was handled already under other field names; answered as a duplicate')
    return acknowledged('duplicate', verified)
  }
  if (claimed.outcome === 'busy') return busy(claimed.retryAfterMs, verified)
  // A transactional store opened a transaction for this claim; PGlite has one session, so the payment's own
  // claim would wait on it. Settled now: a failure below is then recovered by reconciliation, not redelivery.
  const early = claimed.transaction !== undefined
  if (early) await settle(store, lease, true, logger, log)
  const response = await handle()
  if (!early) await settle(store, lease, HANDLED.has(response.outcome), logger, log)
  return response
}

async function settle(store: ReceiverStore<unknown>, lease: Parameters<ReceiverStore<unknown>['release']>[0], done: boolean, logger: Logger, log: object): Promise<void> {
  try {
    if (done) await store.complete(lease)
    else await store.release(lease)
  } catch (error) {
    logger.error({ ...log, err: error }, 'the store failed to settle the signed result; its lease frees it when it expires')
  }
}
