import { quotedName, ReceiverError } from './errors.js'
import { scanJson } from './json-keys.js'
import { type FieldValue, MAX_FIELDS, MAX_NESTING_DEPTH, type NestedFields } from '../values.js'

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

/**
 * The largest body read by default. A result is 1 to 2 KB; what a body that fails verification costs is mostly in
 * its bytes (each rendering of nested fields is signed over all of them, and a diagnosis tries several changes),
 * so the limit is what bounds anyone's cost to the receiver: at 16 KiB, no refused body costs 10 times an ordinary
 * refusal (npm run bench:refusal).
 */
export const DEFAULT_MAX_BODY_BYTES = 16 * 1024
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

/** An error with `status` 408, as adapters that read the body themselves report a body that took too long. */
export function bodyTimeoutError(): Error {
  return Object.assign(new Error('the request body did not arrive in time'), { status: 408, statusCode: 408 })
}

function statusOf(error: unknown): unknown {
  return (error as { status?: unknown } | null)?.status ?? (error as { statusCode?: unknown } | null)?.statusCode
}

/** Throws 415 `unsupported_encoding` for any Content-Encoding but identity (absent is identity). */
export function checkEncoding(contentEncoding: string | null | undefined): void {
  if (contentEncoding === undefined || contentEncoding === null) return
  const other = contentEncoding
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .find((coding) => coding !== '' && coding !== 'identity')
  if (other === undefined) return
  throw new ReceiverError(
    'unsupported_encoding',
    `content encoding ${quotedName(other)} is not supported; the service sends plain bodies (no Content-Encoding, or identity)`,
  )
}

/**
 * The delivery's body, read through the adapter's reader within the size and time limits. A failure that comes from
 * the request (too large, too slow, cut off) is the sender's; anything else the reader throws is ours (a 500).
 */
export async function loadBody(delivery: RawDelivery, maxBodyBytes: number, timeoutMs: number): Promise<RawDelivery> {
  checkEncoding(delivery.contentEncoding)
  if (delivery.body !== undefined && delivery.body !== null) return delivery
  if (delivery.consumedBy !== undefined) throw alreadyRead(delivery.consumedBy, delivery.consumedAdvice)
  if (delivery.readBody === undefined) return delivery
  const { readBody } = delivery
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(bodyTimeoutError()), timeoutMs)
  })
  // A reader that throws rather than rejects (a hand-written one) is a failed read like any other: it must not leave
  // the time limit running, to go off later as an unhandled rejection that ends a Node process.
  const reading = new Promise<Uint8Array | string>((resolve) => resolve(readBody(maxBodyBytes)))
  // The read that loses the race ends with the connection, which the 408 answer closes.
  reading.catch(() => undefined)
  late.catch(() => undefined)
  try {
    return { ...delivery, body: await Promise.race([reading, late]) }
  } catch (error) {
    // The reader's own verdict (alreadyRead): it knows what read the stream before it.
    if (error instanceof ReceiverError) throw error
    const status = statusOf(error)
    if (status === 413) throw tooLarge(maxBodyBytes)
    if (status === 408) throw new ReceiverError('body_timeout', `the request body did not arrive in full within ${timeoutMs} ms`)
    // 400: the reader says the request itself was at fault (raw-body and Fastify for an aborted or short body).
    if (status === 400)
      throw new ReceiverError('malformed_body', 'the request body could not be read (the connection was aborted or the length was wrong)', { cause: error })
    throw new ReceiverError('internal_error', 'the request body could not be read because of a fault on this side', { cause: error })
  } finally {
    clearTimeout(timer)
  }
}

/**
 * 500 body_already_parsed: something of the app's (`consumedBy`) read the body before the receiver and kept no raw
 * copy, so the bytes the service signed are gone. The app's mounting, never the sender's fault.
 */
export function alreadyRead(consumedBy: string, advice: string = NODE_PARSER_ADVICE): ReceiverError {
  return new ReceiverError(
    'body_already_parsed',
    `The request body was already read by ${consumedBy}, which kept no raw copy, so the exact bytes the service signed are gone. ${advice}`,
  )
}

