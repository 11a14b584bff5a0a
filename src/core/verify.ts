import { DEFAULT_MAX_BODY_BYTES, loadBody, type RawDelivery, readFields } from './body.js'
import { CHECKSUM_PATTERN, matchChecksum } from './checksum.js'
import { type CredentialOptions, tokenLookup } from './credentials.js'
import { ReceiverError } from './errors.js'
import { type Logger, silentLogger } from './logger.js'
import { type Message, type Rendering, toMessage } from './message.js'
import { classify, type Payment, type PaymentState, toPayment } from './payment.js'
import { findFieldProblems } from './fields.js'
import { ShapeCache } from './shape.js'
import { type FieldValue, toPlain } from './values.js'

export type VerifyOptions = CredentialOptions & {
  /** Larger bodies get 413. Default 64 KiB. */
  maxBodyBytes?: number
  logger?: Logger
}

/** A delivery whose checksum matched and whose fields are valid. */
export class VerifiedPayment {
  readonly state: PaymentState
  readonly exchangeNumber: string
  /** Which rendering of nested fields the checksum matched (`plain` when nothing is nested). */
  readonly rendering: Rendering
  private cachedPayment: Payment | undefined
  private cachedFields: Readonly<Record<string, unknown>> | undefined

  constructor(
    private readonly message: Message,
    state: PaymentState,
    rendering: Rendering,
  ) {
    this.state = state
    this.rendering = rendering
    this.exchangeNumber = message.text('exchange_number') as string
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
  private readonly shapes = new ShapeCache()
  readonly maxBodyBytes: number
  private readonly logger: Logger

  constructor(options: VerifyOptions) {
    this.lookup = tokenLookup(options)
    this.maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
    this.logger = options.logger ?? silentLogger
    if (!(Number.isInteger(this.maxBodyBytes) && this.maxBodyBytes > 0))
      throw new TypeError('maxBodyBytes must be a positive integer')
  }

  async verify(delivery: RawDelivery): Promise<VerifiedPayment> {
    const raw = delivery.body == null && (delivery.readBody ?? delivery.consumedBy) !== undefined ? await loadBody(delivery, this.maxBodyBytes) : delivery
    const message = toMessage(readFields(raw, this.maxBodyBytes), this.shapes)
    const checksum = message.text('checksum')
    if (checksum === undefined) throw new ReceiverError('checksum_missing', 'the message has no checksum field')
    if (!CHECKSUM_PATTERN.test(checksum))
      throw new ReceiverError('checksum_malformed', 'the checksum field is not 64 hexadecimal characters')
    const found = this.lookup(message.text('uid'))
    const token = typeof found === 'string' ? found : await found
    const rendering = matchChecksum(message, checksum, token)
    if (rendering === undefined)
      throw new ReceiverError('checksum_mismatch', 'the checksum does not match the fields; the message was altered or signed with another Checksum Token')
    if (rendering !== 'plain') this.logger.debug({ rendering }, `checksum matched the ${rendering} rendering of nested fields`)

    return validateAndClassify(message, rendering, 'signed message')
  }
}

/**
 * The checks and classification every payment result goes through once it is trusted, by its checksum or
 * because it came over the authenticated API. Throws ReceiverError `invalid_fields`.
 */
export function validateAndClassify(message: Message, rendering: Rendering, what: string): VerifiedPayment {
  const problems = findFieldProblems(
    (name) => message.shape.index[name] !== undefined,
    (name) => message.text(name),
    message.hasNestedValues,
  )
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
