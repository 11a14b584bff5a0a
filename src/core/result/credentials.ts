import { ReceiverError } from './errors.js'

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

/** Returns the token for a message's uid, synchronously when it can (the hot path), or throws a ReceiverError. */
export type TokenLookup = (uid: string | undefined) => string | Promise<string>

function unknownUid(uid: string | undefined): ReceiverError {
  return new ReceiverError(
    'unknown_uid',
    uid === undefined
      ? 'the message has no uid field, so its credential set cannot be chosen'
      : `no Checksum Token is configured for uid "${uid}"`,
  )
}

function checkedToken(token: unknown, where: string): string {
  if (typeof token !== 'string' || token === '') throw new TypeError(`${where} must be a non-empty string`)
  return token
}

export function tokenLookup(options: CredentialOptions): TokenLookup {
  const given = [options.checksumToken, options.credentials, options.resolveChecksumToken].filter((x) => x !== undefined)
  if (given.length !== 1)
    throw new TypeError('give exactly one of checksumToken, credentials or resolveChecksumToken')
  if (options.checksumToken !== undefined) {
    const token = checkedToken(options.checksumToken, 'checksumToken')
    return () => token
  }
  if (options.credentials !== undefined) {
    const byUid = new Map<string, string>()
    for (const [i, set] of options.credentials.entries())
      byUid.set(checkedToken(set.uid, `credentials[${i}].uid`), checkedToken(set.checksumToken, `credentials[${i}].checksumToken`))
    const only = byUid.size === 1 ? [...byUid.values()][0] : undefined
    return (uid) => {
      // One set: it signed the message whatever uid it carries (real messages may sign a merchant id instead).
      const token = (uid === undefined ? undefined : byUid.get(uid)) ?? only
      if (token === undefined) throw unknownUid(uid)
      return token
    }
  }
  const resolve = options.resolveChecksumToken
  if (typeof resolve !== 'function') throw new TypeError('resolveChecksumToken must be a function')
  return async (uid) => {
    if (uid === undefined) throw unknownUid(uid)
    let token: string | null | undefined
    try {
      token = await resolve(uid)
    } catch (error) {
      throw new ReceiverError('credential_lookup_failed', `resolveChecksumToken threw for uid "${uid}"`, { cause: error })
    }
    if (token === null || token === undefined || token === '') throw unknownUid(uid)
    return token
  }
}
