import type { ReceiverResponse } from './receiver.js'

/**
 * What a handler threw, by the answer it led to: the inbox records it as the attempt's error for operators,
 * while the answer itself (sent to the service) says only that a handler failed.
 */
export const handlerFailures = new WeakMap<ReceiverResponse, unknown>()
