import type { RawDelivery } from './body.js'
import { PAYMENT_FIELD_RULES } from './fields.js'
import { ReceiverError } from './errors.js'
import { decodeForm } from './form.js'
import { type Message, toMessage } from './message.js'
import type { ShapeCache } from './shape.js'

/**
 * The merchant's own query parameters. A callback_url or redirect_url may carry a query of its own
 * (`/fpx/callback?shop=42`, `?securepay_return=1`); when the service sends its fields in the query string it
 * appends them after it, and it signs only its own fields. Those leading parameters are unsigned: they are found
 * without configuration, kept apart from the signed fields, and handed to handlers as `unsignedQuery`.
 *
 * Forgery: anyone can prepend parameters to a genuine query, so nothing unsigned may look like a signed field.
 * A leading parameter whose name is a field the service sends (`transaction_amount`, `params[...]`, ...) is never
 * taken as unsigned, so it stays in the signed fields and the checksum fails; a name in both parts is refused
 * as a repeated field before any of this runs; and unsigned parameters never enter `fields` or `payment`.
 */

/** Names the service sends in results (spec "Events"), and the nested ones; never taken as the merchant's. */
const SERVICE_FIELD_NAMES: ReadonlySet<string> = new Set([
  ...Object.keys(PAYMENT_FIELD_RULES),
  'params',
  'shipping_address',
  'billing_address',
])

/**
 * At most this many leading parameters are tried as the merchant's own: each try is one HMAC per candidate
 * Checksum Token, and real callback URLs carry one or two.
 */
const MAX_UNSIGNED_QUERY_PARAMETERS = 8

function isServiceFieldName(name: string): boolean {
  const bracket = name.indexOf('[')
  return SERVICE_FIELD_NAMES.has(bracket < 0 ? name : name.slice(0, bracket))
}

function decodeName(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw.replaceAll('+', ' '))
  } catch {
    return undefined
  }
}

/** The query of a delivery as text without `?`, or '' when it has none. */
export function queryText(query: RawDelivery['query']): string {
  if (query === null || query === undefined) return ''
  const text = typeof query === 'string' ? query : query.toString()
  return text.startsWith('?') ? text.slice(1) : text
}

/** Whether the fields of a delivery come from its query string (the body reader makes the same choice). */
export function bodyIsEmpty(body: RawDelivery['body']): boolean {
  if (body === null || body === undefined || body === '') return true
  return (body instanceof Uint8Array || body instanceof ArrayBuffer) && body.byteLength === 0
}

/**
 * The query text whose leading parameters handlers may read as unsigned, for a delivery whose fields came in the
 * body (then the whole query is the merchant's); undefined when there is none. Cheap: no parsing until read.
 */
export function queryBesideBody(delivery: RawDelivery): string | undefined {
  const { query } = delivery
  if (query === null || query === undefined || query === '' || bodyIsEmpty(delivery.body)) return undefined
  const text = queryText(query)
  return text === '' ? undefined : text
}

/** Where each leading parameter that could be the merchant's ends (index of its `&`, or the text's length). */
function candidateEnds(text: string): number[] {
  const ends: number[] = []
  let start = 0
  while (start < text.length && ends.length < MAX_UNSIGNED_QUERY_PARAMETERS) {
    const ampersand = text.indexOf('&', start)
    const end = ampersand < 0 ? text.length : ampersand
    if (end > start) {
      const equals = text.indexOf('=', start)
      const name = decodeName(text.slice(start, equals >= 0 && equals < end ? equals : end))
      if (name === undefined || name === '' || isServiceFieldName(name)) break
      ends.push(end)
    }
    if (ampersand < 0) break
    start = ampersand + 1
  }
  return ends
}

export interface SignedSuffix {
  /** The message of the service's own fields. */
  readonly message: Message
  /** The merchant's leading parameters, as query text. */
  readonly prefix: string
}

/**
 * The splits of a query into the merchant's leading parameters and the service's fields after them, shortest
 * prefix first, each as the message of the part that would be signed. The caller checks each against the
 * checksum and stops at the first match (at most one can match).
 */
export function* signedSuffixes(text: string, shapes: ShapeCache): Generator<SignedSuffix> {
  for (const end of candidateEnds(text)) {
    const suffix = text.slice(end + 1)
    if (suffix === '') return
    yield { message: toMessage(decodeForm(suffix), shapes), prefix: text.slice(0, end) }
  }
}

const NO_PARAMETERS: Readonly<Record<string, string>> = Object.freeze(Object.create(null) as Record<string, string>)

/**
 * The merchant's parameters: the leading run of the query whose names are not the service's, not signed fields of
 * this message and not repeated, decoded as form text; it stops at the first that is, or that does not decode.
 * Prototype-free and frozen.
 */
export function readUnsignedQuery(text: string | undefined, isSigned: (name: string) => boolean): Readonly<Record<string, string>> {
  if (text === undefined || text === '') return NO_PARAMETERS
  const parameters: Record<string, string> = Object.create(null)
  for (const pair of text.split('&')) {
    if (pair === '') continue
    const equals = pair.indexOf('=')
    const name = decodeName(equals < 0 ? pair : pair.slice(0, equals))
    const value = decodeName(equals < 0 ? '' : pair.slice(equals + 1))
    if (name === undefined || value === undefined || name === '') break
    if (isServiceFieldName(name) || isSigned(name) || name in parameters) break
    parameters[name] = value
  }
  return Object.freeze(parameters)
}

/**
 * A repeated name in fields that came in the query string is most often the URL's own parameter sharing a name
 * with one of the service's fields: the refusal says so. Other errors pass unchanged.
 */
export function withQueryHint(delivery: RawDelivery, error: unknown): unknown {
  if (!(error instanceof ReceiverError) || error.code !== 'duplicate_field' || !bodyIsEmpty(delivery.body)) return error
  return new ReceiverError(
    'duplicate_field',
    `${error.message}. The fields came in the query string: if the callback or redirect URL has a query parameter of ` +
      "its own with this name, rename it, because the service appends its fields after the URL's own parameters and " +
      'a name in both is ambiguous',
    { fields: error.fields ?? [] },
  )
}
