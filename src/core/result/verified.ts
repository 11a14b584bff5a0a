import { classify, type Payment, type PaymentState, toPayment } from '../payment.js'
import { type FieldInput, type FieldValue, toPlain } from '../values.js'
import type { MatchedCredential } from './credentials.js'
import { ReceiverError } from './errors.js'
import { findFieldProblems } from './fields.js'
import { type Message, messageOf, type Rendering } from './message.js'
import { readUnsignedQuery } from './query-splits.js'

const REDACTED = '[redacted]'

/** Shorter secrets (a test's) are hidden where they are a whole value only: inside others they would mangle text. */
const SHORTEST_INSIDE = 8

/** `text` with every occurrence of each secret replaced by REDACTED. */
function hiddenText(text: string, secrets: readonly string[]): string {
  if (secrets.includes(text)) return REDACTED
  return secrets.reduce((shown, secret) => (secret.length >= SHORTEST_INSIDE && shown.includes(secret) ? shown.split(secret).join(REDACTED) : shown), text)
}

/**
 * `value` with every occurrence of each secret replaced by REDACTED, in nested objects and arrays too, and in their
 * keys: a nested key is a name the buyer chose as freely as a top-level one (`a[<token>]`).
 */
function hidden(value: unknown, secrets: readonly string[]): unknown {
  if (secrets.length === 0) return value
  if (typeof value === 'string') return hiddenText(value, secrets)
  if (Array.isArray(value)) return value.map((item) => hidden(item, secrets))
  if (value === null || typeof value !== 'object') return value
  const out: Record<string, unknown> = Object.create(null)
  for (const [key, item] of Object.entries(value)) out[hiddenText(key, secrets)] = hidden(item, secrets)
  return out
}

/** A payment result whose checksum matched (or that came over the authenticated API), with valid fields. */
export class VerifiedPayment {
  readonly state: PaymentState
  readonly exchangeNumber: string
  readonly orderNumber: string
  /** With `credentials`: the set whose Checksum Token matched, and how it was chosen. */
  credential: MatchedCredential | undefined = undefined
  /**
   * The API UID whose Checksum Token verified it (several `credentials`, or a resolver), or whose API record it is;
   * undefined with one checksumToken. Never the message's uid field read by name alone.
   */
  signerUid: string | undefined = undefined
  /** Query text holding the merchant's own, unsigned parameters, if any; parsed when read. */
  unsignedSource: string | undefined = undefined
  /**
   * Whether the values the receiver acts on could stand under no other name (docs/security.md, signature only).
   * True for API records. verifyDelivery only reports it: confirm a result that is not before trusting its names.
   */
  pinned = true
  /** Why it is not pinned, naming fields (never values); undefined when pinned. */
  unpinnedReason: string | undefined = undefined

  /**
   * The parsed message. A true private field, so that util.inspect and console.log of a verified result (which
   * merchants log) never show its raw values: a result may carry `token`, the Auth Token, which `fields` redacts.
   */
  readonly #message: Message
  /** The credentials' own values (the Auth Token), redacted in `fields` under any name: names are not signed. */
  #secrets: readonly string[] = []

  constructor(
    message: Message,
    /** Which rendering of nested fields the checksum matched (`plain` when nothing is nested). */
    readonly rendering: Rendering,
  ) {
    this.#message = message
    this.state = classify(message.text('payment_status') as string, message.text('fpx_debit_auth_code'))
    this.exchangeNumber = message.text('exchange_number') as string
    this.orderNumber = message.text('order_number') as string
  }

  /** Whether the message carries a non-empty value for this (top-level) field. */
  has(name: string): boolean {
    const value = this.#message.text(name)
    return value !== undefined && value !== ''
  }

  /** A top-level field's text as received. */
  text(name: string): string | undefined {
    return this.#message.text(name)
  }

  /**
   * The typed view: booleans, amounts in sen, dates. The credentials' own values read `[redacted]` in it as in
   * `fields`: a buyer can rename the token's value into a field it reads (`uid`, with the names after it renamed
   * past that one), or a bracket name keyed by it into `params`.
   */
  get payment(): Payment {
    const secrets = this.#secrets
    const payment = toPayment(
      this.state,
      (name) => {
        const text = this.#message.text(name)
        return text === undefined ? text : hiddenText(text, secrets)
      },
      (name) => this.#message.get(name),
    )
    return payment.params === null || secrets.length === 0 ? payment : { ...payment, params: hidden(payment.params, secrets) as Record<string, unknown> }
  }

