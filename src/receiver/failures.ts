/**
 * What a handler threw, by the answer (a ReceiverResponse) it led to: the inbox records it as the attempt's error
 * for operators, while the answer itself (sent to the service) says only that a handler failed. Keyed by object
 * so that this module needs nothing from receiver.ts (no import cycle).
 */
export const handlerFailures = new WeakMap<object, unknown>()
