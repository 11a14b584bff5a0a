import { isAscii, isUtf8 } from 'node:buffer'
import { quotedName, ReceiverError } from './errors.js'
import { decodeForm, type ExpectedNames } from './form.js'
import { findRepeatedJsonKey } from './json-keys.js'
import { listedFields, type ReceivedFields } from './received-fields.js'
import { type FieldValue, MAX_NESTING_DEPTH, type NestedFields } from '../values.js'

/** What a delivery carries, as an adapter hands it over: the exact bytes, never a parsed object. */
export interface RawDelivery {
  /** The raw request body. A string is taken as already-decoded UTF-8 text. */
  body?: Uint8Array | ArrayBuffer | string | null
  /**
   * For adapters: reads the body when `body` is not given, at most `maxBytes` of it. It should fail with an
   * error whose `status` (or `statusCode`) is 413 past the limit, as raw-body does.
   */
  readBody?: (maxBytes: number) => Promise<Uint8Array | string>
  /**
   * For adapters: the framework body parser that already consumed the request stream without keeping the raw
   * bytes, such as "express.urlencoded() (body-parser)". Verification is then impossible and the error says so.
   */
  consumedBy?: string
  /**
   * For adapters, with `consumedBy`: what the app can do instead, in its framework's terms. Default: mount the
   * route before the body parser, or make the parser keep the raw body (`req.rawBody`, `ctx.request.rawBody`).
   */
  consumedAdvice?: string
  /** The Content-Type header. */
  contentType?: string | null
  /**
   * The Content-Encoding header. Anything but `identity` (or none) is refused with 415 `unsupported_encoding`
   * before the body is read: the service sends plain bodies, and the signed bytes are the plain ones.
   */
  contentEncoding?: string | null
  /** The raw query string (with or without `?`) or parsed search params; used only when the body is empty. */
  query?: string | URLSearchParams | null
}

export const DEFAULT_MAX_BODY_BYTES = 64 * 1024
/** How long a body may take to arrive in full before 408 `body_timeout`. */
export const DEFAULT_BODY_TIMEOUT_MS = 30_000

const FORM = 'application/x-www-form-urlencoded'
const JSON_TYPE = 'application/json'
/** The media types a delivery's body may have: anything else is refused (415 unsupported_media_type). */
export const DELIVERY_MEDIA_TYPES = [FORM, JSON_TYPE] as const
const ALREADY_PARSED_HELP =
  'The request body reached fpx-collect as an already-parsed object, so the exact bytes the service signed are gone. ' +
  'Mount the payment route before any body parser (express.urlencoded(), express.json(), koa-bodyparser, ...), ' +
  "or hand over the raw bytes (for example express.raw({ type: 'application/x-www-form-urlencoded' }) and req.body as a Buffer)."

const NODE_PARSER_ADVICE =
  'Mount the fpx-collect route before that body parser (or limit the parser to other routes), ' +
  'or make it keep the raw body as req.rawBody / ctx.request.rawBody.'

/**
 * Resolves `readBody` and `consumedBy` into a plain `body`. Separate from readFields so that deliveries that
 * come with their bytes (the common case) stay on a synchronous path.
 */
export async function loadBody(delivery: RawDelivery, maxBodyBytes: number, timeoutMs = DEFAULT_BODY_TIMEOUT_MS): Promise<RawDelivery> {
  checkEncoding(delivery.contentEncoding)
  if (delivery.body !== undefined && delivery.body !== null) return delivery
  if (delivery.consumedBy !== undefined)
    throw new ReceiverError(
      'body_already_parsed',
      `The request body was already read by ${delivery.consumedBy}, which kept no raw copy, so the exact bytes the service ` +
        `signed are gone. ${delivery.consumedAdvice ?? NODE_PARSER_ADVICE}`,
    )
  if (delivery.readBody === undefined) return delivery
  try {
    return { ...delivery, body: await withinTime(delivery.readBody(maxBodyBytes), timeoutMs) }
  } catch (error) {
    const status = (error as { status?: unknown; statusCode?: unknown }).status ?? (error as { statusCode?: unknown }).statusCode
    if (status === 413) throw tooLarge(maxBodyBytes)
    if (status === 408) throw bodyTimeout(timeoutMs)
    throw new ReceiverError('malformed_body', 'the request body could not be read (the connection was aborted or the length was wrong)', {
      cause: error,
    })
  }
}

