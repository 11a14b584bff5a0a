export type { RawDelivery } from './body.js'
export { DEFAULT_MAX_BODY_BYTES } from './body.js'
export {
  type MessageChecksumOptions,
  messageChecksum,
  type PaymentRequestChecksumFields,
  requestChecksum,
} from './checksum.js'
export type { CredentialOptions, CredentialSet } from './credentials.js'
export { isReceiverError, ReceiverError, type ReceiverErrorCode, receiverErrorStatus } from './errors.js'
export { type Logger, silentLogger } from './logger.js'
export { type MemoryStoreOptions, memoryStore } from './memory-store.js'
export type { Rendering } from './message.js'
export { classify, type Payment, type PaymentState, toSen } from './payment.js'
export { type FieldProblem, PAYMENT_FIELD_RULES, type PaymentResultFields, paymentResultSchema } from './payment-fields.js'
export {
  createReceiver,
  type Delivery,
  type DeliveryHandler,
  type DeliveryKind,
  type Outcome,
  type PaymentEvent,
  type PaymentEventName,
  type PaymentHandler,
  type Receiver,
  type ReceiverOptions,
  type ReceiverResponse,
  type ResultSource,
} from './receiver.js'
export {
  answerCallback,
  answerDelivery,
  answerRedirect,
  errorPage,
  type HttpAnswer,
  type PaymentUrl,
  type RedirectOptions,
  type RedirectResult,
} from './redirect.js'
export type { Claim, ClaimRequest, LeaseRef, ReceiverStore } from './store.js'
export type { FieldInput } from './values.js'
export { type VerifiedPayment, verifyDelivery, type VerifyOptions } from './verify.js'
