import type { Diagnosis } from './diagnosis.js'

/**
 * Every way a delivery can be refused, with the HTTP status the sender gets. The codes are part of the public
 * API: merchants match on them, and the service sees them in response bodies.
 */
export const receiverErrorStatus = {
  empty_body: 400,
  malformed_body: 400,
  too_many_fields: 400,
  invalid_encoding: 400,
  duplicate_field: 400,
  invalid_field_name: 400,
  invalid_fields: 400,
  needs_confirmation: 400,
  result_mismatch: 400,
  link_expired: 410,
  checksum_missing: 401,
  checksum_malformed: 401,
  checksum_mismatch: 401,
  unknown_uid: 401,
  body_timeout: 408,
  in_progress: 409,
  body_too_large: 413,
  unsupported_media_type: 415,
  unsupported_encoding: 415,
  body_already_parsed: 500,
  credential_lookup_failed: 500,
  handler_failed: 500,
  lease_lost: 500,
  internal_error: 500,
  store_unavailable: 503,
  confirmation_pending: 503,
  confirmation_unavailable: 503,
  expect_failed: 503,
  no_handler: 503,
} as const

export type ReceiverErrorCode = keyof typeof receiverErrorStatus

/**
 * A delivery the receiver refused or could not finish. `message` is written for the merchant's developer and
 * never contains a token.
 */
export class ReceiverError extends Error {
  override readonly name = 'ReceiverError'
  readonly code: ReceiverErrorCode
  readonly status: number
  /** Field names involved, for `invalid_fields` and `duplicate_field`. */
  readonly fields: readonly string[] | undefined
  /**
   * For `checksum_mismatch` and `unknown_uid`: which transformation would have made the checksum verify (a
   * Checksum Token with a zero-width space, a field added by a proxy...), or what was tried. For the merchant's
   * eyes: it is never part of `message` or of the answer the sender gets. See docs/diagnosis.md.
   */
  readonly diagnosis: Diagnosis | undefined

  constructor(
    code: ReceiverErrorCode,
    message: string,
    options?: { fields?: readonly string[]; cause?: unknown; diagnosis?: Diagnosis | undefined },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.status = receiverErrorStatus[code]
    this.fields = options?.fields
    this.diagnosis = options?.diagnosis
  }
}

/**
 * A name or uid the sender chose, as a refusal message or a diagnosis shows it: JSON-quoted (so CR, LF and quotes
 * are escapes, and a message stays one log line the sender cannot extend) and cut at 64 characters.
 */
export function quotedName(name: string): string {
  const shown = withoutTokenForms(name)
  return JSON.stringify(shown.length > 64 ? `${shown.slice(0, 64)}…` : shown)
}

/** A run of letters and digits as long as an Auth Token or longer: a name the service gives has none (its words are joined by `_`). */
const TOKEN_RUN = /[A-Za-z0-9]{20,}/g
const TOKEN_RUN_SHOWN = '[20 or more letters and digits]'

/**
 * Text the sender chose with every run that could be (or hold) an Auth Token taken out, unless it is hexadecimal
 * (a merchant id, a Checksum Token's form: neither is the Auth Token). For refusals that come before the receiver
 * knows the tokens (a partner's resolver is asked by uid, after parsing): a buyer holding a result that echoed the
 * Auth Token (`token`) can put it in a field name or inside a longer uid.
 */
export function withoutTokenForms(text: string): string {
  return text.replace(TOKEN_RUN, (run) => (MERCHANT_ID_FORM.test(run) ? run : TOKEN_RUN_SHOWN))
}

/**
 * What an app's code threw when given `text` the sender chose (a partner's resolver, asked by an unverified uid), as
 * a refusal may keep it for its cause, which is logged: itself when `text` holds no run of the Auth Token's form,
 * else a copy (its name, message and stack) with those runs shown as withoutTokenForms shows them, since such code
 * often says what it was given (`merchant <uid> not found`).
 */
export function causeWithoutTokenForms(thrown: unknown, text: string): unknown {
  const runs = (text.match(TOKEN_RUN) ?? []).filter((run) => !MERCHANT_ID_FORM.test(run))
  if (runs.length === 0) return thrown
  const shown = (quoted: string) => runs.reduce((out, run) => out.split(run).join(TOKEN_RUN_SHOWN), quoted)
  const copy = new Error(shown(thrownMessage(thrown)))
  try {
    if (thrown instanceof Error) {
      copy.name = shown(printable(thrown.name))
      copy.stack = typeof thrown.stack === 'string' ? shown(thrown.stack) : `${copy.name}: ${copy.message}`
    }
  } catch {
    copy.stack = copy.message
  }
  return copy
}

/** The Auth Token's form (spec, Credentials): 20 letters or digits. */
const AUTH_TOKEN_FORM = /^[A-Za-z0-9]{20}$/
/** A merchant id as real messages carry it under `uid`: hexadecimal (one of 20 digits has the token's length). */
const MERCHANT_ID_FORM = /^[0-9a-f]+$/i

/**
 * An unverified uid as a refusal message names it: quoted, unless it has the Auth Token's form and is no
 * hexadecimal merchant id, then only its length. Names are not signed, and a result may echo the Auth Token as
 * `token`: the buyer can resend theirs with the token's value under `uid`, and a message that quoted it would put
 * the token in the answer, the log and the console.
 */
export function quotedUid(uid: string): string {
  return AUTH_TOKEN_FORM.test(uid) && !MERCHANT_ID_FORM.test(uid) ? 'of 20 letters and digits (not repeated: an Auth Token has that form)' : quotedName(uid)
}

export function isReceiverError(value: unknown): value is ReceiverError {
  return value instanceof ReceiverError
}

/**
 * A thrown value as text, whatever a handler threw: String() throws for an object without a prototype or with a
 * throwing toString, and a failure must still be answered and its claim released.
 */
export function printable(value: unknown): string {
  try {
    return String(value)
  } catch {
    try {
      return Object.prototype.toString.call(value)
    } catch {
      return '[a value that cannot be shown as text]'
    }
  }
}

/**
 * A thrown value's message as text (an Error's, with its name when `withName`), never throwing: an Error's name or
 * message may be anything, and `instanceof` throws for a revoked Proxy.
 */
export function thrownMessage(value: unknown, withName = false): string {
  try {
    if (!(value instanceof Error)) return printable(value)
    return withName ? `${printable(value.name)}: ${printable(value.message)}` : printable(value.message)
  } catch {
    return '[a thrown value that cannot be read]'
  }
}
