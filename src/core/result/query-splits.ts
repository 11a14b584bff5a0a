/*
 * The merchant's own query parameters. A callback_url or redirect_url may carry a query of its own
 * (`/fpx/callback?shop=42`); when the service sends its fields in the query string it appends them after it, and
 * signs only its own fields. Those leading parameters are unsigned: found without configuration, kept apart from
 * the signed fields, and handed to handlers as `unsignedQuery`.
 *
 * Forgery: anyone can prepend parameters to a genuine query, so nothing unsigned may look like a signed field. A
 * leading parameter named like a field the service sends (`transaction_amount`, `params[...]`) is never taken as
 * unsigned; a name in both parts is refused as a repeated field; unsigned parameters never enter `fields`.
 */
import { PAYMENT_FIELD_RULES } from './fields.js'

/** Names the service sends in results (spec "Events"), and the nested ones; never taken as the merchant's. */
const SERVICE_FIELD_NAMES: ReadonlySet<string> = new Set([...Object.keys(PAYMENT_FIELD_RULES), 'params', 'shipping_address', 'billing_address'])

/**
 * Names real results are known to carry that the spec does not list: the service's fields likely start at one of
 * them when no listed name comes first.
 */
const UNLISTED_SERVICE_NAMES: ReadonlySet<string> = new Set(['interface_name', 'interface_uid', 'id', 'name', 'bank', 'fpx_buyer_bank_branch', 'fpx_seller_order_no'])

/** At most this many leading parameters are taken as the merchant's own: real callback URLs carry one or two. */
export const MAX_UNSIGNED_QUERY_PARAMETERS = 8

/**
 * At most this many splits are tried, each one HMAC per candidate token: anyone can send a query of unknown names
 * with a made-up checksum, and this keeps it within about twice the cost of the same fields in a body.
 */
export const MAX_SPLITS_TRIED = 2

export function isServiceFieldName(name: string): boolean {
  const bracket = name.indexOf('[')
  return SERVICE_FIELD_NAMES.has(bracket < 0 ? name : name.slice(0, bracket))
}

/** A query component decoded as form text, or undefined when its escapes are malformed or not UTF-8. */
function decoded(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw.replaceAll('+', ' '))
  } catch {
    return undefined
  }
}

interface Pair {
  /** Where the pair ends in the text (its `&`, or the end). */
  readonly end: number
  readonly name: string | undefined
  readonly valueDecodes: boolean
}

/** The leading pairs of a query, up to and including the first with a service name (or the bound). */
function leadingPairs(text: string): Pair[] {
  const pairs: Pair[] = []
  let start = 0
  while (start < text.length && pairs.length <= MAX_UNSIGNED_QUERY_PARAMETERS) {
    const ampersand = text.indexOf('&', start)
    const end = ampersand < 0 ? text.length : ampersand
    if (end > start) {
      const pair = text.slice(start, end)
      const equals = pair.indexOf('=')
      const name = decoded(equals < 0 ? pair : pair.slice(0, equals))
      pairs.push({ end, name, valueDecodes: equals < 0 || decoded(pair.slice(equals + 1)) !== undefined })
      if (name !== undefined && (name === '' || isServiceFieldName(name))) break
    }
    start = end + 1
  }
  return pairs
}

export interface QuerySplit {
  /** The merchant's leading parameters, as query text. */
  readonly prefix: string
  /** The query after them: the service's fields. */
  readonly rest: string
}

/**
 * The places a query could split into the merchant's leading parameters and the service's fields: after each of
 * the first MAX_UNSIGNED_QUERY_PARAMETERS whose names are not the service's, likeliest first (the next name is one
 * the spec lists, then one real results carry), then the shortest; at most MAX_SPLITS_TRIED.
 */
export function querySplits(text: string): QuerySplit[] {
  const pairs = leadingPairs(text)
  const splits: { split: QuerySplit; likely: number }[] = []
  for (let i = 0; i < pairs.length - 1 && i < MAX_UNSIGNED_QUERY_PARAMETERS; i++) {
    const pair = pairs[i] as Pair
    if (pair.name === undefined || pair.name === '' || isServiceFieldName(pair.name)) break
    const next = (pairs[i + 1] as Pair).name
    const likely = next === undefined ? 0 : isServiceFieldName(next) ? 2 : UNLISTED_SERVICE_NAMES.has(next) ? 1 : 0
    splits.push({ split: { prefix: text.slice(0, pair.end), rest: text.slice(pair.end + 1) }, likely })
  }
  // Sorting is stable: among equally likely splits, the shortest prefix stays first.
  return splits
    .sort((a, b) => b.likely - a.likely)
    .slice(0, MAX_SPLITS_TRIED)
    .map(({ split }) => split)
}

/**
 * The URL's own leading parameters that do not decode (`?next=50%`, a Latin-1 `%E9`): the whole query then fails to
 * decode, so the query after the last of them is verified on its own. Looks only where the URL's own can stand;
 * undefined when none of those fails (then the value that does is the service's, and the refusal stands).
 */
export function undecodablePrefix(text: string): QuerySplit | undefined {
  let cut = -1
  for (const pair of leadingPairs(text).slice(0, MAX_UNSIGNED_QUERY_PARAMETERS)) {
    if (pair.name !== undefined && (pair.name === '' || isServiceFieldName(pair.name))) break
    if (pair.name === undefined || !pair.valueDecodes) cut = pair.end
  }
  return cut < 0 || cut + 1 >= text.length ? undefined : { prefix: text.slice(0, cut), rest: text.slice(cut + 1) }
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
    const name = decoded(equals < 0 ? pair : pair.slice(0, equals))
    const value = decoded(equals < 0 ? '' : pair.slice(equals + 1))
    if (name === undefined || value === undefined || name === '') break
    if (isServiceFieldName(name) || isSigned(name) || name in parameters) break
    parameters[name] = value
  }
  return Object.freeze(parameters)
}
