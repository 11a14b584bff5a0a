import { describe, expect, it } from 'vitest'
import { credentials, unknownUid } from '../../src/core/result/credentials.js'

const TOKEN_A = 'ab'.repeat(32)
const TOKEN_B = 'cd'.repeat(32)

/** The one credential index (core/result/credentials.ts): which key a uid chooses, and the unknown_uid refusal. */
describe('credentials', () => {
  it('chooses one prepared key per uid, the same object every time (nothing allocated per delivery)', () => {
    const single = credentials({ checksumToken: TOKEN_A })
    expect(single.keyFor('anything')).toEqual({ token: TOKEN_A, credential: undefined })
    expect(single.keyFor(undefined)).toBe(single.keyFor('anything'))
    const sets = credentials({ credentials: [{ uid: 'u-a', checksumToken: TOKEN_A }, { uid: 'u-b', checksumToken: TOKEN_B }] })
    expect(sets.keyFor('u-b')).toEqual({ token: TOKEN_B, credential: { uid: 'u-b', index: 1, by: 'uid' } })
    expect(sets.keyFor('u-b')).toBe(sets.keyFor('u-b'))
  })

  it('uses the only set whatever the uid, and leaves a uid that names none of several sets to the fallback', () => {
    const one = credentials({ credentials: [{ uid: 'u-a', checksumToken: TOKEN_A }] })
    expect(one.keyFor('merchant-id')).toEqual({ token: TOKEN_A, credential: { uid: 'u-a', index: 0, by: 'only' } })
    expect(one.keyFor('u-a')).toMatchObject({ credential: { by: 'uid' } })
    expect(one.fallback).toBeUndefined()
    const two = credentials({ credentials: [{ uid: 'u-a', checksumToken: TOKEN_A }, { uid: 'u-b', checksumToken: TOKEN_B }, { uid: 'u-a', checksumToken: TOKEN_B }] })
    expect(two.keyFor('merchant-id')).toBeUndefined()
    // A uid given twice keeps its first place and its last token.
    expect(two.fallback).toEqual([
      { token: TOKEN_B, credential: { uid: 'u-a', index: 2, by: 'checksum' } },
      { token: TOKEN_B, credential: { uid: 'u-b', index: 1, by: 'checksum' } },
    ])
  })

  it('refuses a uid no key can be chosen for with unknown_uid, in one wording per case and never naming a token', async () => {
    expect(() => credentials({ credentials: [] }).keyFor('u-x')).toThrow(unknownUid('u-x'))
    await expect(credentials({ resolveChecksumToken: () => undefined }).keyFor('u-x')).rejects.toThrow(/^no Checksum Token is configured for uid "u-x"$/)
    await expect(credentials({ resolveChecksumToken: () => TOKEN_A }).keyFor(undefined)).rejects.toThrow(/^the message has no uid field, so its credential set cannot be chosen$/)
    const tried = unknownUid('u-x', { tokens: 3 })
    expect([tried.code, tried.message]).toEqual([
      'unknown_uid',
      'uid "u-x" is not the API UID of any configured credential set, and its checksum matches none of the 3 configured Checksum Tokens (the message was altered or signed with a token that is not configured)',
    ])
    expect(unknownUid(undefined, { tokens: 2 }).message).toMatch(/^the message has no uid field, and its checksum matches none of the 2 configured/)
  })

  it('checks the options once, when the index is made', () => {
    expect(() => credentials({} as never)).toThrow('give exactly one of checksumToken, credentials or resolveChecksumToken')
    expect(() => credentials({ credentials: [{ uid: '', checksumToken: TOKEN_A }] })).toThrow('credentials[0].uid must be a non-empty string')
    expect(() => credentials({ resolveChecksumToken: 'no' as never })).toThrow('resolveChecksumToken must be a function')
  })
})
