import { describe, expect, it } from 'vitest'
import { createReceiver } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

/*
 * The payment book looks a result up under the uid whose Checksum Token verified it. That proves the signer only
 * when the token is that set's alone: with a token two sets share, the set is the one the uid field named, and a
 * buyer can rename another signed value into uid.
 */
const A = 'aa'.repeat(32)
const B = 'bb'.repeat(32)

describe('signerUid', () => {
  it('names the set whose own token verified the result, and none when two sets share that token', async () => {
    const signed = signCallback(samplePaymentFields({ uid: 'u-a' }), A)
    const delivery = { body: signed.body, contentType: signed.contentType }
    const own = createReceiver({ signatureOnly: true, credentials: [{ uid: 'u-a', checksumToken: A }, { uid: 'u-b', checksumToken: B }], logger: false as never })
    expect((await own.verify(delivery)).signerUid).toBe('u-a')
    const shared = createReceiver({ signatureOnly: true, credentials: [{ uid: 'u-a', checksumToken: A }, { uid: 'u-b', checksumToken: A }], logger: false as never })
    const verified = await shared.verify(delivery)
    expect(verified.credential?.uid).toBe('u-a')
    expect(verified.signerUid).toBeUndefined()
    const resolved = createReceiver({ signatureOnly: true, resolveChecksumToken: async (uid: string) => (uid === 'u-a' ? A : B), logger: false as never })
    expect((await resolved.verify(delivery)).signerUid).toBe('u-a')
  })
})
