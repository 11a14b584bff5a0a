import type { DiagnosisKind, FieldInput } from '../../src/index.js'
import { messageChecksum } from '../../src/index.js'
import { encodeForm, samplePaymentFields, signCallback } from '../../src/testing.js'

/**
 * Genuine results, each altered on the way by one of the mistakes a diagnosis names (or checked with a token
 * copied with stray characters), for the public API's tests and the CLI's. Each says what the diagnosis must
 * name; none of them carries enough to forge anything.
 */
export const TOKEN = 'ab'.repeat(32)
const FORM = 'application/x-www-form-urlencoded'
const JSON_TYPE = 'application/json'

export interface DiagnosisCase {
  readonly name: string
  readonly kind: DiagnosisKind
  /** The body as it reached the receiver. */
  readonly body: string
  readonly contentType: string
  /** The Checksum Token as (mis)configured. */
  readonly token: string
  /** What the diagnosis's summary must say. */
  readonly says: readonly string[]
  /** The field the diagnosis must name, if any. */
  readonly field?: string
}

type Fields = Record<string, FieldInput>

function formWith(fields: Fields, change: (params: URLSearchParams) => void): string {
  const params = new URLSearchParams(signCallback(fields, TOKEN).body)
  change(params)
  return params.toString()
}

/** A JSON body of `fields` carrying the checksum signed over `signedFields`. */
function jsonSignedOver(signedFields: Fields, fields: Fields): string {
  return JSON.stringify({ ...fields, checksum: messageChecksum(signedFields, TOKEN) })
}

export function diagnosisCases(): DiagnosisCase[] {
  const sample = samplePaymentFields()
  const genuine = signCallback(sample, TOKEN).body
  const cases: DiagnosisCase[] = [
    { name: 'token with a zero-width space', kind: 'checksum_token', body: genuine, contentType: FORM, token: `${TOKEN}\u200b`, says: ['U+200B ZERO WIDTH SPACE at the end'] },
    { name: 'token with a trailing space', kind: 'checksum_token', body: genuine, contentType: FORM, token: `${TOKEN} `, says: ['whitespace (U+0020 SPACE at the end)'] },
    { name: 'token with a BOM and a newline', kind: 'checksum_token', body: genuine, contentType: FORM, token: `\ufeff${TOKEN}\n`, says: ['U+FEFF BYTE ORDER MARK', 'at the start', 'U+000A LINE FEED at the end'] },
    { name: 'token in quotes', kind: 'checksum_token', body: genuine, contentType: FORM, token: `"${TOKEN}"`, says: ['quotes (" and " around it)'] },
  ]

  // A hand-built form that left the "+" of the phone number unencoded: a form reader makes it a space.
  cases.push({
    name: '"+" written unencoded',
    kind: 'plus_and_space',
    body: genuine.replace('buyer_phone=%2B', 'buyer_phone=+'),
    contentType: FORM,
    token: TOKEN,
    says: ['read as "+"', 'instead of %2B'],
  })
  const spaced = samplePaymentFields({ buyer_name: 'Siti Hajar' })
  cases.push({
    name: 'spaces arriving as "+" in JSON',
    kind: 'plus_and_space',
    body: jsonSignedOver(spaced, { ...spaced, buyer_name: 'Siti+Hajar' }),
    contentType: JSON_TYPE,
    token: TOKEN,
    says: ['"buyer_name" read as a space'],
    field: 'buyer_name',
  })
  const named = samplePaymentFields({ buyer_name: 'Ali' })
  cases.push({
    name: 'whitespace added around a value',
    kind: 'values_trimmed',
    body: formWith(named, (params) => params.set('buyer_name', ' Ali ')),
    contentType: FORM,
    token: TOKEN,
    says: ['"buyer_name" trimmed'],
    field: 'buyer_name',
  })
  const empty = samplePaymentFields({ merchant_reference_number: '' })
  cases.push({
    name: 'an empty value written as null',
    kind: 'null_text',
    body: formWith(empty, (params) => params.set('merchant_reference_number', 'null')),
    contentType: FORM,
    token: TOKEN,
    says: ['"merchant_reference_number" empty instead of the text "null"'],
    field: 'merchant_reference_number',
  })
  cases.push({
    name: 'amounts re-serialised as JSON numbers',
    kind: 'amount_format',
    body: jsonSignedOver(sample, { ...sample, transaction_amount: 100.2, transaction_amount_received: 100.2 }),
    contentType: JSON_TYPE,
    token: TOKEN,
    says: ['"transaction_amount", "transaction_amount_received" written with two decimals'],
  })
  cases.push({
    name: 'booleans written as 1 by a PHP framework',
    kind: 'boolean_format',
    body: formWith(sample, (params) => {
      params.set('payment_status', '1')
      params.set('fpx_status', '1')
    }),
    contentType: FORM,
    token: TOKEN,
    says: ['"payment_status", "fpx_status" written as true/false'],
  })
  const nested = samplePaymentFields({ params: { reference1: 'A', reference2: 'B' } })
  cases.push({
    name: 'nested keys re-ordered',
    kind: 'nested_key_order',
    body: jsonSignedOver(nested, { ...nested, params: { reference2: 'B', reference1: 'A' } }),
    contentType: JSON_TYPE,
    token: TOKEN,
    says: ['the keys of "params" in name order'],
  })
  cases.push({
    name: 'params signed as JSON text',
    kind: 'rendering',
    body: jsonSignedOver({ ...nested, params: '{"reference1":"A","reference2":"B"}' }, nested),
    contentType: JSON_TYPE,
    token: TOKEN,
    says: ['"params" signed as JSON text'],
  })
  cases.push({
    name: 'params arriving as JSON text',
    kind: 'rendering',
    body: encodeForm({ ...nested, params: '{"reference1":"A","reference2":"B"}', checksum: messageChecksum(nested, TOKEN) }),
    contentType: FORM,
    token: TOKEN,
    says: ['"params" signed as nested fields'],
  })
  cases.push({
    name: 'a field added after signing',
    kind: 'field_added',
    body: `${genuine}&utm_source=newsletter`,
    contentType: FORM,
    token: TOKEN,
    says: ['field "utm_source" left out'],
    field: 'utm_source',
  })
  cases.push({
    name: 'an empty field dropped',
    kind: 'field_dropped',
    body: formWith(empty, (params) => params.delete('merchant_reference_number')),
    contentType: FORM,
    token: TOKEN,
    says: ['between "merchant_name" and "order_number"', 'probably "merchant_reference_number"'],
    field: 'merchant_reference_number',
  })
  return cases
}

/** A genuine result whose amount was changed: nothing explains it. */
export function alteredBody(): string {
  return signCallback(samplePaymentFields(), TOKEN).body.replace('transaction_amount=100.20', 'transaction_amount=1.00')
}