/** An error with `status` 408, as adapters that read the body themselves report a body that took too long. */
export function bodyTimeoutError(): Error {
  return Object.assign(new Error('the request body did not arrive in time'), { status: 408, statusCode: 408 })
}

function bodyTimeout(timeoutMs: number): ReceiverError {
  return new ReceiverError('body_timeout', `the request body did not arrive in full within ${timeoutMs} ms`)
}

/**
 * `reading`, or a 408 error once `timeoutMs` passed: a body trickled a byte at a time must not hold a connection
 * (and the receiver's attention) for minutes. The read that lost the race is left to end with the connection,
 * which the 408 answer closes; its late failure is expected and ignored.
 */
export function withinTime<T>(reading: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(bodyTimeoutError()), timeoutMs)
    timer.unref()
  })
  reading.catch(() => undefined)
  return Promise.race([reading, late]).finally(() => clearTimeout(timer))
}

/** Throws 415 `unsupported_encoding` for any Content-Encoding but identity (absent is identity). */
export function checkEncoding(contentEncoding: string | null | undefined): void {
  if (contentEncoding === undefined || contentEncoding === null) return
  const codings = contentEncoding.split(',').map((coding) => coding.trim().toLowerCase()).filter((coding) => coding !== '')
  const other = codings.find((coding) => coding !== 'identity')
  if (other === undefined) return
  throw new ReceiverError(
    'unsupported_encoding',
    `content encoding "${other.slice(0, 40)}" is not supported; the service sends plain bodies (no Content-Encoding, or identity)`,
  )
}

function byteView(body: Uint8Array | ArrayBuffer): Buffer {
  // Adapters nearly always hand over a Buffer: a new view of it per delivery would only feed the GC.
  if (Buffer.isBuffer(body)) return body
  return body instanceof ArrayBuffer
    ? Buffer.from(body)
    : Buffer.from(body.buffer, body.byteOffset, body.byteLength)
}

/** The body as text, and its bytes when they are ASCII (so text offsets are byte offsets). */
function bodyText(bytes: Buffer): { text: string; ascii: Buffer | undefined } {
  // latin1 is the cheapest decoding and is exact for ASCII, which is what form bodies almost always are.
  if (isAscii(bytes)) return { text: bytes.toString('latin1'), ascii: bytes }
  if (isUtf8(bytes)) return { text: bytes.toString('utf8'), ascii: undefined }
  throw new ReceiverError('invalid_encoding', 'the body is not valid UTF-8')
}

const PLAIN_FORM = { type: FORM, charset: undefined }

function mediaType(contentType: string | null | undefined): { type: string; charset: string | undefined } {
  if (contentType === FORM) return PLAIN_FORM
  if (!contentType) return { type: '', charset: undefined }
  const [type = '', ...parameters] = contentType.split(';')
  let charset: string | undefined
  for (const parameter of parameters) {
    const [key, value] = parameter.split('=')
    if (key?.trim().toLowerCase() === 'charset' && value !== undefined)
      charset = value.trim().replace(/^"|"$/g, '').toLowerCase()
  }
  return { type: type.trim().toLowerCase(), charset }
}

function fromJsonValue(value: unknown, depth: number): FieldValue {
  if (value === null || typeof value !== 'object') return value as FieldValue
  if (depth >= MAX_NESTING_DEPTH)
    throw new ReceiverError('malformed_body', `the JSON body is nested more than ${MAX_NESTING_DEPTH} levels deep`)
  if (Array.isArray(value)) return value.map((item) => fromJsonValue(item, depth + 1))
  const map: NestedFields = new Map()
  for (const key of Object.keys(value)) map.set(key, fromJsonValue((value as Record<string, unknown>)[key], depth + 1))
  return map
}

