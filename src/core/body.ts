import { isAscii, isUtf8 } from 'node:buffer'
import { ReceiverError } from './errors.js'
import { decodeForm, type ExpectedNames } from './form.js'
import { findRepeatedJsonKey } from './json-keys.js'
import { listedFields, type ReceivedFields } from './received-fields.js'
import { type FieldValue, MAX_NESTING_DEPTH, type NestedFields } from './values.js'

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
  /** The raw query string (with or without `?`) or parsed search params; used only when the body is empty. */
  query?: string | URLSearchParams | null
}

export const DEFAULT_MAX_BODY_BYTES = 64 * 1024

const FORM = 'application/x-www-form-urlencoded'
const JSON_TYPE = 'application/json'
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
export async function loadBody(delivery: RawDelivery, maxBodyBytes: number): Promise<RawDelivery> {
  if (delivery.body !== undefined && delivery.body !== null) return delivery
  if (delivery.consumedBy !== undefined)
    throw new ReceiverError(
      'body_already_parsed',
      `The request body was already read by ${delivery.consumedBy}, which kept no raw copy, so the exact bytes the service ` +
        `signed are gone. ${delivery.consumedAdvice ?? NODE_PARSER_ADVICE}`,
    )
  if (delivery.readBody === undefined) return delivery
  try {
    return { ...delivery, body: await delivery.readBody(maxBodyBytes) }
  } catch (error) {
    const status = (error as { status?: unknown; statusCode?: unknown }).status ?? (error as { statusCode?: unknown }).statusCode
    if (status === 413) throw tooLarge(maxBodyBytes)
    throw new ReceiverError('malformed_body', 'the request body could not be read (the connection was aborted or the length was wrong)', {
      cause: error,
    })
  }
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
    throw new ReceiverError('duplicate_field', `field "${repeated}" is given more than once`, { fields: [repeated] })
  const names = Object.keys(parsed)
  if (names.includes('')) throw new ReceiverError('invalid_field_name', 'the JSON body has a field with an empty name')
  const values = names.map((name) => fromJsonValue((parsed as Record<string, unknown>)[name], 1))
  const nested = values.some((value) => typeof value === 'object' && value !== null) || names.some((name) => name.includes('['))
  return listedFields(names, values, nested ? 'nested' : 'flat')
}

function decodeQuery(query: string | URLSearchParams): ReceivedFields {
  if (typeof query === 'string') return decodeForm(query.startsWith('?') ? query.slice(1) : query)
  return decodeForm(query.toString())
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
    return decodeQuery(query)
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
