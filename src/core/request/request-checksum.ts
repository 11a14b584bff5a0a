import { assertChecksumToken } from '../checksum-token.js'
import { hmacSha256HexSync } from '../crypto.js'

/** The fields signed when creating a payment (spec, Authentication 5), in their fixed order. */
export interface PaymentRequestChecksumFields {
  buyer_email: string
  buyer_name: string
  buyer_phone: string
  callback_url?: string | null
  order_number: string
  product_description: string
  redirect_url?: string | null
  transaction_amount: string
  uid: string
}

const REQUEST_FIELD_ORDER = [
  'buyer_email',
  'buyer_name',
  'buyer_phone',
  'callback_url',
  'order_number',
  'product_description',
  'redirect_url',
  'transaction_amount',
  'uid',
] as const satisfies ReadonlyArray<keyof PaymentRequestChecksumFields>

const OPTIONAL_REQUEST_FIELDS: ReadonlySet<string> = new Set(['callback_url', 'redirect_url'])

/** The `checksum` of a payment request: the nine fields in fixed order, absent URLs as empty segments. */
export function requestChecksum(fields: PaymentRequestChecksumFields, checksumToken: string): string {
  assertChecksumToken(checksumToken)
  const parts = REQUEST_FIELD_ORDER.map((name) => {
    const value = fields[name]
    if (value === undefined || value === null) {
      if (OPTIONAL_REQUEST_FIELDS.has(name)) return ''
      throw new TypeError(`requestChecksum: field "${name}" is required`)
    }
    if (typeof value !== 'string') throw new TypeError(`requestChecksum: field "${name}" must be text`)
    return value
  })
  return hmacSha256HexSync(checksumToken, parts.join('|'))
}
