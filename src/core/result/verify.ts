import { DEFAULT_BODY_TIMEOUT_MS, DEFAULT_MAX_BODY_BYTES, loadBody, type RawDelivery, readFields } from './body.js'
import { CHECKSUM_PATTERN, matchSignedText } from './checksum.js'
import { checkConsistency } from './consistency.js'
import { type CandidateKey, type CredentialOptions, type Credentials, credentials, type MatchedCredential, signerOf } from './credentials.js'
import { diagnoseMismatch } from './diagnose.js'
import { DEFAULT_DIAGNOSES_PER_SECOND, type Diagnosis, DiagnosisBudget } from './diagnosis.js'
import { ReceiverError } from './errors.js'
import { type Logger, type LoggerOption, safeLogger } from '../logger.js'
import { type Message, type Rendering, type SignedText, toMessage } from './message.js'
import { classify, type Payment, type PaymentState, toPayment } from '../payment.js'
import { findFieldProblems, findFlatFieldProblems, flatChecks } from './fields.js'
import { ShapeCache } from './shape.js'
import { undecodablePrefix } from './undecodable-query.js'
import { bodyIsEmpty, queryBesideBody, queryText, readUnsignedQuery, withQueryHint } from './unsigned-query.js'
import { type FieldValue, toPlain } from '../values.js'
import { mismatchError, recoverMismatch } from './verify-fallback.js'

/** What verification does with a result whose exchange_number nothing pins: refuse it, or leave it to the API. */
export type UnpinnedResults = 'refuse' | 'accept'