function tooLarge(maxBodyBytes: number): ReceiverError {
  return new ReceiverError('body_too_large', `the body is larger than ${maxBodyBytes} bytes`)
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

function bodyText(body: Uint8Array | ArrayBuffer | string, maxBodyBytes: number): string {
  if (typeof body === 'string') {
    if (new TextEncoder().encode(body).byteLength > maxBodyBytes) throw tooLarge(maxBodyBytes)
    return body
  }
  if (body.byteLength > maxBodyBytes) throw tooLarge(maxBodyBytes)
  try {
    return utf8.decode(body)
  } catch {
    throw new ReceiverError('invalid_encoding', 'the body is not valid UTF-8')
  }
}

function mediaType(contentType: string | null | undefined): { type: string; charset: string | undefined } {
  const [type = '', ...parameters] = (contentType ?? '').split(';')
  let charset: string | undefined
  for (const parameter of parameters) {
    const [key, value] = parameter.split('=')
    if (key?.trim().toLowerCase() === 'charset' && value !== undefined) charset = value.trim().replace(/^"|"$/g, '').toLowerCase()
  }
  return { type: type.trim().toLowerCase(), charset }
}

/** One form component: `+` is a space, percent-escapes must form UTF-8; undefined when they do not. */
function decodeComponent(raw: string): string | undefined {
  const spaced = raw.includes('+') ? raw.replaceAll('+', ' ') : raw
  if (!spaced.includes('%')) return spaced
  try {
    return decodeURIComponent(spaced)
  } catch {
    return undefined
  }
}

// Never echo the value: the service signs the Auth Token into some messages (field `token`).
const undecodable = (what: string) => new ReceiverError('invalid_encoding', `${what} has invalid percent-encoding or is not valid UTF-8`)

export interface ReceivedFields {
  readonly names: string[]
  readonly values: FieldValue[]
}

/** An application/x-www-form-urlencoded text as fields, in order; names may repeat here (judged when grouped). */
export function decodeForm(text: string): ReceivedFields {
  const names: string[] = []
  const values: FieldValue[] = []
  for (const pair of text.split('&', MAX_FIELDS + 1)) {
    if (pair === '') continue
    if (names.length === MAX_FIELDS) throw tooManyFields()
    const equals = pair.indexOf('=')
    const rawName = equals < 0 ? pair : pair.slice(0, equals)
    const number = names.length + 1
    if (rawName === '') throw new ReceiverError('invalid_field_name', `field #${number} has an empty name`)
    const name = decodeComponent(rawName)
    if (name === undefined) throw undecodable(`field #${number}'s name`)
    const value = equals < 0 ? '' : decodeComponent(pair.slice(equals + 1))
    if (value === undefined) throw undecodable(`field ${quotedName(name)}`)
    names.push(name)
    values.push(value)
  }
  return { names, values }
}

const tooManyFields = () => new ReceiverError('too_many_fields', `the message has more than ${MAX_FIELDS} fields (nested ones counted)`)

function fromJsonValue(value: unknown, depth: number): FieldValue {
  if (value === null || typeof value !== 'object') return value as FieldValue
  if (depth >= MAX_NESTING_DEPTH) throw new ReceiverError('malformed_body', `the JSON body is nested more than ${MAX_NESTING_DEPTH} levels deep`)
  if (Array.isArray(value)) return value.map((item) => fromJsonValue(item, depth + 1))
  const map: NestedFields = new Map()
  for (const [key, item] of Object.entries(value)) map.set(key, fromJsonValue(item, depth + 1))
  return map
}

function decodeJson(text: string): ReceivedFields {
  // Counted before JSON.parse builds them: parsing thousands of members is most of what such a body costs.
  const scan = scanJson(text, MAX_FIELDS)
  if (scan.members > MAX_FIELDS) throw tooManyFields()
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw new ReceiverError('malformed_body', 'the body is not valid JSON')
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new ReceiverError('malformed_body', 'the JSON body must be an object of fields')
  if (scan.repeated !== undefined) throw new ReceiverError('duplicate_field', `field ${quotedName(scan.repeated)} is given more than once`, { fields: [scan.repeated] })
  const names = Object.keys(parsed)
  if (names.includes('')) throw new ReceiverError('invalid_field_name', 'the JSON body has a field with an empty name')
  return { names, values: names.map((name) => fromJsonValue((parsed as Record<string, unknown>)[name], 1)) }
}

/** The query of a delivery as text without `?`, or '' when it has none. */
export function queryText(query: RawDelivery['query']): string {
  if (query === null || query === undefined) return ''
  const text = typeof query === 'string' ? query : query.toString()
  return text.startsWith('?') ? text.slice(1) : text
}

/** Whether the delivery has no body, so that its fields come from the query string. */
export function bodyIsEmpty(body: RawDelivery['body']): boolean {
  if (body === null || body === undefined || body === '') return true
  return (body instanceof Uint8Array || body instanceof ArrayBuffer) && body.byteLength === 0
}

/** The fields of a delivery from its body, or from its query string when the body is empty. */
export function readFields(delivery: RawDelivery, maxBodyBytes: number): ReceivedFields {
  checkEncoding(delivery.contentEncoding)
  const { body } = delivery
  if (body !== null && body !== undefined && typeof body !== 'string' && !(body instanceof Uint8Array) && !(body instanceof ArrayBuffer))
    throw new ReceiverError('body_already_parsed', ALREADY_PARSED_HELP)
  if (bodyIsEmpty(body)) {
    const query = queryText(delivery.query)
    if (query === '') throw new ReceiverError('empty_body', 'the delivery has no body and no query string')
    if (query.length > maxBodyBytes) throw tooLarge(maxBodyBytes)
    return decodeForm(query)
  }
  const text = bodyText(body as Uint8Array | ArrayBuffer | string, maxBodyBytes)
  const { type, charset } = mediaType(delivery.contentType)
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8' && charset !== 'us-ascii')
    throw new ReceiverError('unsupported_media_type', `charset ${quotedName(charset)} is not supported; send UTF-8`)
  if (type === FORM) return decodeForm(text)
  if (type === JSON_TYPE) return decodeJson(text)
  throw new ReceiverError('unsupported_media_type', `content type ${type === '' ? '"(none)"' : quotedName(type)} is not supported; expected ${FORM} or ${JSON_TYPE}`)
}
