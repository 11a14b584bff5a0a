import { canSignAtOnce, checksumMatches, hmacSha256Hex } from '../crypto.js'
import { type Logger, type LoggerOption, safeLogger } from '../logger.js'
import {
  bodyIsEmpty,
  DEFAULT_BODY_TIMEOUT_MS,
  DEFAULT_MAX_BODY_BYTES,
  decodeForm,
  loadBody,
  queryText,
  type RawDelivery,
  type ReceivedFields,
  readFields,
} from './body.js'
import { type CandidateKey, type CredentialOptions, type Credentials, credentials, type CredentialSet, DEFAULT_LOOKUP_WITHIN_MS, unknownUid } from './credentials.js'
import { diagnoseMismatch } from './diagnose.js'
import { quotable, refusalSecrets } from './without-secrets.js'
import { DEFAULT_DIAGNOSES_PER_SECOND, type Diagnosis, DiagnosisBudget } from './diagnosis.js'
import { ReceiverError } from './errors.js'
import { type Message, type Rendering, toMessage } from './message.js'
import { whyUnpinned } from './pinning.js'
import { querySplits, undecodablePrefix } from './query-splits.js'
import { validated, VerifiedPayment } from './verified.js'

export { VerifiedPayment } from './verified.js'

export type VerifyOptions = CredentialOptions & {
  /** Larger bodies get 413. Default 16 KiB (DEFAULT_MAX_BODY_BYTES). */
  maxBodyBytes?: number
  /** A body not complete within this many milliseconds gets 408 `body_timeout`. Default 30 000. */
  bodyTimeoutMs?: number
  /**
   * How many refused checksums a second get a diagnosis (ReceiverError.diagnosis: what would have made the
   * checksum verify). Each costs at most 128 HMACs, and only a refusal pays it. Default 4; 0 turns it off.
   */
  diagnosisPerSecond?: number
  /**
   * pino-compatible. Default: warnings and errors on the console (info and debug dropped); `false` silences.
   * Nothing logged ever holds a token.
   */
  logger?: LoggerOption
}

export const CHECKSUM_PATTERN = /^[0-9a-fA-F]{64}$/

/** Which key, for which rendering, signed the message, if any. */
async function match(message: Message, checksum: string, keys: readonly CandidateKey[]): Promise<{ key: CandidateKey; rendering: Rendering } | undefined> {
  const texts = message.signedTexts()
  for (const key of keys) for (const text of texts) if (await checksumMatches(key.token, text.data, checksum)) return { key, rendering: text.rendering }
  return undefined
}

/** A delivery's fields as read, before its checksum is checked. */
export interface Parsed {
  readonly raw: RawDelivery
  readonly fields: ReceivedFields
  /** The URL's own leading query parameters that did not decode, cut off before the fields. */
  readonly leading: string | undefined
  /** With `leading`: the refusal of the whole query, which stands unless the fields after them verify. */
  readonly undecodable?: ReceiverError
}

/**
 * The tokens of the keys a refused message was checked with (its uid's set, or every configured one), kept beside
 * the refusal rather than in it: what the refusal log keeps of the message must not be one of them
 * (receive.ts, claimedNumbers).
 */
const triedSecrets = new WeakMap<ReceiverError, { readonly secrets: readonly string[]; readonly authToken: boolean }>()

/** The tokens a refused message was checked with; none when it was refused before its keys were chosen. */
export function secretsTried(error: unknown): readonly string[] {
  return error instanceof ReceiverError ? (triedSecrets.get(error)?.secrets ?? []) : []
}

/** Whether a refused message was checked with a key whose set has an Auth Token (so the receiver knows that token). */
export function authTokenTried(error: unknown): boolean {
  return error instanceof ReceiverError && triedSecrets.get(error)?.authToken === true
}

/** The set whose Checksum Token verified a result, kept out of the result itself so that no copy of it holds a token. */
const signingSets = new WeakMap<VerifiedPayment, CredentialSet>()

/**
 * The query with separators written as HTML made plain (`&amp;`, `&amp%3B`, as the vendor's plugins replace them),
 * or undefined when it has none. Neither can stand inside a value, whose `&` is `%26`. The plugins' third form,
 * `%26amp%3B`, is left: a value may hold that text (a buyer's `&amp;`).
 */
