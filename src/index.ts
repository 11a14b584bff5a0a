export type { RawDelivery } from './core/result/body.js'
export { DEFAULT_MAX_BODY_BYTES } from './core/result/body.js'
export { type MessageChecksumOptions, messageChecksum } from './core/result/checksum.js'
export { type PaymentRequestChecksumFields, requestChecksum } from './core/request/request-checksum.js'
export type { CredentialOptions, CredentialSet, MatchedCredential } from './core/result/credentials.js'
export type { Diagnosis, DiagnosisAttempt, DiagnosisKind } from './core/result/diagnosis.js'
export { isReceiverError, ReceiverError, type ReceiverErrorCode, receiverErrorStatus } from './core/result/errors.js'
export { type Logger, type LoggerOption, silentLogger } from './core/logger.js'
export { type MemoryStoreOptions, memoryStore } from './stores/memory/store.js'
export type { Rendering } from './core/result/message.js'
export { classify, type Payment, type PaymentState, toSen } from './core/payment.js'
export { type FieldProblem, PAYMENT_FIELD_RULES, type PaymentResultFields, paymentResultSchema } from './core/result/fields.js'
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
  type ReceiverPayments,
  type ReceiverOperator,
  type LookUpAnswer,
  type OperatorOrder,
  type RetryItem,
  type SweepOptions,
  type SweepReport,
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
} from './http/answers.js'
export type { Claim, ClaimRequest, Completion, LeaseRef, OrderRef, ReceiverStore, Release } from './contract/store.js'
export type { InboxOptions, InboxWorker, InboxWorkOptions, ReceiverInbox } from './inbox/inbox.js'
export type { BackoffOptions } from './inbox/backoff.js'
export type { InboxItem, InboxListQuery, InboxQueue, InboxRetryTarget, InboxStatus } from './contract/inbox-queue.js'
export type { TimelineEntry, TimelineEvent, TimelineQuery, TimelineSource } from './contract/timeline.js'
export type {
  AttachedData,
  BookedPayment,
  BookOverview,
  BookStatus,
  CreatedPayment as CreatedPaymentRecord,
  CreationKind,
  FailureNote,
  FindOptions,
  HandlerFailure,
  HourCounts,
  ListQuery,
  ListStatus,
  LookupNote,
  OpenQuery,
  OpenSummary,
  OverviewWindow,
  PaymentBook,
  PaymentPage,
  PaymentRef,
  RecordOutcome,
  SeenKind,
  SeenResult,
  SweepLock,
  SweepPassNote,
  SweepStatus,
} from './contract/payment-book.js'
export type { OpenTelemetryApi, TelemetryOptions } from './receiver/telemetry.js'
export type { RefusalRecord, RefusalSummary } from './receiver/refusals.js'
export type { FieldInput } from './core/values.js'
export { type VerifiedPayment, verifyDelivery, type VerifyOptions } from './core/result/verify.js'
