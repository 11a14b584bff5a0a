import { decodeName, isServiceFieldName, MAX_UNSIGNED_QUERY_PARAMETERS } from './unsigned-query.js'

/**
 * The URL's own leading query parameters that do not decode. A callback_url such as `/cb?next=50%` or
 * `?q=caf%E9` (a raw `%`, a Latin-1 escape) passes new URL() and the client, and the service appends its fields
 * after it; but the whole query then fails to decode before any split into the URL's part and the service's is
 * tried, and every result for that payment would be refused. The service signs none of the URL's own
 * parameters, so the query after the last of them that does not decode is verified on its own.
 */
export interface UndecodablePrefix {
  /** The leading parameters up to and including the last one that does not decode, as query text. */
  readonly prefix: string
  /** The query after them: the service's fields, maybe behind more parameters of the URL's own. */
  readonly rest: string
}

/**
 * Where the query continues after its leading parameters that do not decode, looking only where the URL's own
 * can stand (unsigned-query.ts): among the first MAX_UNSIGNED_QUERY_PARAMETERS, before any name the service sends.
 * Undefined when none of those fails to decode: the value that does is then the service's, and the refusal stands.
 */
export function undecodablePrefix(text: string): UndecodablePrefix | undefined {
  let cut = -1
  let count = 0
  let start = 0
  while (start < text.length && count < MAX_UNSIGNED_QUERY_PARAMETERS) {
    const ampersand = text.indexOf('&', start)
    const end = ampersand < 0 ? text.length : ampersand
    if (end > start) {
      count++
      const equals = text.indexOf('=', start)
      const hasValue = equals >= 0 && equals < end
      const name = decodeName(text.slice(start, hasValue ? equals : end))
      if (name !== undefined && (name === '' || isServiceFieldName(name))) break
      if (name === undefined || (hasValue && decodeName(text.slice(equals + 1, end)) === undefined)) cut = end
    }
    if (ampersand < 0) break
    start = ampersand + 1
  }
  return cut < 0 || cut + 1 >= text.length ? undefined : { prefix: text.slice(0, cut), rest: text.slice(cut + 1) }
}