  /**
   * The callback or redirect URL's own query parameters (`?shop=42`), which the service does not sign. Never part
   * of `fields`; trust them only as far as anything a browser can change. The credentials' own values read
   * `[redacted]` in them as in `fields`: the buyer may put there the Auth Token a result echoed to them.
   */
  get unsignedQuery(): Readonly<Record<string, string>> {
    const query = readUnsignedQuery(this.unsignedSource, (name) => this.#message.has(name))
    return this.#secrets.length === 0 ? query : Object.freeze(hidden(query, this.#secrets) as Record<string, string>)
  }

  /**
   * Every field as received (text, nested objects for `params` and the like), in a prototype-free object; a
   * `token` field reads `[redacted]`: some results echo the merchant's Auth Token, which no log or page may show.
   * The credentials' own values read `[redacted]` in names too: the buyer can rename a field to the token's value.
   */
  get fields(): Readonly<Record<string, unknown>> {
    const fields: Record<string, unknown> = Object.create(null)
    this.#message.names.forEach((name, i) => {
      fields[hiddenText(name, this.#secrets)] = name === 'token' ? REDACTED : hidden(toPlain(this.#message.values[i] as FieldValue), this.#secrets)
    })
    return Object.freeze(fields)
  }

  /**
   * Redacts these values (the verifying set's Auth Token) in `fields` whatever their name and wherever they stand: a
   * buyer can resend a result that echoes the token with `token` renamed (`tokens` sorts to the same place), nested
   * under a bracket name (`tokens[x]`, which the `flat` rendering signs as the genuine string), or joined with its
   * neighbour into one value (`<status_url>|<token>`), and the checksum still matches. In names too: the buyer can
   * rename another field to the token's value (or `a[<token>]`) where it sorts in that field's place (`amount` is
   * first, and a token that starts with a capital sorts before it).
   */
  hideValues(secrets: readonly (string | undefined)[]): void {
    this.#secrets = secrets.filter((secret): secret is string => typeof secret === 'string' && secret !== '')
  }

  /**
   * For the API's record handled in place of the delivered result: the URL's own parameters that came with it, and
   * the values it hides in them.
   */
  takeUnsignedFrom(delivered: VerifiedPayment): void {
    this.unsignedSource = delivered.unsignedSource
    this.#secrets = [...new Set([...this.#secrets, ...delivered.#secrets])]
  }

  /** The signed values in order with their names, for the signature-only check. */
  signedFields(): { name: string; text: string }[] {
    return this.#message.signedFields(this.rendering)
  }

  toJSON(): Record<string, unknown> {
    const { state, exchangeNumber, orderNumber, rendering, credential, signerUid, pinned, payment, fields } = this
    return { state, exchangeNumber, orderNumber, rendering, credential, signerUid, pinned, payment, fields }
  }
}

/**
 * The checks and classification every payment result goes through once it is trusted, by its checksum or because
 * it came over the authenticated API. Throws ReceiverError `invalid_fields`.
 */
export function validated(message: Message, rendering: Rendering, what: string): VerifiedPayment {
  const problems = findFieldProblems(
    (name) => message.has(name),
    (name) => message.text(name),
  )
  if (problems.length > 0) {
    const detail = problems.map((problem) => `${problem.field} (expected ${problem.expected})`).join(', ')
    throw new ReceiverError('invalid_fields', `${what} has missing or invalid fields: ${detail}`, { fields: problems.map((problem) => problem.field) })
  }
  return new VerifiedPayment(message, rendering)
}

/**
 * A payment record read over the authenticated API (reconciliation, confirmation): checked and classified like a
 * delivery, with no checksum, because it is trusted for where it came from. Never for anything a browser or
 * another server sent.
 */
export function trustedPayment(fields: Readonly<Record<string, FieldInput>>): VerifiedPayment {
  return validated(messageOf(fields), 'plain', 'the API record')
}
