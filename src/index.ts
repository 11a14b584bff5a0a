export type { RawDelivery } from './core/body.js'
export { DEFAULT_MAX_BODY_BYTES } from './core/body.js'
export {
  type MessageChecksumOptions,
  messageChecksum,
  type PaymentRequestChecksumFields,
  requestChecksum,
} from './core/checksum.js'
export type { CredentialOptions, CredentialSet } from './core/credentials.js'
export type { MatchedCredential } from './core/credential-match.js'
export type { Diagnosis, DiagnosisAttempt, DiagnosisKind } from './core/diagnosis.js'
export { isReceiverError, ReceiverError, type ReceiverErrorCode, receiverErrorStatus } from './core/errors.js'
export { type Logger, type LoggerOption, silentLogger } from './core/logger.js'
export { type MemoryStoreOptions, memoryStore } from './stores/memory.js'
export type { Rendering } from './core/message.js'
export { classify, type Payment, type PaymentState, toSen } from './core/payment.js'
export { type FieldProblem, PAYMENT_FIELD_RULES, type PaymentResultFields, paymentResultSchema } from './core/fields.js'
export {
  type ConfirmingClient,
  createReceiver,
  type Delivery,
  type DeliveryHandler,
  type DeliveryKind,
  type ErrorHandler,
  type ExpectedPayment,
  type ExpectHook,
  type ExpectQuery,
  type Outcome,
  type PaymentEvent,
  type PaymentEventName,
  type PaymentEventOf,
  type PaymentEventStates,
  type PaymentHandler,
  type PaymentHandlerError,
  type Receiver,
  type ReceiverOptions,
  type ReceiverResponse,
  type ResultSource,
} from './receiver/receiver.js'
export {
  answerCallback,
  answerDelivery,
  answerRedirect,
  errorPage,
  type HttpAnswer,
  type PaymentUrl,
  type RedirectOptions,
  type RedirectResult,
} from './receiver/answers.js'
export type { Claim, ClaimRequest, LeaseRef, ReceiverStore } from './stores/store.js'
export type { InboxOptions, InboxWorker, InboxWorkOptions, ReceiverInbox } from './inbox/inbox.js'
export type { BackoffOptions } from './inbox/backoff.js'
export type { InboxItem, InboxListQuery, InboxQueue, InboxRetryTarget, InboxStatus } from './inbox/queue.js'
export type { TimelineEntry, TimelineEvent, TimelineQuery, TimelineSource } from './stores/timeline.js'
export type { OpenTelemetryApi, TelemetryOptions } from './receiver/telemetry.js'
export type { RefusalRecord, RefusalSummary } from './receiver/refusals.js'
export type { FieldInput } from './core/values.js'
export { type VerifiedPayment, verifyDelivery, type VerifyOptions } from './core/verify.js'
