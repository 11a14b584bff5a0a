import { DEFAULT_MAX_BODY_BYTES, loadBody, type RawDelivery, readFields } from './body.js'
import { CHECKSUM_PATTERN, matchChecksum } from './checksum.js'
import { type CredentialIndex, credentialIndex, type MatchedCredential } from './credential-match.js'
import { type CredentialOptions, tokenLookup } from './credentials.js'
import { ReceiverError } from './errors.js'
import { type Logger, type LoggerOption, safeLogger } from './logger.js'
import { type Message, type Rendering, toMessage } from './message.js'
import { classify, type Payment, type PaymentState, toPayment } from './payment.js'
import { findFieldProblems, findFlatFieldProblems, flatChecks } from './fields.js'
import { ShapeCache } from './shape.js'
import { queryBesideBody, readUnsignedQuery, withQueryHint } from './unsigned-query.js'
import { type FieldValue, toPlain } from './values.js'
import { mismatchError, recoverMismatch } from './verify-fallback.js'

export type VerifyOptions = CredentialOptions & {
  /** Larger bodies get 413. Default 64 KiB. */
  maxBodyBytes?: number
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
  /** Query text holding the merchant's own, unsigned parameters, if any; parsed when read. */
  unsignedSource: string | undefined = undefined

  constructor(
    private readonly message: Message,
    state: PaymentState,
    rendering: Rendering,
  ) {
    this.state = state
    this.rendering = rendering
    this.exchangeNumber = message.text('exchange_number') as string
  }

  /** Whether the message carries a non-empty value for this field (a top-level one). */
  has(name: string): boolean {
    const value = this.message.text(name)
    return value !== undefined && value !== ''
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
  private readonly lookup
  private readonly sets: CredentialIndex | undefined
  private readonly shapes = new ShapeCache()
  readonly maxBodyBytes: number
  private readonly logger: Logger

  constructor(options: VerifyOptions) {
    this.lookup = tokenLookup(options)
    this.sets = credentialIndex(options)
    this.maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
    this.logger = safeLogger(options.logger)
    if (!(Number.isInteger(this.maxBodyBytes) && this.maxBodyBytes > 0))
      throw new TypeError('maxBodyBytes must be a positive integer')
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
      return loadBody(delivery, this.maxBodyBytes).then((raw) => this.verifyRaw(raw))
    return this.verifyRaw(delivery)
  }

  private verifyRaw(raw: RawDelivery): VerifiedPayment | Promise<VerifiedPayment> {
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
    let found: string | Promise<string> | undefined
    try {
      found = this.lookup(uid)
    } catch (error) {
      found = this.tolerated(error)
    }
    if (typeof found === 'object')
      return found.then(
        (token) => this.authenticate(raw, message, checksum, uid, token),
        (error: unknown) => this.authenticate(raw, message, checksum, uid, this.tolerated(error)),
      )
    return this.authenticate(raw, message, checksum, uid, found)
  }

  /** Several sets and a uid that names none: every set's token is tried (in authenticate) before unknown_uid. */
  private tolerated(error: unknown): undefined {
    if (this.sets?.fallback === undefined || !(error instanceof ReceiverError && error.code === 'unknown_uid')) throw error
    return undefined
  }

  private authenticate(raw: RawDelivery, message: Message, checksum: string, uid: string | undefined, token: string | undefined): VerifiedPayment {
    const rendering = token === undefined ? undefined : matchChecksum(message, checksum, token)
    if (rendering === undefined) return this.verifyMismatch(raw, message, checksum, uid, token)
    if (rendering !== 'plain') this.logger.debug({ rendering }, `checksum matched the ${rendering} rendering of nested fields`)

    const verified = validateAndClassify(message, rendering, 'signed message')
    if (this.sets !== undefined) verified.credential = this.sets.chosen(uid)
    if (raw.query) verified.unsignedSource = queryBesideBody(raw)
    return verified
  }

  /** Off the ordinary path: another credential set, or the merchant's own query parameters before the fields. */
  private verifyMismatch(raw: RawDelivery, message: Message, checksum: string, uid: string | undefined, token: string | undefined): VerifiedPayment {
    if (token !== undefined && !raw.query) throw mismatchError()
    const recovered = recoverMismatch({ delivery: raw, message, checksum, uid, token, sets: this.sets })
    if (recovered.unsignedPrefix !== undefined) this.logger.debug({}, "the checksum matched after leaving the URL's own leading query parameters unsigned")
    if (recovered.credential?.by === 'checksum')
      this.logger.debug({ credential: recovered.credential.uid }, 'the message uid names no credential set; the checksum matched this set')
    const verified = validateAndClassify(recovered.message, recovered.rendering, 'signed message')
    verified.credential = recovered.credential
    verified.unsignedSource = recovered.unsignedPrefix ?? queryBesideBody(raw)
    return verified
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

/** One-off verification without deduplication: what the receiver does before it touches its store. */
export function verifyDelivery(delivery: RawDelivery, options: VerifyOptions): Promise<VerifiedPayment> {
  return new Verifier(options).verify(delivery)
}
