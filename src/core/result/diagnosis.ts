/**
 * Why a checksum did not verify: after the ordinary check failed, the verifier tries the transformations that
 * most often stand between a genuine message and its checksum (a token copied with a zero-width space, a body
 * re-serialised by a framework, a field added by a proxy...) and says which one makes it verify, or what it tried.
 *
 * What a diagnosis may hold: field names (quoted, cut short), Unicode names of characters found in the configured
 * token and where they sit (start, end, inside), the uid of another configured credential set. Never a value of a
 * field, never a token or any part or length of one, never an HMAC. It goes to the merchant's side only (the
 * ReceiverError, the log line, the timeline), never into the answer the sender gets. See docs/diagnosis.md.
 */

export type DiagnosisKind =
  /** The configured Checksum Token holds whitespace, quotes or invisible characters (U+200B, a BOM...). */
  | 'checksum_token'
  /** Another configured credential set's Checksum Token signed the message. */
  | 'other_credential'
  /** The fields came partly in the query string and partly in the body, and were signed together. */
  | 'query_and_body'
  /** A `+` was read as a space where the signer meant `+`, or the other way round. */
  | 'plus_and_space'
  /** Values were signed without the whitespace around them that they arrived with. */
  | 'values_trimmed'
  /** An empty value arrived as the text `null` (or `undefined`, `None`, `nil`). */
  | 'null_text'
  /** An amount arrived reformatted (`100.2` for the signed `100.20`, or the reverse). */
  | 'amount_format'
  /** A boolean arrived reformatted (`1`/`0`, `True`, for the signed `true`/`false`). */
  | 'boolean_format'
  /** Nested keys (params) arrived in another order than they were signed in. */
  | 'nested_key_order'
  /** Nested fields were signed in another rendering (JSON text), or arrived as JSON text. */
  | 'rendering'
  /** A field that was not signed was added to the message: the diagnosis names it. */
  | 'field_added'
  /** A field signed with an empty value is missing (frameworks drop empty or null fields). */
  | 'field_dropped'

/** One family of candidates, as tried. */
export interface DiagnosisAttempt {
  readonly kind: DiagnosisKind
  /**
   * What was tried, in words, or, when it matched, the transformation that makes the checksum verify. Names
   * fields and characters, never values.
   */
  readonly description: string
  /** How many candidate messages or tokens of this family were checked (0: not applicable to this message). */
  readonly candidates: number
  readonly matched: boolean
  /** field_added: the field that was not signed; field_dropped: the missing field, when it can be named. */
  readonly field?: string
}

export interface Diagnosis {
  /**
   * `matched`: one transformation made the checksum verify (see `match`); `unexplained`: none did; `skipped`:
   * not computed, because more checksums were refused this second than the receiver diagnoses.
   */
  readonly verdict: 'matched' | 'unexplained' | 'skipped'
  readonly match: DiagnosisAttempt | undefined
  /** Every family, in the order tried (up to and including the match). */
  readonly tried: readonly DiagnosisAttempt[]
  /** HMACs computed for the diagnosis. */
  readonly hmacs: number
  /** Whether the cap on HMACs (MAX_DIAGNOSIS_HMACS) stopped it before every candidate was tried. */
  readonly capped: boolean
  /** One line for logs and the timeline. */
  readonly summary: string
}

/** A diagnosis never computes more HMACs than this (about 0.1 ms of CPU for a 600-byte callback). */
export const MAX_DIAGNOSIS_HMACS = 128

/** Default of `diagnosisPerSecond`. */
export const DEFAULT_DIAGNOSES_PER_SECOND = 4

/** A field name as it may appear in a diagnosis: quoted with escapes, cut to 64 characters. */
export function summarise(verdict: Diagnosis['verdict'], tried: readonly DiagnosisAttempt[], hmacs: number, capped: boolean): string {
  const match = tried.find((attempt) => attempt.matched)
  if (verdict === 'matched' && match !== undefined) return `the checksum verifies with ${match.description}`
  const families = tried.filter((attempt) => attempt.candidates > 0).map((attempt) => attempt.kind)
  return (
    `no single transformation makes the checksum verify (tried ${families.length === 0 ? 'nothing applicable' : families.join(', ')}; ` +
    `${hmacs} HMAC${hmacs === 1 ? '' : 's'}${capped ? ', stopped at the cap' : ''}): the message was altered, or signed with a Checksum Token that is not configured`
  )
}

export function diagnosisOf(tried: readonly DiagnosisAttempt[], hmacs: number, capped: boolean): Diagnosis {
  const match = tried.find((attempt) => attempt.matched)
  const verdict = match === undefined ? 'unexplained' : 'matched'
  return Object.freeze({ verdict, match, tried: Object.freeze(tried.slice()), hmacs, capped, summary: summarise(verdict, tried, hmacs, capped) })
}

/**
 * At most `perSecond` diagnoses a second (a token bucket holding one second's worth), so a flood of forged
 * deliveries costs at most that many diagnoses' CPU a second on top of the refusals themselves. Genuine messages
 * refused for a configuration mistake come a few a minute: each gets its diagnosis.
 */
export class DiagnosisBudget {
  private available: number
  private last = Date.now()
  readonly skipped: Diagnosis

  constructor(private readonly perSecond: number) {
    if (!(perSecond >= 0)) throw new TypeError('diagnosisPerSecond must be a number >= 0')
    this.available = perSecond
    this.skipped = Object.freeze({
      verdict: 'skipped' as const,
      match: undefined,
      tried: Object.freeze([]),
      hmacs: 0,
      capped: false,
      summary:
        `not diagnosed: more than ${perSecond} checksums a second were refused (diagnosisPerSecond); ` +
        'run `fpx-collect verify --explain` on the captured body',
    })
  }

  get enabled(): boolean {
    return this.perSecond > 0
  }

  take(): boolean {
    const now = Date.now()
    this.available = Math.min(this.perSecond, this.available + ((now - this.last) / 1000) * this.perSecond)
    this.last = now
    if (this.available < 1) return false
    this.available -= 1
    return true
  }
}
