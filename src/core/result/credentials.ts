import { isChecksumToken } from '../checksum-token.js'
import type { Diagnosis } from './diagnosis.js'
import { causeWithoutTokenForms, quotedUid, ReceiverError } from './errors.js'

/*
 * The receiver's credential sets in one place: which Checksum Token a message's uid chooses (the set it names, or
 * the only set whatever the uid), the sets tried when the uid names none, and the one `unknown_uid` refusal.
 */

export interface CredentialSet {
  /** API UID: the `uid` field of messages signed with this set, and the Basic-auth username. */
  readonly uid: string
  readonly checksumToken: string
  /** The Auth Token: with it (and `environment`), the receiver confirms results over the API with this set. */
  readonly authToken?: string
}

/** Exactly one way to find the Checksum Token that signed a message. */
export type CredentialOptions =
  | { checksumToken: string; credentials?: never; resolveChecksumToken?: never; resolveCredentials?: never }
  | { credentials: CredentialSet | readonly CredentialSet[]; checksumToken?: never; resolveChecksumToken?: never; resolveCredentials?: never }
  | {
      /** For partners and many merchants: look the token up by the message's uid; return nothing if unknown. */
      resolveChecksumToken: (uid: string) => string | null | undefined | Promise<string | null | undefined>
      checksumToken?: never
      credentials?: never
      resolveCredentials?: never
    }
  | {
      /** As resolveChecksumToken, with the whole set (and its Auth Token, to confirm over the API). */
      resolveCredentials: (uid: string) => CredentialSet | null | undefined | Promise<CredentialSet | null | undefined>
      checksumToken?: never
      credentials?: never
      resolveChecksumToken?: never
    }

/**
 * Which configured credential set authenticated a message, when the receiver was given `credentials`:
 * - `uid`: the message's uid is the set's API UID (the usual case, one HMAC);
 * - `only`: one set is configured, so it was used whatever the message's uid;
 * - `checksum`: the message's uid matched no set, and this set's Checksum Token was the one whose HMAC matched.
 * Never carries a token.
 */
export interface MatchedCredential {
  /** The API UID of the matching set, as configured. */
  readonly uid: string
  /** Its position in `credentials` (-1 for a set a resolver gave). */
  readonly index: number
  readonly by: 'uid' | 'only' | 'checksum'
}

/** A Checksum Token to try, and what to report when it matches. */
export interface CandidateKey {
  readonly token: string
  readonly credential: MatchedCredential | undefined
  /**
   * The API UID whose token this is, when the checksum proves it: undefined with one bare checksumToken, and when
   * several configured sets share the token (the set chosen is then the one the message's uid named, which a buyer
   * can rename another value into).
   */
  readonly signer: string | undefined
  /** The whole set, for the API client that confirms what it signed. */
  readonly set: CredentialSet | undefined
}

export interface Credentials {
  /**
   * The keys to try for a message's uid, in order; whether they are every set's because the uid named none
   * (fallback); and the other configured sets' keys, which a diagnosis tries.
   */
  keysFor(uid: string | undefined): Promise<{ keys: readonly CandidateKey[]; fallback: boolean; others: readonly CandidateKey[] }>
  /** Every configured set (for sweeping and the API clients), empty with a bare token or a resolver. */
  readonly sets: readonly CredentialSet[]
  /** Whether every way of finding a token also gives an Auth Token: then results can be confirmed. */
  readonly confirmable: boolean
  /**
   * The API UID a record read over the API for `uid` is filed under (its order's paid mark and book entry): the
   * signer a delivery for `uid` gets, so that a result reconciled and one delivered find each other's order.
   */
  signerFor(uid: string | undefined): string | undefined
}

/**
 * `unknown_uid`: no Checksum Token for the message's uid, or, with `tried`, none of the configured sets' tokens
 * matched a message whose uid names none of them. Never names a token.
 */
