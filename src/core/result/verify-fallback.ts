import type { RawDelivery } from './body.js'
import { type CandidateKey, type MatchedCredential, matchKeys, unknownUid } from './credentials.js'
import type { Diagnosis } from './diagnosis.js'
import { ReceiverError } from './errors.js'
import type { Message, Rendering, SignedText } from './message.js'
import { splitSigner } from './split-signing.js'
import { bodyIsEmpty, queryText, signedSuffixes } from './unsigned-query.js'

/**
 * What the verifier does only when the plain check did not match (never on the path of an ordinary delivery):
 * try every configured set when the message's uid names none, and, for fields that came in the query string,
 * the splits that leave the merchant's own leading parameters unsigned.
 */
export interface Recovered {
  /** The message of the signed fields (without the merchant's parameters when a split matched). */
  readonly message: Message
  readonly rendering: Rendering
  readonly credential: MatchedCredential | undefined
  /** The merchant's leading query parameters, as query text, when a split matched. */
  readonly unsignedPrefix: string | undefined
}

export interface Mismatch {
  readonly delivery: RawDelivery
  readonly message: Message
  readonly checksum: string
  readonly uid: string | undefined
  /** The key the uid chose, whose HMAC over the whole message did not match; undefined when the uid chose none. */
  readonly key: CandidateKey | undefined
  /** With `key`: the whole message's signed strings, as that check built them (a Buffer is valid until the next message is signed). */
  readonly signed: readonly SignedText[] | undefined
  /** Every configured set, tried when the uid chose none. */
  readonly fallback: readonly CandidateKey[] | undefined
  /** Called only when nothing matched, for the refusal's diagnosis (undefined when the verifier makes none). */
  readonly diagnose: () => Diagnosis | undefined
}

export function mismatchError(diagnosis?: Diagnosis): ReceiverError {
  return new ReceiverError(
    'checksum_mismatch',
    'the checksum does not match the fields; the message was altered or signed with another Checksum Token',
    { diagnosis },
  )
}

export function recoverMismatch(mismatch: Mismatch): Recovered {
  const { delivery, message, checksum, uid, key, fallback, diagnose } = mismatch
  let keys: readonly CandidateKey[]
  let signed = mismatch.signed
  if (key !== undefined) {
    keys = [key]
  } else {
    keys = fallback ?? []
    signed = message.signedTexts()
    const whole = matchKeys(message, checksum, keys, signed)
    if (whole !== undefined) return { message, ...whole, unsignedPrefix: undefined }
  }
  let tried = 0
  if (bodyIsEmpty(delivery.body)) {
    const suffixes = signedSuffixes(queryText(delivery.query), message)
    // Splits that are views of the whole message are cut out of its signed bytes instead of being signed again.
    const skips = suffixes.flatMap((suffix) => (suffix.skip === undefined ? [] : [suffix.skip]))
    const signer = splitSigner(message, signed, skips)
    for (const suffix of suffixes) {
      tried++
      const found =
        suffix.skip !== undefined && signer?.current === true
          ? signer.match(suffix.skip, checksum, keys)
          : matchKeys(suffix.message(), checksum, keys)
      if (found !== undefined) return { message: suffix.message(), ...found, unsignedPrefix: suffix.prefix }
    }
  }
  const diagnosis = diagnose()
  if (key === undefined) throw unknownUid(uid, { tokens: keys.length, diagnosis })
  if (tried === 0) throw mismatchError(diagnosis)
  throw new ReceiverError(
    'checksum_mismatch',
    `the checksum does not match the fields, nor the fields after the first ${tried === 1 ? 'query parameter' : `1 to ${tried} query parameters`} ` +
      "(taken as the callback or redirect URL's own); the message was altered or signed with another Checksum Token",
    { diagnosis },
  )
}