export type VerifyOptions = CredentialOptions & {
  /** Larger bodies get 413. Default 64 KiB. */
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

/** A delivery whose checksum matched and whose fields are valid. */
export class VerifiedPayment {
  readonly state: PaymentState
  readonly exchangeNumber: string
  /** Which rendering of nested fields the checksum matched (`plain` when nothing is nested). */
  readonly rendering: Rendering
  private cachedPayment: Payment | undefined
  private cachedFields: Readonly<Record<string, unknown>> | undefined
  private cachedUnsigned: Readonly<Record<string, string>> | undefined
  /** With `credentials`: the set whose Checksum Token matched, and how it was chosen. */
  credential: MatchedCredential | undefined = undefined
  /**
   * The API UID whose Checksum Token verified it (several `credentials`, or resolveChecksumToken), or whose API
   * record it is; undefined with one checksumToken. Never the message's uid field read by name alone.
   */
  signerUid: string | undefined = undefined
  /** Query text holding the merchant's own, unsigned parameters, if any; parsed when read. */
  unsignedSource: string | undefined = undefined
  /**
   * Whether exchange_number is pinned to its value: a service address (status_url, receipt_url) names it, or the
   * result starts with exchange_number, order_number and payment_status (docs/security.md). True for API records.
   * createReceiver refuses unpinned results unless it confirms them through the status API; verifyDelivery only
   * marks them here, for the caller to confirm before trusting exchange_number.
   */
  pinned = true

  constructor(
    private readonly message: Message,
    state: PaymentState,
    rendering: Rendering,
  ) {
    this.state = state
    this.rendering = rendering
    this.exchangeNumber = message.text('exchange_number') as string
  }

  /**
   * Replaces exchange_number with `copy(exchangeNumber)`, the same text in a string of its own, and returns it: for a
   * receiver whose store keeps the number for the retention. The field's own value is a view of the delivery's body,
   * which a kept view would keep alive (contract/detached.ts), and the store's later look-ups of the number are
   * cheapest with the very string it keeps.
   */
  keepExchangeNumber(copy: (text: string) => string): string {
    const kept = copy(this.exchangeNumber)
    ;(this as { exchangeNumber: string }).exchangeNumber = kept
    return kept
  }

  /** Whether the message carries a non-empty value for this field (a top-level one). */
  has(name: string): boolean {
    const value = this.message.text(name)
    return value !== undefined && value !== ''
  }

  /** A top-level field's text as received, without building the typed view or the fields object. */
  text(name: string): string | undefined {
    return this.message.text(name)
  }

  /** order_number as received (always present: required), without building the typed view. */
  get orderNumber(): string {
    return this.message.text('order_number') as string
  }

  /** The typed view: booleans, amounts in sen, dates. */
  get payment(): Payment {
    this.cachedPayment ??= toPayment(
      this.state,
      (name) => this.message.text(name),
      (name) => this.message.get(name),
    )
    return this.cachedPayment
  }

  /**
   * The callback or redirect URL's own query parameters (`?shop=42`), which the service does not sign: the
   * leading ones when the fields came in the query string, or the query beside a body. Never part of `fields`;
   * trust them only as far as anything a browser can change.
   */
  get unsignedQuery(): Readonly<Record<string, string>> {
    this.cachedUnsigned ??= readUnsignedQuery(this.unsignedSource, (name) => this.message.shape.index[name] !== undefined)
    return this.cachedUnsigned
  }

  /** Every field as received (text, nested objects for `params` and the like), in a prototype-free object. */
  get fields(): Readonly<Record<string, unknown>> {
    if (this.cachedFields === undefined) {
      const fields: Record<string, unknown> = Object.create(null)
      for (const name of this.message.names) fields[name] = toPlain(this.message.get(name) as FieldValue)
      this.cachedFields = Object.freeze(fields)
    }
    return this.cachedFields
  }
}

/**
 * Parses, authenticates and classifies deliveries. Order matters: nothing about a message is trusted, stored or
 * logged beyond its field names before its checksum matched.
 */
export class Verifier {
  private readonly credentials: Credentials
  private readonly shapes = new ShapeCache()
  readonly maxBodyBytes: number
  readonly bodyTimeoutMs: number
  private readonly logger: Logger
  private readonly diagnoses: DiagnosisBudget

  constructor(
    options: VerifyOptions,
    private readonly unpinned: UnpinnedResults = 'accept',
  ) {
    this.credentials = credentials(options)
    this.diagnoses = new DiagnosisBudget(options.diagnosisPerSecond ?? DEFAULT_DIAGNOSES_PER_SECOND)
    this.maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
    this.bodyTimeoutMs = options.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS
    this.logger = safeLogger(options.logger)
    if (!(Number.isInteger(this.maxBodyBytes) && this.maxBodyBytes > 0))
      throw new TypeError('maxBodyBytes must be a positive integer')
    if (!(Number.isInteger(this.bodyTimeoutMs) && this.bodyTimeoutMs > 0))
      throw new TypeError('bodyTimeoutMs must be a positive integer')
  }

  verify(delivery: RawDelivery): Promise<VerifiedPayment> {
    try {
      return Promise.resolve(this.verifyNow(delivery))
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /**
   * verify() without a promise when none is needed: the body is at hand and the token is known without waiting,
   * as for nearly every delivery. Throws ReceiverError, or returns a promise that rejects with one.
   */
  verifyNow(delivery: RawDelivery): VerifiedPayment | Promise<VerifiedPayment> {
    if (delivery.body == null && (delivery.readBody ?? delivery.consumedBy) !== undefined)
      return loadBody(delivery, this.maxBodyBytes, this.bodyTimeoutMs).then((raw) => this.verifyRaw(raw))
    return this.verifyRaw(delivery)
  }

  private verifyRaw(raw: RawDelivery): VerifiedPayment | Promise<VerifiedPayment> {
    try {
      const verified = this.verifyFields(raw)
      return verified instanceof Promise ? verified.catch((error: unknown) => this.afterUndecodable(raw, error)) : verified
    } catch (error) {
      return this.afterUndecodable(raw, error)
    }
  }

  /**
   * A query that did not decode may begin with the URL's own parameters that do not (undecodable-query.ts): the
   * query after them is verified on its own, and they are handed over unsigned with the rest of the URL's own.
   * When that does not verify either, the refusal is the first one, as before; unless the fields after them were
   * signed and are refused for what they say (invalid_fields, inconsistent_result).
   */
  private afterUndecodable(raw: RawDelivery, error: unknown): VerifiedPayment | Promise<VerifiedPayment> {
    const undecodable = error instanceof ReceiverError && error.code === 'invalid_encoding' && bodyIsEmpty(raw.body)
    const cut = undecodable ? undecodablePrefix(queryText(raw.query)) : undefined
    if (cut === undefined) throw error
    const settle = (verified: VerifiedPayment): VerifiedPayment => {
      this.logger.debug({}, "the URL's own leading query parameters do not decode; the fields after them verified")
      verified.unsignedSource = verified.unsignedSource === undefined ? cut.prefix : `${cut.prefix}&${verified.unsignedSource}`
      return verified
    }
    const refuse = (retried: unknown): never => {
      const signed = retried instanceof ReceiverError && (retried.code === 'invalid_fields' || retried.code === 'inconsistent_result')
      throw signed ? retried : error
    }
    try {
      const verified = this.verifyFields({ ...raw, query: cut.rest })
      return verified instanceof Promise ? verified.then(settle, refuse) : settle(verified)
    } catch (retried) {
      return refuse(retried)
    }
  }

  private verifyFields(raw: RawDelivery): VerifiedPayment | Promise<VerifiedPayment> {
    let message: Message
    try {
      message = toMessage(readFields(raw, this.maxBodyBytes, this.shapes.expected), this.shapes)
    } catch (error) {
      throw withQueryHint(raw, error)
    }
    const checksum = message.text('checksum')
    if (checksum === undefined) throw new ReceiverError('checksum_missing', 'the message has no checksum field')
    if (!CHECKSUM_PATTERN.test(checksum))
      throw new ReceiverError('checksum_malformed', 'the checksum field is not 64 hexadecimal characters')
    const uid = message.text('uid')
    // Undefined when the uid names none of several sets: authenticate then tries each set's token.
    const key = this.credentials.keyFor(uid)
    if (key instanceof Promise) return key.then((resolved) => this.authenticate(raw, message, checksum, uid, resolved))
    return this.authenticate(raw, message, checksum, uid, key)
  }

  private authenticate(raw: RawDelivery, message: Message, checksum: string, uid: string | undefined, key: CandidateKey | undefined): VerifiedPayment {
    // Built here so that a mismatch can hand them on: a query's splits are cut out of the whole's signed bytes.
    const texts = key === undefined ? undefined : message.signedTexts()
    const matched = key === undefined ? undefined : matchSignedText(message, checksum, key.token, texts)
    if (matched === undefined) return this.verifyMismatch(raw, message, checksum, uid, key, texts)
    const { rendering } = matched
    if (rendering !== 'plain') this.logger.debug({ rendering }, `checksum matched the ${rendering} rendering of nested fields`)

    const verified = signedPayment(message, matched.data, rendering, this.unpinned)
    verified.credential = key?.credential
    verified.signerUid = signerOf(key?.credential, key)
    if (raw.query) verified.unsignedSource = queryBesideBody(raw)
    return verified
  }

  /** Off the ordinary path: another credential set, or the merchant's own query parameters before the fields. */
  private verifyMismatch(
    raw: RawDelivery,
    message: Message,
    checksum: string,
    uid: string | undefined,
    key: CandidateKey | undefined,
    wholeTexts: readonly SignedText[] | undefined,
  ): VerifiedPayment {
    const diagnose = (): Diagnosis | undefined => this.diagnose(raw, message, checksum, key)
    if (key !== undefined && !raw.query) throw mismatchError(diagnose())
    const recovered = recoverMismatch({ delivery: raw, message, checksum, uid, key, signed: wholeTexts, fallback: this.credentials.fallback, diagnose })
    if (recovered.unsignedPrefix !== undefined) this.logger.debug({}, "the checksum matched after leaving the URL's own leading query parameters unsigned")
    if (recovered.credential?.by === 'checksum')
      this.logger.debug({ credential: recovered.credential.uid }, 'the message uid names no credential set; the checksum matched this set')
    const signed = recovered.message.signedTexts().find((text) => text.rendering === recovered.rendering)?.data ?? ''
    const verified = signedPayment(recovered.message, signed, recovered.rendering, this.unpinned)
    verified.credential = recovered.credential
    verified.signerUid = signerOf(recovered.credential, key)
    verified.unsignedSource = recovered.unsignedPrefix ?? queryBesideBody(raw)
    return verified
  }

  /**
   * Why nothing matched, once every ordinary candidate failed: rationed to diagnosisPerSecond, so a flood of
   * forgeries costs at most that many diagnoses a second beyond the refusals themselves.
   */
  private diagnose(raw: RawDelivery, message: Message, checksum: string, key: CandidateKey | undefined): Diagnosis | undefined {
    if (!this.diagnoses.enabled) return undefined
    if (!this.diagnoses.take()) return this.diagnoses.skipped
    const all = this.credentials.fallback ?? []
    const keys = key === undefined ? all : [key]
    const others = key === undefined ? [] : all.filter((other) => other.token !== key.token)
    try {
      return diagnoseMismatch({ delivery: raw, message, checksum, keys, others })
    } catch (error) {
      // A diagnosis is a courtesy: the refusal stands without it.
      this.logger.error({ err: error }, 'diagnosing a refused checksum failed')
      return undefined
    }
  }
}

/**
 * The checks and classification every payment result goes through once it is trusted, by its checksum or
 * because it came over the authenticated API. Throws ReceiverError `invalid_fields`.
 */
export function validateAndClassify(message: Message, rendering: Rendering, what: string): VerifiedPayment {
  const problems = message.hasNestedValues
    ? findFieldProblems(
        (name) => message.shape.index[name] !== undefined,
        (name) => message.text(name),
      )
    : findFlatFieldProblems((message.shape.flatChecks ??= flatChecks(message.shape.index)), message)
  if (problems.length > 0) {
    const detail = problems.map((problem) => `${problem.field} (expected ${problem.expected})`).join(', ')
    throw new ReceiverError('invalid_fields', `${what} has missing or invalid fields: ${detail}`, {
      fields: problems.map((problem) => problem.field),
    })
  }
  const state = classify(message.text('payment_status') as string, message.text('fpx_debit_auth_code'))
  return new VerifiedPayment(message, state, rendering)
}

/** A result whose checksum matched: validated, classified, and its values checked against their names. */
function signedPayment(message: Message, signed: string | Buffer, rendering: Rendering, unpinned: UnpinnedResults): VerifiedPayment {
  const verified = validateAndClassify(message, rendering, 'signed message')
  // Before anything else is signed: a Buffer `signed` is a view that the next message signed overwrites.
  const { anchored, minimalFirst } = checkConsistency(message, signed, verified.exchangeNumber, verified.state)
  verified.pinned = anchored || minimalFirst
  if (!verified.pinned && unpinned === 'refuse')
    throw new ReceiverError(
      'inconsistent_result',
      'the result carries no status_url or receipt_url naming its exchange_number, and fields sort before or ' +
        'between exchange_number, order_number and payment_status, so a value may have been moved into them; give the ' +
        'receiver the API client to confirm such results',
    )
  return verified
}

/** One-off verification without deduplication: what the receiver does before it touches its store. */
export function verifyDelivery(delivery: RawDelivery, options: VerifyOptions): Promise<VerifiedPayment> {
  return new Verifier(options).verify(delivery)
}
