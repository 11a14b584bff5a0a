import { describe, expect, it } from 'vitest'
import { credentials, unknownUid } from '../../src/core/result/credentials.js'

const TOKEN_A = 'ab'.repeat(32)
const TOKEN_B = 'cd'.repeat(32)

/** The one credential index (core/result/credentials.ts): which keys a uid chooses, and the unknown_uid refusal. */
describe('credentials', () => {
  it('chooses the key a uid names, and says which set it is', async () => {
    const single = credentials({ checksumToken: TOKEN_A })
    expect(await single.keysFor('anything')).toEqual({ keys: [{ token: TOKEN_A, credential: undefined, signer: undefined, set: undefined }], fallback: false, others: [] })
    const sets = credentials({ credentials: [{ uid: 'u-a', checksumToken: TOKEN_A }, { uid: 'u-b', checksumToken: TOKEN_B }] })
    const chosen = await sets.keysFor('u-b')
    expect(chosen.keys).toEqual([{ token: TOKEN_B, credential: { uid: 'u-b', index: 1, by: 'uid' }, signer: 'u-b', set: { uid: 'u-b', checksumToken: TOKEN_B } }])
    // The other sets are what a diagnosis of a refused checksum tries.
    expect(chosen.others.map((key) => key.credential?.uid)).toEqual(['u-a'])
  })

  it('uses the only set whatever the uid, and tries every set when the uid names none of several', async () => {
    const one = credentials({ credentials: [{ uid: 'u-a', checksumToken: TOKEN_A }] })
    expect((await one.keysFor('merchant-id')).keys).toMatchObject([{ token: TOKEN_A, credential: { uid: 'u-a', index: 0, by: 'only' } }])
    expect((await one.keysFor('u-a')).keys).toMatchObject([{ credential: { by: 'uid' } }])
    const two = credentials({ credentials: [{ uid: 'u-a', checksumToken: TOKEN_A }, { uid: 'u-b', checksumToken: TOKEN_B }, { uid: 'u-a', checksumToken: TOKEN_B }] })
    const fallback = await two.keysFor('merchant-id')
    expect(fallback.fallback).toBe(true)
    // A uid given twice keeps its first place and its last token and index.
    expect(fallback.keys.map((key) => [key.token, key.credential])).toEqual([
      [TOKEN_B, { uid: 'u-a', index: 2, by: 'checksum' }],
      [TOKEN_B, { uid: 'u-b', index: 1, by: 'checksum' }],
    ])
    // Sets that share a token cannot be told apart by the checksum: no signer is claimed for them.
    expect(fallback.keys.map((key) => key.signer)).toEqual([undefined, undefined])
  })

  it('refuses a uid no key can be chosen for with unknown_uid, in one wording per case and never naming a token', async () => {
    await expect(credentials({ resolveChecksumToken: () => undefined }).keysFor('u-x')).rejects.toThrow(/^no Checksum Token is configured for uid "u-x"$/)
    // A uid of the Auth Token's form (the token moved under uid by a buyer) is never repeated.
    await expect(credentials({ resolveChecksumToken: () => undefined }).keysFor('DemoAuthToken0000000')).rejects.toThrow(
      /^no Checksum Token is configured for uid of 20 letters and digits \(not repeated: an Auth Token has that form\)$/,
    )
    await expect(credentials({ resolveChecksumToken: () => TOKEN_A }).keysFor(undefined)).rejects.toThrow(/^the message has no uid field, so its credential set cannot be chosen$/)
    const tried = unknownUid('u-x', { tokens: 3 })
    expect([tried.code, tried.message]).toEqual([
      'unknown_uid',
      'uid "u-x" is not the API UID of any configured credential set, and its checksum matches none of the 3 configured Checksum Tokens (the message was altered or signed with a token that is not configured)',
    ])
    expect(unknownUid(undefined, { tokens: 2 }).message).toMatch(/^the message has no uid field, and its checksum matches none of the 2 configured/)
  })

  it('checks the options once, when the index is made, naming what was wrong and never a value', () => {
    expect(() => credentials({} as never)).toThrow('give exactly one of checksumToken, credentials, resolveChecksumToken or resolveCredentials')
    // An environment variable that was not set: the option is there, undefined, and the message says which one.
    expect(() => credentials({ checksumToken: process.env.FPX_NOT_SET_ANYWHERE } as never)).toThrow(/checksumToken was given but undefined/)
    expect(() => credentials({ credentials: [] })).toThrow('credentials must hold at least one credential set')
    expect(() => credentials({ credentials: [{ uid: '', checksumToken: TOKEN_A }] })).toThrow('credentials[0].uid must be a non-empty string')
    expect(() => credentials({ credentials: { uid: 'u-a', checksumToken: undefined as never } })).toThrow('credentials.checksumToken must be a non-empty string (it is undefined)')
    expect(() => credentials({ resolveChecksumToken: 'no' as never })).toThrow('resolveChecksumToken must be a function')
  })

  it('knows whether every set can confirm over the API (an Auth Token each)', () => {
    expect(credentials({ checksumToken: TOKEN_A }).confirmable).toBe(false)
    expect(credentials({ credentials: { uid: 'u-a', checksumToken: TOKEN_A, authToken: 'Token00000000000000A' } }).confirmable).toBe(true)
    expect(credentials({ credentials: [{ uid: 'u-a', checksumToken: TOKEN_A, authToken: 'Token00000000000000A' }, { uid: 'u-b', checksumToken: TOKEN_B }] }).confirmable).toBe(false)
    expect(credentials({ resolveCredentials: () => undefined }).confirmable).toBe(true)
  })
})
