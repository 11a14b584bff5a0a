import { randomBytes, randomInt, randomUUID } from 'node:crypto'

const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'
const ALPHANUMERIC = `${LETTERS}abcdefghijklmnopqrstuvwxyz0123456789`

/**
 * The service's reference numbers (exchange_number, equal to merchant_reference_number) and payment-session
 * slugs: five capital letters and the 10-digit Unix time in seconds, as in its documentation's
 * `ULDYE1656661277` and `GSHJD1664332374` (docs/emulator.md).
 */
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

/** Five random capital letters and `at` in Unix seconds (zero-padded to ten digits). */
export function referenceNumber(at: Date): string {
  return pick(LETTERS, 5) + String(Math.max(0, Math.floor(at.getTime() / 1000))).padStart(10, '0').slice(-10)
}

/**
 * A reference for `at` that `taken` does not know yet. Within one second 26^5 (11.8 million) letter
 * combinations remain, so a collision only costs another draw; the bound turns a clock stuck on a full second
 * into an error instead of a hang.
 */
export function uniqueReference(at: Date, taken: (value: string) => boolean): string {
  for (let attempt = 0; attempt < 1000; attempt++) {
    const value = referenceNumber(at)
    if (!taken(value)) return value
  }
  throw new Error('no unused reference number left for this second')
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
