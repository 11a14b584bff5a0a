import { assertChecksumToken } from '../checksum-token.js'
import { hexDigestsEqual, hmacSha256Hex } from '../hmac.js'
import { type Message, type Rendering, type SignedText, toMessage } from './message.js'
import { listedFields, type ReceivedFields } from './received-fields.js'
import { ShapeCache } from './shape.js'
import { type FieldInput, type FieldValue, isNested, toFieldValue } from '../values.js'

export const CHECKSUM_PATTERN = /^[0-9a-fA-F]{64}$/

/** Caller-supplied fields (plain objects or Maps, possibly nested) in the receiver's own representation. */
export function fieldsFromInput(fields: Readonly<Record<string, FieldInput>> | ReadonlyMap<string, FieldInput>): ReceivedFields {
  const entries = fields instanceof Map ? [...fields.entries()] : Object.entries(fields)
  const names: string[] = []
  const values: FieldValue[] = []
  let nested = false
  for (const [name, input] of entries) {
    const value = toFieldValue(input)
    if (value === undefined) continue
    names.push(name)
    values.push(value)
    if (isNested(value) || name.includes('[')) nested = true
  }
  return listedFields(names, values, nested ? 'nested' : 'flat')
}

export interface MessageChecksumOptions {
  /**
   * How nested fields such as `params` enter the signed string: Ruby's Hash#inspect text (`ruby`, the default,
   * or `ruby34` for Ruby 3.4's spacing) or one field per bracket name (`flat`). Irrelevant without nested fields.
   */
  rendering?: Exclude<Rendering, 'plain'>
}

/** The signed string of a message for one rendering (the plain one when nothing is nested). */
export function signedText(message: Message, rendering: Rendering): string {
  const candidates = message.signedTexts()
  const chosen = candidates.find((candidate) => candidate.rendering === rendering) ?? (candidates[0] as SignedText)
  return typeof chosen.data === 'string' ? chosen.data : chosen.data.toString('utf8')
}

/**
 * The `checksum` of a redirect or callback message: every field but `checksum`, sorted by name in byte order,
 * values joined by `|` (booleans as true/false, null as empty), HMAC-SHA256 keyed by the Checksum Token.
 */
export function messageChecksum(
  fields: Readonly<Record<string, FieldInput>> | ReadonlyMap<string, FieldInput>,
  checksumToken: string,
  options: MessageChecksumOptions = {},
): string {
  assertChecksumToken(checksumToken)
  const message = toMessage(fieldsFromInput(fields), new ShapeCache(1))
  return hmacSha256Hex(checksumToken, signedText(message, options.rendering ?? 'ruby'))
}

/**
 * Which rendering the message's checksum matches, or undefined. The received checksum must already have
 * passed CHECKSUM_PATTERN; comparison is constant-time.
 */
export function matchChecksum(message: Message, checksum: string, checksumToken: string): Rendering | undefined {
  return matchSignedText(message, checksum, checksumToken)?.rendering
}

/**
 * matchChecksum's candidate itself: its rendering and the signed string. A Buffer is a view valid until the next
 * message is signed, so read it at once. `texts`: the message's signed strings, when the caller built them.
 */
export function matchSignedText(
  message: Message,
  checksum: string,
  checksumToken: string,
  texts: readonly SignedText[] = message.signedTexts(),
): SignedText | undefined {
  for (const candidate of texts) {
    if (hexDigestsEqual(hmacSha256Hex(checksumToken, candidate.data), checksum)) return candidate
  }
  return undefined
}