function withPlainSeparators(query: string): string | undefined {
  const plain = query.replace(/&amp(?:;|%3B)/gi, '&')
  return plain === query ? undefined : plain
}

/** The credential set (tokens included) that signed `verified`, for the API client that confirms it. */
export function signingSet(verified: VerifiedPayment): CredentialSet | undefined {
  return signingSets.get(verified)
}

/**
 * Parses, authenticates and classifies deliveries, as a function of the bytes and the credentials. Order matters:
 * nothing about a message is trusted, stored or logged beyond its field names before its checksum matched.
 */
export class Verifier {
  private readonly credentials: Credentials
  readonly maxBodyBytes: number
  readonly bodyTimeoutMs: number
  private readonly logger: Logger
  private readonly diagnoses: DiagnosisBudget

  /** `leaseMs`: a receiver's lease, which bounds a credential lookup as it bounds a store call (half, at most 10 s). */
  constructor(options: VerifyOptions, leaseMs?: number) {
    this.credentials = credentials(options, leaseMs === undefined ? DEFAULT_LOOKUP_WITHIN_MS : Math.max(1, Math.min(DEFAULT_LOOKUP_WITHIN_MS, Math.floor(leaseMs / 2))))
    this.diagnoses = new DiagnosisBudget(options.diagnosisPerSecond ?? DEFAULT_DIAGNOSES_PER_SECOND)
    this.maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
    this.bodyTimeoutMs = options.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS
    this.logger = safeLogger(options.logger)
    if (!(Number.isInteger(this.maxBodyBytes) && this.maxBodyBytes > 0)) throw new TypeError('maxBodyBytes must be a positive integer')
    if (!(Number.isInteger(this.bodyTimeoutMs) && this.bodyTimeoutMs > 0)) throw new TypeError('bodyTimeoutMs must be a positive integer')
  }

  /** Every configured credential set, and whether each way of finding a token also gives an Auth Token. */
  get sets(): readonly CredentialSet[] {
    return this.credentials.sets
  }

  get confirmable(): boolean {
    return this.credentials.confirmable
  }

  /** The API UID a record read over the API for `uid` is filed under, as a delivery for it would be. */
  signerFor(uid: string | undefined): string | undefined {
    return this.credentials.signerFor(uid)
  }

  /**
   * Signs a link of the receiver's own (the "being confirmed" page's check-again link) with the Checksum Token of
   * `uid`'s credential set: HMAC of a text no message of the service has, so a link and a result never sign alike.
   */
  async signLink(text: string, uid: string | undefined): Promise<string> {
    const [key] = (await this.credentials.keysFor(uid)).keys
    if (key === undefined) throw new Error('no Checksum Token to sign the link with')
    return hmacSha256Hex(key.token, `fpx-collect link|${text}`)
  }

  /** The credential set whose token signed a link of the receiver's own (signLink), or undefined when none did. */
  async linkSigner(text: string, uid: string | undefined, signature: string): Promise<CandidateKey | undefined> {
    if (!CHECKSUM_PATTERN.test(signature)) return undefined
    let keys: readonly CandidateKey[]
    try {
      keys = (await this.credentials.keysFor(uid)).keys
    } catch {
      return undefined
    }
    for (const key of keys) if (await checksumMatches(key.token, `fpx-collect link|${text}`, signature)) return key
    return undefined
  }

  /** The credential set the keys for `uid` come from (the first, when several), or undefined when none is known. */
  async setFor(uid: string | undefined): Promise<CredentialSet | undefined> {
    try {
      return (await this.credentials.keysFor(uid)).keys[0]?.set
    } catch {
      return undefined
    }
  }

  /** Reads the body, verifies the checksum and the fields. Throws ReceiverError, quoting no secret (without-secrets.ts). */
  async verify(delivery: RawDelivery): Promise<VerifiedPayment> {
    try {
      return await this.check(this.parse(await loadBody(delivery, this.maxBodyBytes, this.bodyTimeoutMs)))
    } catch (error) {
      throw error instanceof ReceiverError ? quotable(error, refusalSecrets(this.sets, secretsTried(error))) : error
    }
  }

