import { isChecksumToken } from '../checksum-token.js'
import type { Diagnosis } from './diagnosis.js'
import { quotedName, ReceiverError } from './errors.js'
import { hexDigestsEqual, hmacSha256Hex } from '../hmac.js'
import type { Message, Rendering, SignedText } from './message.js'

/*
 * The receiver's credential sets in one place: which Checksum Token a message's uid chooses (the set it names, or
 * the only set whatever the uid), the sets tried when the uid names none, the HMAC trials over them, and the one
 * `unknown_uid` refusal.
 */

export interface CredentialSet {
  /** API UID: the `uid` field of messages signed with this set. */
  readonly uid: string
  readonly checksumToken: string
}

/** Exactly one way to find the Checksum Token that signed a message. */
export type CredentialOptions =
  | { checksumToken: string; credentials?: never; resolveChecksumToken?: never }
  | { credentials: readonly CredentialSet[]; checksumToken?: never; resolveChecksumToken?: never }
  | {
      /** For partners and many merchants: look the token up by the message's uid; return nothing if unknown. */
      resolveChecksumToken: (uid: string) => string | null | undefined | Promise<string | null | undefined>
      checksumToken?: never
      credentials?: never
    }

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

/**
 * The matched sets whose Checksum Token another configured set has too: the checksum cannot tell those apart, and
 * the set chosen is the one the message's uid field named, which a buyer can rename another value into.
 */
const SHARED_TOKEN = new WeakSet<MatchedCredential>()

/** A Checksum Token to try, and what to report when it matches (undefined without `credentials`). */
export interface CandidateKey {
  readonly token: string
  readonly credential: MatchedCredential | undefined
  /** The API UID the token was looked up by (resolveChecksumToken), when no configured set says it. */
  readonly uid?: string
}

/**
 * The key for a message's uid: synchronously when it can be (the hot path: a map lookup, no allocation), a promise
 * with `resolveChecksumToken`, or undefined when the uid names none of several sets (then every set in `fallback`
 * is tried). Throws, or rejects with, `unknown_uid` when no key can be chosen.
 */
export type KeyLookup = (uid: string | undefined) => CandidateKey | Promise<CandidateKey> | undefined

export interface Credentials {
  readonly keyFor: KeyLookup
  /** Every set, for a message whose uid names none; undefined unless several sets are configured. */
  readonly fallback: readonly CandidateKey[] | undefined
}

/**
 * `unknown_uid`: no Checksum Token for the message's uid, or, with `tried`, none of the configured sets' tokens
 * matched a message whose uid names none of them. Never names a token.
 */
export function unknownUid(uid: string | undefined, tried?: { readonly tokens: number; readonly diagnosis?: Diagnosis }): ReceiverError {
  if (tried === undefined)
    return new ReceiverError(
      'unknown_uid',
      uid === undefined ? 'the message has no uid field, so its credential set cannot be chosen' : `no Checksum Token is configured for uid ${quotedName(uid)}`,
    )
  const which = uid === undefined ? 'the message has no uid field' : `uid ${quotedName(uid)} is not the API UID of any configured credential set`
  return new ReceiverError(
    'unknown_uid',
    `${which}, and its checksum matches none of the ${tried.tokens} configured Checksum Tokens (the message was altered or signed with a token that is not configured)`,
    { diagnosis: tried.diagnosis },
  )
}

function checkedUid(uid: unknown, where: string): string {
  if (typeof uid !== 'string' || uid === '') throw new TypeError(`${where} must be a non-empty string`)
  return uid
}

function checkedToken(token: unknown, where: string): string {
  if (!isChecksumToken(token)) throw new TypeError(`${where} must be a non-empty string (and not NUL characters only)`)
  return token
}

/** What a looked-up token was instead of one, in words that never hold its value. */
function notAToken(token: unknown): string {
  if (typeof token === 'string') return 'NUL characters only'
  if (typeof token !== 'object') return `a ${typeof token}`
  return Buffer.isBuffer(token) ? 'a Buffer' : Array.isArray(token) ? 'an array' : 'an object'
}

