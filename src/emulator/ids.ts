import { randomBytes, randomInt, randomUUID } from 'node:crypto'

const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'
const ALPHANUMERIC = `${LETTERS}abcdefghijklmnopqrstuvwxyz0123456789`

/** The service's reference numbers (merchant_reference_number, exchange_number): five capital letters, ten digits. */
export const REFERENCE_PATTERN = /^[A-Z]{5}\d{10}$/
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
export const AUTH_TOKEN_PATTERN = /^[A-Za-z0-9]{20}$/
export const CHECKSUM_TOKEN_PATTERN = /^[0-9a-f]{64}$/

function pick(alphabet: string, count: number): string {
  let text = ''
  for (let i = 0; i < count; i++) text += alphabet[randomInt(alphabet.length)]
  return text
}

export function randomDigits(count: number): string {
  return pick('0123456789', count)
}

export function referenceNumber(): string {
  return pick(LETTERS, 5) + randomDigits(10)
}

export function newUid(): string {
  return randomUUID()
}

export function newAuthToken(): string {
  return pick(ALPHANUMERIC, 20)
}

export function newChecksumToken(): string {
  return randomBytes(32).toString('hex')
}

export function newPartnerUid(): string {
  return `partner-${randomBytes(6).toString('hex')}`
}

/** Session slugs and other opaque identifiers that end up in URLs. */
export function newSlug(): string {
  return randomBytes(12).toString('base64url')
}
