/*
 * A payment state no handler listens to. Recording it as handled would make every later delivery of it a
 * duplicate, so a handler registered a deploy later would never see the payments that arrived before: the claim
 * is given back instead, and the sender is told to retry (503 no_handler). Redelivery, reconciliation
 * (handleTrusted) and the inbox's retries all reach the handler once there is one.
 */
import { ReceiverError } from '../core/result/errors.js'
import type { Logger } from '../core/logger.js'
import type { VerifiedPayment } from '../core/result/verify.js'
import type { LeaseRef, ReceiverStore } from '../contract/store.js'
import type { PaymentEventName, ReceiverResponse } from './events.js'
import { refused } from './responses.js'

export async function unhandled(
  store: Pick<ReceiverStore<unknown>, 'release'>,
  lease: LeaseRef,
  name: PaymentEventName,
  verified: VerifiedPayment,
  logger: Logger,
  log: object,
): Promise<ReceiverResponse> {
  await store.release(lease).catch((error: unknown) => {
    logger.error({ ...log, err: error }, 'the store failed to release the claim; it frees itself when the lease expires')
  })
  const error = new ReceiverError('no_handler', `no handler is registered for ${name}; the result was not recorded, retry later`)
  return refused(error, 'failed', verified)
}