  /**
   * The fields of a delivery whose body is at hand, from its body or its query string. The URL's own leading query
   * parameters may not decode (`?next=50%`): then the query after them is read, and they are kept as unsigned.
   */
  parse(raw: RawDelivery): Parsed {
    try {
      return { raw, fields: readFields(raw, this.maxBodyBytes), leading: undefined }
    } catch (error) {
      const cut = error instanceof ReceiverError && error.code === 'invalid_encoding' && bodyIsEmpty(raw.body) ? undecodablePrefix(queryText(raw.query)) : undefined
      if (cut === undefined) throw error
      try {
        return { raw: { ...raw, query: cut.rest }, fields: decodeForm(cut.rest), leading: cut.prefix, undecodable: error as ReceiverError }
      } catch {
        throw error
      }
    }
  }

  /** Verifies the checksum of parsed fields and the fields themselves. Throws ReceiverError. */
  async check(parsed: Parsed): Promise<VerifiedPayment> {
    try {
      return await this.checkOnce(parsed)
    } catch (error) {
      const repaired = bodyIsEmpty(parsed.raw.body) ? withPlainSeparators(queryText(parsed.raw.query)) : undefined
      if (repaired === undefined) throw error
      // Query separators written as HTML (`&amp;`), which the vendor's own plugins repair before reading a result
      // (docs/receiving.md, "The URL's own query parameters"): read again with plain ones. The checksum still
      // decides, and the first refusal stands.
      try {
        const again = this.parse({ ...parsed.raw, query: repaired })
        return await this.checkOnce({ ...again, leading: again.leading ?? parsed.leading })
      } catch {
        throw error
      }
    }
  }

  private async checkOnce(parsed: Parsed): Promise<VerifiedPayment> {
    try {
      return await this.verifyFields(parsed.raw, parsed.fields, parsed.leading)
    } catch (error) {
      // Fields after undecodable leading parameters that are not signed either: the query's own refusal stands,
      // unless they were signed and are refused for what they say.
      const signed = error instanceof ReceiverError && error.code === 'invalid_fields'
      throw parsed.undecodable !== undefined && !signed ? parsed.undecodable : error
    }
  }

  private async verifyFields(raw: RawDelivery, fields: ReceivedFields, leading: string | undefined): Promise<VerifiedPayment> {
    const message = withQueryHint(raw, () => toMessage(fields.names, fields.values))
    const checksum = message.text('checksum')
    if (checksum === undefined) throw new ReceiverError('checksum_missing', 'the message has no checksum field')
    if (!CHECKSUM_PATTERN.test(checksum)) throw new ReceiverError('checksum_malformed', 'the checksum field is not 64 hexadecimal characters')
    const uid = message.text('uid')
    const { keys, fallback, others } = await this.credentials.keysFor(uid)
    try {
      return await this.matchFields(raw, message, checksum, uid, keys, fallback, others, leading)
    } catch (error) {
      if (error instanceof ReceiverError)
        triedSecrets.set(error, {
          secrets: [...keys.map((key) => key.token), ...refusalSecrets(keys.flatMap((key) => (key.set === undefined ? [] : [key.set])), [])],
          authToken: keys.some((key) => (key.set?.authToken ?? '') !== ''),
        })
      throw error
    }
  }