function decodeJson(text: string): ReceivedFields {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw new ReceiverError('malformed_body', 'the body is not valid JSON')
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new ReceiverError('malformed_body', 'the JSON body must be an object of fields')
  const repeated = findRepeatedJsonKey(text)
  if (repeated !== undefined)
    throw new ReceiverError('duplicate_field', `field ${quotedName(repeated)} is given more than once`, { fields: [repeated] })
  const names = Object.keys(parsed)
  if (names.includes('')) throw new ReceiverError('invalid_field_name', 'the JSON body has a field with an empty name')
  const values = names.map((name) => fromJsonValue((parsed as Record<string, unknown>)[name], 1))
  const nested = values.some((value) => typeof value === 'object' && value !== null) || names.some((name) => name.includes('['))
  return listedFields(names, values, nested ? 'nested' : 'flat')
}

function decodeQuery(query: string | URLSearchParams, expected?: ExpectedNames): ReceivedFields {
  const text = typeof query === 'string' ? (query.startsWith('?') ? query.slice(1) : query) : query.toString()
  return decodeForm(text, asciiBytes(text), expected)
}

/**
 * The bytes of form text that is all ASCII (as a query string nearly always is), for the form scan's fast path
 * that writes the signed string straight from them, as it does for a body; undefined otherwise.
 */
export function asciiBytes(text: string): Buffer | undefined {
  // Any other character takes two or more bytes in UTF-8.
  return Buffer.byteLength(text, 'utf8') === text.length ? Buffer.from(text, 'latin1') : undefined
}

function isEmptyQuery(query: RawDelivery['query']): query is null | undefined {
  if (query === null || query === undefined) return true
  return typeof query === 'string' ? query === '' || query === '?' : query.size === 0
}

/**
 * Reads the fields of a delivery from its body, or from its query string when the body is empty. `expected`:
 * the names the previous form body had (see FormFields).
 */
export function readFields(delivery: RawDelivery, maxBodyBytes: number, expected?: ExpectedNames): ReceivedFields {
  checkEncoding(delivery.contentEncoding)
  const { body, query } = delivery
  let text = ''
  let ascii: Buffer | undefined
  if (body === null || body === undefined || body === '') {
    text = ''
  } else if (typeof body === 'string') {
    if (body.length > maxBodyBytes || Buffer.byteLength(body) > maxBodyBytes) throw tooLarge(maxBodyBytes)
    text = body
  } else if (body instanceof Uint8Array || body instanceof ArrayBuffer) {
    if (body.byteLength > maxBodyBytes) throw tooLarge(maxBodyBytes)
    if (body.byteLength > 0) ({ text, ascii } = bodyText(byteView(body)))
  } else {
    throw new ReceiverError('body_already_parsed', ALREADY_PARSED_HELP)
  }

  if (text === '') {
    if (isEmptyQuery(query)) throw new ReceiverError('empty_body', 'the delivery has no body and no query string')
    return decodeQuery(query, expected)
  }

  const { type, charset } = mediaType(delivery.contentType)
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8' && charset !== 'us-ascii')
    throw new ReceiverError('unsupported_media_type', `charset "${charset}" is not supported; send UTF-8`)
  if (type === FORM) return decodeForm(text, ascii, expected)
  if (type === JSON_TYPE) return decodeJson(text)
  throw new ReceiverError(
    'unsupported_media_type',
    `content type "${type || '(none)'}" is not supported; expected ${FORM} or ${JSON_TYPE}`,
  )
}

function tooLarge(maxBodyBytes: number): ReceiverError {
  return new ReceiverError('body_too_large', `the body is larger than ${maxBodyBytes} bytes`)
}
