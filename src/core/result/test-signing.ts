/** Signing for tests, beside verification: messages signed exactly as the service signs and posts them. */
import { type MessageChecksumOptions, messageChecksum } from './checksum.js'
import { encodeForm } from './form-encode.js'
import type { FieldInput } from '../values.js'

export type Fields = Readonly<Record<string, FieldInput>>

export interface SignOptions extends MessageChecksumOptions {
  /** `form` (what the service sends, the default) or `json`. */
  format?: 'form' | 'json'
}

export interface SignedDelivery {
  body: string
  contentType: string
}

function withoutEmptyContainers(fields: Fields): Record<string, FieldInput> {
  // Prototype-free, so a field named __proto__ stays a field.
  const kept: Record<string, FieldInput> = Object.create(null)
  for (const [name, value] of Object.entries(fields)) {
    const pruned = prune(value)
    if (pruned !== undefined) kept[name] = pruned
  }
  return kept
}

function prune(value: FieldInput): FieldInput {
  if (value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) {
    const items = (value as readonly FieldInput[]).map(prune).filter((item) => item !== undefined)
    return items.length === 0 ? undefined : items
  }
  const entries = value instanceof Map ? [...value.entries()] : Object.entries(value)
  const kept = new Map<string, FieldInput>()
  for (const [key, item] of entries as [string, FieldInput][]) {
    const pruned = prune(item)
    if (pruned !== undefined) kept.set(key, pruned)
  }
  return kept.size === 0 ? undefined : kept
}

/**
 * Adds the `checksum` the service would compute and returns the body and content type it would post to
 * callback_url or through the buyer's browser to redirect_url. A `checksum` in `fields` is replaced.
 */
export function signCallback(fields: Fields, checksumToken: string, options: SignOptions = {}): SignedDelivery {
  const { checksum: _ignored, ...given } = fields
  // A form body cannot carry an empty object or list, so neither can its signed string.
  const unsigned = options.format === 'json' ? given : withoutEmptyContainers(given)
  const signed = { ...unsigned, checksum: messageChecksum(unsigned, checksumToken, options) }
  if (options.format === 'json') return { body: JSON.stringify(signed), contentType: 'application/json' }
  return { body: encodeForm(signed), contentType: 'application/x-www-form-urlencoded' }
}

function digits(count: number): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(count)), (byte) => String(byte % 10)).join('')
}

/**
 * The fields of a realistic successful B2C callback, with fresh references each call; override what a test is
 * about (`payment_status: 'false'`, `fpx_debit_auth_code: '1C'`, `fpx_model: 'B2B1'`, ...). status_url and
 * receipt_url follow an overridden exchange_number.
 */
export function samplePaymentFields(overrides: Fields = {}): Record<string, FieldInput> {
  // The service's addresses name the exchange_number (spec), and the receiver checks that they do.
  const given = overrides.exchange_number
  const exchange = typeof given === 'string' && given !== '' ? given : `EX${digits(10)}`
  const reference = `ABCDE${digits(10)}`
  const base = 'https://sandbox.example.test/api'
  const now = new Date()
  const uid = '6f1c2a4e-8b3d-4f7a-9c2e-1d5b7a9e3f10'
  return {
    source: 'FPX',
    payment_status: 'true',
    currency: 'MYR',
    transaction_amount: '100.20',
    transaction_amount_received: '100.20',
    order_number: `ORD-${digits(8)}`,
    merchant_reference_number: reference,
    exchange_number: exchange,
    buyer_name: 'Nur Aisyah binti Ahmad',
    buyer_phone: '+60123456789',
    buyer_email: 'aisyah@example.com',
    payment_id: digits(6),
    client_ip: '203.0.113.7',
    status_url: `${base}/v1/status/${exchange}?uid=${uid}`,
    retry_url: '',
    receipt_url: `${base}/v1/receipt/${exchange}.pdf?uid=${uid}`,
    transaction_fee: '1.00',
    payment_mode: 'merchant',
    payment_method: 'fpx_online_banking',
    fpx_model: 'B2C',
    fpx_debit_auth_code: '00',
    fpx_name: 'NUR AISYAH BINTI AHMAD',
    fpx_bank: 'Maybank2U',
    fpx_transaction_id: digits(16),
    fpx_status: 'true',
    fpx_status_message: 'Approved',
    fpx_transaction_time: now.toISOString().replace(/\D/g, '').slice(0, 14),
    amount: '100.20',
    payment_stage: 'payment_successful',
    merchant_name: 'Kedai Contoh Sdn Bhd',
    merchant_co_number: '201901234567',
    uid,
    created_at: now.toISOString(),
    created_at_unixtime: String(Math.floor(now.getTime() / 1000)),
    ...overrides,
  }
}
