/**
 * A local emulator of the online payment collection service, built from its interface specification.
 * @module fpx-collect/emulator
 */
export { type Bank, type CredentialSet, DEMO_MERCHANT, DEMO_PARTNER, type EmulatorConfig, emulatorConfigSchema, type Merchant, type Partner, resolveConfig } from './config.js'
export { type CallbackDelivery, type CallbackTransport, type DeliveryAttempt, type DeliveryOptions } from './delivery.js'
export { ApiError, type ApiErrorCode } from './errors.js'
export type { Faults } from './faults.js'
export { REFERENCE_PATTERN } from './ids.js'
export { type EmulatorOptions, type RunningEmulator, startEmulator } from './server.js'
export { type CompletionOutcome, EmulatorState, loadState, type PaymentRecord, type Principal, saveState } from './state.js'
export type { EmulatorWarning } from './warnings.js'
