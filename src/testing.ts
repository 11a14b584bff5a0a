/**
 * Helpers for merchants' own tests: messages signed exactly as the service signs and posts them.
 * @module fpx-collect/testing
 */
export { encodeForm } from './core/result/form-encode.js'
export {
  type Fields,
  samplePaymentFields,
  type SignedDelivery,
  signCallback,
  type SignOptions,
} from './core/result/test-signing.js'