export function unknownUid(uid: string | undefined, tried?: { readonly tokens: number; readonly diagnosis?: Diagnosis }): ReceiverError {
  if (tried === undefined)
    return new ReceiverError(
      'unknown_uid',
      uid === undefined ? 'the message has no uid field, so its credential set cannot be chosen' : `no Checksum Token is configured for uid ${quotedUid(uid)}`,
    )
  const which = uid === undefined ? 'the message has no uid field' : `uid ${quotedUid(uid)} is not the API UID of any configured credential set`
  return new ReceiverError(
    'unknown_uid',
    `${which}, and its checksum matches none of the ${tried.tokens} configured Checksum Tokens (the message was altered or signed with a token that is not configured)`,
    { diagnosis: tried.diagnosis },
  )
}

function checkedSet(set: CredentialSet, where: string): CredentialSet {
  if (set === null || typeof set !== 'object') throw new TypeError(`${where} must be { uid, checksumToken, authToken? }`)
  if (typeof set.uid !== 'string' || set.uid === '') throw new TypeError(`${where}.uid must be a non-empty string (it is ${set.uid === undefined ? 'undefined' : typeof set.uid})`)
  if (!isChecksumToken(set.checksumToken))
    throw new TypeError(`${where}.checksumToken must be a non-empty string (it is ${set.checksumToken === undefined ? 'undefined' : 'not a usable token'})`)
  if (set.authToken !== undefined && (typeof set.authToken !== 'string' || set.authToken === ''))
    throw new TypeError(`${where}.authToken must be a non-empty string when given`)
  return set
}

/** The configured sets, prepared once: one key per set and way of choosing it. */
function setsOf(given: CredentialSet | readonly CredentialSet[]): Credentials {
  const list = Array.isArray(given) ? (given as readonly CredentialSet[]) : [given as CredentialSet]
  if (list.length === 0) throw new TypeError('credentials must hold at least one credential set')
  const checked = list.map((set, i) => checkedSet(set, Array.isArray(given) ? `credentials[${i}]` : 'credentials'))
  // A uid given twice keeps its first place and its last set (and that set's index).
  const byUidGiven = new Map<string, { set: CredentialSet; index: number }>()
  checked.forEach((set, index) => byUidGiven.set(set.uid, { set, index }))
  const sets = [...byUidGiven.values()].map(({ set }) => set)
  const indexOf = new Map([...byUidGiven.values()].map(({ set, index }) => [set, index]))
  const holders = new Map<string, number>()
  for (const set of sets) holders.set(set.checksumToken, (holders.get(set.checksumToken) ?? 0) + 1)
  const keyOf = (set: CredentialSet, by: MatchedCredential['by']): CandidateKey => ({
    token: set.checksumToken,
    credential: Object.freeze({ uid: set.uid, index: indexOf.get(set) ?? -1, by }),
    signer: (holders.get(set.checksumToken) ?? 0) > 1 ? undefined : set.uid,
    set,
  })
  const byUid = new Map(sets.map((set) => [set.uid, keyOf(set, 'uid')]))
  const only = sets.length === 1 ? keyOf(sets[0] as CredentialSet, 'only') : undefined
  const all = sets.map((set) => keyOf(set, 'checksum'))
  return {
    sets,
    confirmable: sets.every((set) => set.authToken !== undefined),
    signerFor: (uid) => {
      const named = (uid === undefined ? undefined : byUid.get(uid)) ?? only
      return named === undefined ? uid : named.signer
    },
    keysFor: async (uid) => {
      // One set signed the message whatever uid it carries (real messages may sign a merchant id instead).
      const named = (uid === undefined ? undefined : byUid.get(uid)) ?? only
      if (named === undefined) return { keys: all, fallback: true, others: [] }
      return { keys: [named], fallback: false, others: all.filter((key) => key.token !== named.token) }
    },
  }
}

/** What a resolver gave instead of a token, in words that never hold its value. */
function notAToken(token: unknown): string {
  if (typeof token === 'string') return 'NUL characters only'
  if (typeof token !== 'object') return `a ${typeof token}`
  return Array.isArray(token) ? 'an array' : 'an object'
}

/**
 * How long a resolver may take by default: as long as a store call (half the default lease, at most 10 s). A lookup
 * that never answers (a database query on a stalled connection) must not leave the delivery with no answer at all.
 */