/** The configured sets, prepared once: one frozen key per set and way of choosing it. */
function setsOf(sets: readonly CredentialSet[]): Credentials {
  // A uid given twice keeps its first place and its last token and index.
  const tokens = new Map<string, { token: string; index: number }>()
  for (const [index, set] of sets.entries())
    tokens.set(checkedUid(set.uid, `credentials[${index}].uid`), { token: checkedToken(set.checksumToken, `credentials[${index}].checksumToken`), index })
  const entries = [...tokens]
  const holders = new Map<string, number>()
  for (const [, { token }] of entries) holders.set(token, (holders.get(token) ?? 0) + 1)
  const keyOf = ([uid, { token, index }]: (typeof entries)[number], by: MatchedCredential['by']): CandidateKey => {
    const credential = Object.freeze({ uid, index, by })
    if ((holders.get(token) ?? 0) > 1) SHARED_TOKEN.add(credential)
    return Object.freeze({ token, credential })
  }
  const byUid = new Map(entries.map((entry) => [entry[0], keyOf(entry, 'uid')]))
  const first = entries[0]
  // One set: it signed the message whatever uid it carries (real messages may sign a merchant id instead).
  const only = entries.length === 1 && first !== undefined ? keyOf(first, 'only') : undefined
  const fallback = entries.length > 1 ? entries.map((entry) => keyOf(entry, 'checksum')) : undefined
  return {
    fallback,
    keyFor: (uid) => {
      const key = (uid === undefined ? undefined : byUid.get(uid)) ?? only
      if (key === undefined && fallback === undefined) throw unknownUid(uid)
      return key
    },
  }
}

function resolverOf(resolve: unknown): Credentials {
  if (typeof resolve !== 'function') throw new TypeError('resolveChecksumToken must be a function')
  return {
    fallback: undefined,
    keyFor: async (uid) => {
      if (uid === undefined) throw unknownUid(uid)
      let token: unknown
      try {
        token = await resolve(uid)
      } catch (error) {
        throw new ReceiverError('credential_lookup_failed', `resolveChecksumToken threw for uid ${quotedName(uid)}`, { cause: error })
      }
      if (token === null || token === undefined || token === '') throw unknownUid(uid)
      // Hashed as it is, an empty Buffer or list would be the empty key, and Node's own error for a number quotes it.
      if (!isChecksumToken(token))
        throw new ReceiverError(
          'credential_lookup_failed',
          `resolveChecksumToken gave ${notAToken(token)} for uid ${quotedName(uid)}, not a Checksum Token (a non-empty string)`,
        )
      // Each uid has a token of its own: one that verifies the message names the uid it was looked up by.
      return { token, credential: undefined, uid }
    },
  }
}

export function credentials(options: CredentialOptions): Credentials {
  const given = [options.checksumToken, options.credentials, options.resolveChecksumToken].filter((x) => x !== undefined)
  if (given.length !== 1) throw new TypeError('give exactly one of checksumToken, credentials or resolveChecksumToken')
  if (options.credentials !== undefined) return setsOf(options.credentials)
  if (options.resolveChecksumToken !== undefined) return resolverOf(options.resolveChecksumToken)
  const key: CandidateKey = Object.freeze({ token: checkedToken(options.checksumToken, 'checksumToken'), credential: undefined })
  return { fallback: undefined, keyFor: () => key }
}

export interface KeyMatch {
  readonly rendering: Rendering
  readonly credential: MatchedCredential | undefined
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

/**
 * The API UID whose Checksum Token verified a message: the matched set's, or the uid resolveChecksumToken looked
 * the token up by; undefined with one checksumToken, or when several configured sets share the token (the
 * checksum proves none of them over the others).
 */
export function signerOf(credential: MatchedCredential | undefined, key: CandidateKey | undefined): string | undefined {
  if (credential !== undefined) return SHARED_TOKEN.has(credential) ? undefined : credential.uid
  return key?.uid
}
