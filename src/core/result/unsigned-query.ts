import { asciiBytes, type RawDelivery } from './body.js'
import { PAYMENT_FIELD_RULES } from './fields.js'
import { ReceiverError } from './errors.js'
import { decodeForm } from './form.js'
import { Message, toMessage } from './message.js'
import type { ReceivedFields } from './received-fields.js'
import { type Shape, ShapeCache, type SuffixShape } from './shape.js'
import type { FieldValue } from '../values.js'

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
export const MAX_UNSIGNED_QUERY_PARAMETERS = 8

export function isServiceFieldName(name: string): boolean {
  const bracket = name.indexOf('[')
  return SERVICE_FIELD_NAMES.has(bracket < 0 ? name : name.slice(0, bracket))
}

/** A query component decoded as form text, or undefined when its escapes are malformed or not UTF-8. */
export function decodeName(raw: string): string | undefined {
  // Most names hold neither `+` nor `%`: then there is nothing to decode (each call was a tenth of a µs).
  const spaced = raw.includes('+') ? raw.replaceAll('+', ' ') : raw
  if (!spaced.includes('%')) return spaced
  try {
    return decodeURIComponent(spaced)
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

/** A place the query could split into the merchant's leading parameters and the service's fields. */
interface Split {
  /** Index of the `&` that ends the leading parameters. */
  readonly end: number
  /** The leading parameters' names, decoded. */
  readonly names: readonly string[]
  /**
   * How likely the service's fields start right after it: 2 when the next parameter has a name the spec lists
   * (only the last split can), 1 when one real results are known to carry, else 0.
   */
  readonly likely: number
}

/**
 * Names real results are known to carry that the spec does not list (issue 21 names them; the emulator sends
 * interface_name and interface_uid too): a split before one is likelier than one before an unknown name.
 */
const UNLISTED_SERVICE_NAMES: ReadonlySet<string> = new Set([
  'interface_name',
  'interface_uid',
  'id',
  'name',
  'bank',
  'fpx_buyer_bank_branch',
  'fpx_seller_order_no',
])

/** The splits after each leading parameter that could be the merchant's (never one with a service name). */
function candidateSplits(text: string): Split[] {
  const splits: { end: number; names: string[] }[] = []
  const names: string[] = []
  let start = 0
  let next: string | undefined
  while (start < text.length) {
    const ampersand = text.indexOf('&', start)
    const end = ampersand < 0 ? text.length : ampersand
    if (end > start) {
      const equals = text.indexOf('=', start)
      const name = decodeName(text.slice(start, equals >= 0 && equals < end ? equals : end))
      next = name
      if (name === undefined || name === '' || isServiceFieldName(name) || splits.length === MAX_UNSIGNED_QUERY_PARAMETERS) break
      names.push(name)
      splits.push({ end, names: names.slice() })
    }
    if (ampersand < 0) break
    start = ampersand + 1
  }
  // Whether the parameter after each split has a name the service sends: the next split's last name, or the name
  // the scan stopped at.
  return splits.map((split, i) => {
    const after = i + 1 < splits.length ? (splits[i + 1] as { names: string[] }).names[i + 1] : next
    const likely = after === undefined ? 0 : isServiceFieldName(after) ? 2 : UNLISTED_SERVICE_NAMES.has(after) ? 1 : 0
    // Not `{ ...split, likely }`: object spread took most of a µs per split on Node 20, more than the rest together.
    return { end: split.end, names: split.names, likely }
  })
}

export interface SignedSuffix {
  /** The merchant's leading parameters, as query text. */
  readonly prefix: string
  /**
   * How many leading fields of the whole message it leaves out, when its message is a view of the whole's (a flat
   * message): its signed string is then the whole's without their values (split-signing.ts). Else undefined.
   */
  readonly skip: number | undefined
  /** The message of the service's own fields; decoded at the first call when it is not a view. */
  message(): Message
}

/**
 * At most this many splits are tried. Each costs an HMAC over nearly the whole message, and anyone can send a
 * query of unknown names with a made-up checksum: this keeps such a request within about twice the cost of the
 * same fields in a body (bench/query-fields.ts). The split where the service's fields most likely start is tried
 * first, so a URL with up to MAX_UNSIGNED_QUERY_PARAMETERS parameters of its own is still found when the service's
 * first field is one the spec lists, and one with a single parameter of its own nearly always: not when the
 * service's first name is new and an UNLISTED_SERVICE_NAMES one follows it before a listed one (two likelier
 * splits take both tries; docs/operations-limits.md).
 */
export const MAX_SPLITS_TRIED = 2

/** The fields of a flat message from position `skip` on: a view, nothing decoded again. */
class SuffixFields implements ReceivedFields {
  readonly layout = 'flat'

  constructor(
    private readonly whole: ReceivedFields,
    private readonly shape: SuffixShape,
    private readonly skip: number,
  ) {}

  get names(): readonly string[] {
    return this.shape.names
  }

  value(i: number): FieldValue {
    return this.whole.value(i + this.skip)
  }

  signedBytes(order: readonly number[]): Buffer | undefined {
    const inWhole = order === this.shape.signedOrder ? this.shape.wholeSignedOrder : order.map((position) => position + this.skip)
    return this.whole.signedBytes?.(inWhole)
  }
}

/** The shape of the fields after the first `skip` of `shape`: derived (no sorting), kept on the whole shape. */
function suffixShape(shape: Shape, skip: number): SuffixShape {
  const kept = (shape.suffixes ??= new Map()).get(skip)
  if (kept !== undefined) return kept
  const names = shape.names.slice(skip)
  const signedOrder: number[] = []
  const wholeSignedOrder: number[] = []
  for (const position of shape.signedOrder)
    if (position >= skip) {
      signedOrder.push(position - skip)
      wholeSignedOrder.push(position)
    }
  const index: Record<string, number> = Object.create(null)
  names.forEach((name, position) => (index[name] = position))
  // The whole message has no repeated name, or it would not have got this far.
  const derived: SuffixShape = { names, signedOrder, wholeSignedOrder, index, repeatedName: undefined, expected: undefined }
  // At most MAX_UNSIGNED_QUERY_PARAMETERS per shape, and shapes are few (ShapeCache): bounded.
  shape.suffixes.set(skip, derived)
  return derived
}

/** The message of the fields after the first `skip` of a flat message: a view of it. */
function suffixMessage(whole: Message, skip: number): Message {
  const shape = suffixShape(whole.shape, skip)
  return new Message(new SuffixFields(whole.fields, shape, skip), shape)
}

/** Whether `whole` lists `names` first, in order: then a split's message is a view of it. */
function startsWith(whole: Message, names: readonly string[]): boolean {
  if (whole.hasNestedValues || whole.fields.layout !== 'flat') return false
  return names.every((name, i) => whole.names[i] === name)
}

/**
 * The splits of a query into the merchant's leading parameters and the service's fields after them, each with
 * the message of the part that would be signed: the likeliest first, then the shortest, at most MAX_SPLITS_TRIED.
 * The caller checks each against the checksum and stops at the first match (at most one can match); a message is
 * only made when asked for. `whole` is the message of the whole query, whose fields a split's message reuses.
 */
export function signedSuffixes(text: string, whole: Message): SignedSuffix[] {
  const splits = candidateSplits(text).filter((split) => split.end + 1 < text.length)
  // Likeliest first; among equals, the shortest prefix first (sort is stable).
  const ordered = splits.sort((a, b) => b.likely - a.likely).slice(0, MAX_SPLITS_TRIED)
  let bytes: Buffer | undefined | null = null
  return ordered.map((split): SignedSuffix => {
    const prefix = text.slice(0, split.end)
    if (startsWith(whole, split.names)) {
      const skip = split.names.length
      return { prefix, skip, message: () => suffixMessage(whole, skip) }
    }
    // A nested message (params[...]) is grouped differently without its leading parameters: decoded afresh, its
    // shape kept in a cache of its own (forged queries reach this point unauthenticated). Only when tried: a split
    // after the one that matched is never decoded, so its errors cannot refuse the match.
    let decoded: Message | undefined
    return {
      prefix,
      skip: undefined,
      message: () => {
        if (bytes === null) bytes = asciiBytes(text)
        decoded ??= toMessage(decodeForm(text.slice(split.end + 1), bytes?.subarray(split.end + 1)), new ShapeCache(1))
        return decoded
      },
    }
  })
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