export const DEFAULT_LOOKUP_WITHIN_MS = 10_000

/** The resolver's answer, or a rejection once `withinMs` has passed without it. */
async function lookedUpWithin(lookup: () => unknown, withinMs: number): Promise<unknown> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`the lookup did not answer within ${withinMs} ms`)), withinMs)
  })
  try {
    return await Promise.race([new Promise((resolve) => resolve(lookup())), late])
  } finally {
    clearTimeout(timer)
  }
}

function resolverOf(resolve: (uid: string) => unknown, whole: boolean, withinMs: number): Credentials {
  const name = whole ? 'resolveCredentials' : 'resolveChecksumToken'
  if (typeof resolve !== 'function') throw new TypeError(`${name} must be a function`)
  return {
    sets: [],
    confirmable: whole,
    signerFor: (uid) => uid,
    keysFor: async (uid) => {
      if (uid === undefined) throw unknownUid(uid)
      let found: unknown
      try {
        found = await lookedUpWithin(() => resolve(uid), withinMs)
      } catch (error) {
        throw new ReceiverError('credential_lookup_failed', `${name} threw for uid ${quotedUid(uid)}`, { cause: causeWithoutTokenForms(error, uid) })
      }
      if (found === null || found === undefined || found === '') throw unknownUid(uid)
      const token = whole ? (found as CredentialSet).checksumToken : found
      if (!isChecksumToken(token))
        throw new ReceiverError('credential_lookup_failed', `${name} gave ${notAToken(token)} for uid ${quotedUid(uid)}, not a Checksum Token (a non-empty string)`)
      const authToken = whole ? (found as CredentialSet).authToken : undefined
      if (whole && (typeof authToken !== 'string' || authToken === ''))
        throw new ReceiverError('credential_lookup_failed', `resolveCredentials gave no authToken for uid ${quotedUid(uid)}, so its results cannot be confirmed`)
      // Each uid has a token of its own: one that verifies the message names the uid it was looked up by.
      const set = { uid, checksumToken: token, ...(authToken === undefined ? {} : { authToken }) }
      return { keys: [{ token, credential: undefined, signer: uid, set }], fallback: false, others: [] }
    },
  }
}

/** The one way the options give to find a message's Checksum Token. TypeError when there is not exactly one. */
export function credentials(options: CredentialOptions, lookupWithinMs = DEFAULT_LOOKUP_WITHIN_MS): Credentials {
  const ways = ['checksumToken', 'credentials', 'resolveChecksumToken', 'resolveCredentials'] as const
  const given = ways.filter((way) => (options as Record<string, unknown>)[way] !== undefined)
  if (given.length !== 1) {
    const undefinedOnes = ways.filter((way) => way in options && (options as Record<string, unknown>)[way] === undefined)
    const why =
      given.length > 1
        ? `; ${given.join(' and ')} were both given`
        : undefinedOnes.length > 0
          ? `; ${undefinedOnes.join(' and ')} ${undefinedOnes.length > 1 ? 'were' : 'was'} given but undefined (a missing environment variable?)`
          : ''
    throw new TypeError(`give exactly one of checksumToken, credentials, resolveChecksumToken or resolveCredentials${why}`)
  }
  if (options.credentials !== undefined) return setsOf(options.credentials)
  if (options.resolveChecksumToken !== undefined) return resolverOf(options.resolveChecksumToken, false, lookupWithinMs)
  if (options.resolveCredentials !== undefined) return resolverOf(options.resolveCredentials, true, lookupWithinMs)
  const token = options.checksumToken
  if (!isChecksumToken(token)) throw new TypeError('checksumToken must be a non-empty string (the Checksum Token from the dashboard)')
  const key: CandidateKey = { token, credential: undefined, signer: undefined, set: undefined }
  // One merchant: its results are filed under no uid, whatever uid a record names.
  return { sets: [], confirmable: false, signerFor: () => undefined, keysFor: async () => ({ keys: [key], fallback: false, others: [] }) }
}