  private async matchFields(
    raw: RawDelivery,
    message: Message,
    checksum: string,
    uid: string | undefined,
    keys: readonly CandidateKey[],
    fallback: boolean,
    others: readonly CandidateKey[],
    leading: string | undefined,
  ): Promise<VerifiedPayment> {
    let signed = message
    let found = await match(message, checksum, keys)
    let unsigned = bodyIsEmpty(raw.body) ? leading : joinQuery(leading, queryText(raw.query))
    let tried = 0
    if (found === undefined && bodyIsEmpty(raw.body)) {
      // The URL's own leading parameters come before the service's fields, unsigned: try without them.
      const query = queryText(raw.query)
      for (const split of querySplits(query)) {
        const rest = withQueryHint(raw, () => {
          const decoded = decodeForm(split.rest)
          return toMessage(decoded.names, decoded.values)
        })
        tried++
        found = await match(rest, checksum, keys)
        if (found !== undefined) {
          signed = rest
          unsigned = joinQuery(leading, split.prefix)
          this.logger.debug({}, "the checksum matched after leaving the URL's own leading query parameters unsigned")
          break
        }
      }
    }
    if (found === undefined) {
      const diagnosis = this.diagnose(raw, message, checksum, keys, others)
      if (fallback) throw unknownUid(uid, { tokens: keys.length, diagnosis })
      const splits = tried === 0 ? '' : `, nor the fields after the first ${tried === 1 ? 'query parameter' : `1 to ${tried} query parameters`} (taken as the callback or redirect URL's own)`
      throw new ReceiverError('checksum_mismatch', `the checksum does not match the fields${splits}; the message was altered or signed with another Checksum Token`, { diagnosis })
    }
    if (found.rendering !== 'plain') this.logger.debug({ rendering: found.rendering }, `checksum matched the ${found.rendering} rendering of nested fields`)
    const verified = validated(signed, found.rendering, 'signed message')
    verified.credential = found.key.credential
    verified.signerUid = found.key.signer
    verified.unsignedSource = unsigned === '' ? undefined : unsigned
    if (found.key.set !== undefined) signingSets.set(verified, found.key.set)
    // The Basic-auth forms too: the buyer can work them out from the uid and the token a result echoed to them.
    verified.hideValues(found.key.set === undefined ? [found.key.token] : refusalSecrets([found.key.set], []))
    return verified
  }

  /**
   * Why nothing matched: rationed to diagnosisPerSecond, so a flood of forgeries costs at most that many diagnoses
   * a second beyond the refusals themselves. A diagnosis is a courtesy: the refusal stands without it.
   */
  private diagnose(raw: RawDelivery, message: Message, checksum: string, keys: readonly CandidateKey[], others: readonly CandidateKey[]): Diagnosis | undefined {
    if (!this.diagnoses.enabled || !canSignAtOnce) return undefined
    if (!this.diagnoses.take()) return this.diagnoses.skipped
    try {
      return diagnoseMismatch({ delivery: raw, message, checksum, keys, others })
    } catch (error) {
      this.logger.error({ err: error }, 'diagnosing a refused checksum failed')
      return undefined
    }
  }
}

function joinQuery(first: string | undefined, second: string | undefined): string | undefined {
  if (first === undefined || first === '') return second === '' ? undefined : second
  return second === undefined || second === '' ? first : `${first}&${second}`
}

/**
 * A repeated name in fields that came in the query string is most often the URL's own parameter sharing a name with
 * one of the service's fields: the refusal says so.
 */
function withQueryHint<T>(raw: RawDelivery, make: () => T): T {
  try {
    return make()
  } catch (error) {
    if (!(error instanceof ReceiverError) || error.code !== 'duplicate_field' || !bodyIsEmpty(raw.body)) throw error
    throw new ReceiverError(
      'duplicate_field',
      `${error.message}. The fields came in the query string: if the callback or redirect URL has a query parameter of ` +
        "its own with this name, rename it, because the service appends its fields after the URL's own parameters and " +
        'a name in both is ambiguous',
      { fields: error.fields ?? [] },
    )
  }
}

/**
 * Whether a verified result's values acted on could stand under other names (signature only), as a reason. Not
 * named like VerifiedPayment's field `unpinnedReason`: the CommonJS build (sucrase) turns a class field named like
 * an export of the same chunk into an assignment to that export, which cleared this function at every result.
 */
export function unpinnedReasonOf(verified: VerifiedPayment): string | undefined {
  return whyUnpinned(verified.signedFields())
}

/** One-off verification without deduplication: what the receiver does before it touches its store. */
export async function verifyDelivery(delivery: RawDelivery, options: VerifyOptions): Promise<VerifiedPayment> {
  const verified = await new Verifier(options).verify(delivery)
  const reason = unpinnedReasonOf(verified)
  verified.pinned = reason === undefined
  verified.unpinnedReason = reason
  return verified
}
