import type { CredentialOptions, CredentialSet } from './credentials.js'
import type { Diagnosis } from './diagnosis.js'
import { ReceiverError } from './errors.js'
import { hexDigestsEqual, hmacSha256Hex } from '../hmac.js'
import type { Message, Rendering, SignedText } from './message.js'

/**
 * Which configured credential set authenticated a message, when the receiver was given `credentials`:
 * - `uid`: the message's uid is the set's API UID (the usual case, one HMAC);
 * - `only`: one set is configured, so it was used whatever the message's uid;
 * - `checksum`: the message's uid matched no set (real messages may sign a merchant id that is not the API UID),
 *   and this set's Checksum Token was the one whose HMAC matched.
 * Never carries the token.
 */
export interface MatchedCredential {
  /** The API UID of the matching set, as configured. */
  readonly uid: string
  /** Its position in `credentials`. */
  readonly index: number
  readonly by: 'uid' | 'only' | 'checksum'
}

/** A Checksum Token to try, and what to report when it matches. */
export interface CandidateKey {
  readonly token: string
  readonly credential: MatchedCredential | undefined
}

export interface KeyMatch {
  readonly rendering: Rendering
  readonly credential: MatchedCredential | undefined
}

/**
 * The configured sets, prepared once: the per-set report for the fast path (a map lookup, no allocation per
 * delivery) and the list the fallback walks when a message's uid matches none.
 */
export class CredentialIndex {
  private readonly byUid = new Map<string, MatchedCredential>()
  private readonly only: MatchedCredential | undefined
  /** Every set, for a message whose uid matches none; undefined with a single set (it is used directly). */
  readonly fallback: readonly CandidateKey[] | undefined

  constructor(sets: readonly CredentialSet[]) {
    // As the token lookup does: a uid given twice keeps its last token.
    const tokens = new Map<string, string>()
    sets.forEach((set, index) => {
      this.byUid.set(set.uid, Object.freeze({ uid: set.uid, index, by: 'uid' as const }))
      tokens.set(set.uid, set.checksumToken)
    })
    const distinct = [...this.byUid.values()]
    const first = distinct[0]
    this.only = distinct.length === 1 && first !== undefined ? Object.freeze({ ...first, by: 'only' as const }) : undefined
    this.fallback =
      distinct.length > 1
        ? distinct.map((set) => ({ token: tokens.get(set.uid) as string, credential: Object.freeze({ ...set, by: 'checksum' as const }) }))
        : undefined
  }

  /** The set the fast path used for a message with this uid (the lookup already chose its token). */
  chosen(uid: string | undefined): MatchedCredential | undefined {
    return (uid === undefined ? undefined : this.byUid.get(uid)) ?? this.only
  }
}

export function credentialIndex(options: CredentialOptions): CredentialIndex | undefined {
  return options.credentials === undefined ? undefined : new CredentialIndex(options.credentials)
}

/**
 * Tries each key against each signed string of the message: O(keys × renderings) HMACs, each compared in
 * constant time. The signed strings are built once (`texts`, when the caller built them). Returns the first match.
 */
export function matchKeys(
  message: Message,
  checksum: string,
  keys: readonly CandidateKey[],
  texts: readonly SignedText[] = message.signedTexts(),
): KeyMatch | undefined {
  for (const key of keys) {
    for (const candidate of texts) {
      if (hexDigestsEqual(hmacSha256Hex(key.token, candidate.data), checksum)) return { rendering: candidate.rendering, credential: key.credential }
    }
  }
  return undefined
}

/** The refusal when no configured set's token matches a message whose uid names none of them. */
export function noSetMatched(uid: string | undefined, sets: number, diagnosis?: Diagnosis): ReceiverError {
  const which = uid === undefined ? 'the message has no uid field' : `uid "${uid}" is not the API UID of any configured credential set`
  return new ReceiverError(
    'unknown_uid',
    `${which}, and its checksum matches none of the ${sets} configured Checksum Tokens (the message was altered or signed with a token that is not configured)`,
    { diagnosis },
  )
}
