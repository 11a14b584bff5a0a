import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createReceiver, ReceiverError } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

/**
 * A receiver's form scan compares each body's names with the previous body's on the way (FormFields, `expected`)
 * and shares that body's name list when they agree. A body that differs only a little from the previous one
 * (a name one character longer or shorter, the same name escaped, a pair without `=`, an empty pair) must be
 * read exactly as a receiver that never saw the previous body reads it.
 */
const TOKEN = 'cd'.repeat(32)
const FORM = 'application/x-www-form-urlencoded'

type Outcome = { ok: true; fields: Record<string, unknown>; state: string } | { ok: false; code: string }

async function outcome(receiver: ReturnType<typeof createReceiver>, body: Buffer): Promise<Outcome> {
  try {
    const verified = await receiver.verify({ body, contentType: FORM })
    return { ok: true, fields: { ...verified.fields }, state: verified.state }
  } catch (error) {
    if (error instanceof ReceiverError) return { ok: false, code: error.code }
    throw error
  }
}

const base = signCallback(samplePaymentFields(), TOKEN).body
const pairs = base.split('&')

/** Each edit changes one pair of the signed body (or the seam after it). */
const EDITS: ReadonlyArray<(pair: string) => string> = [
  (pair) => pair.replace('=', 'x='), // name one character longer
  (pair) => pair.replace(/.=/, '='), // one shorter (empty for a one-letter name)
  (pair) => pair.replace(/^./, (first) => `%${first.charCodeAt(0).toString(16).toUpperCase()}`), // same name, escaped
  (pair) => pair.replace(/_/, '+'), // a space where the underscore was
  (pair) => pair.split('=')[0] as string, // no `=`: an empty value
  (pair) => `${pair}&`, // an empty pair after it
  (pair) => `${pair}&${pair}`, // given twice
  (pair) => `${pair.split('=')[0]}[a]=1`, // a bracket name
  () => '', // removed (leaves an empty pair)
]

describe('a receiver that expects the previous body’s names', () => {
  it('reads a slightly different body as a fresh receiver does', async () => {
    const warm = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: pairs.length - 1 }), fc.nat({ max: EDITS.length - 1 }), async (at, edit) => {
        const edited = pairs.map((pair, i) => (i === at ? (EDITS[edit] as (pair: string) => string)(pair) : pair))
        const body = Buffer.from(edited.join('&'))
        // The warm receiver has just read the original body, so it expects exactly those names.
        expect((await outcome(warm, Buffer.from(base))).ok).toBe(true)
        const fresh = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
        expect(await outcome(warm, body)).toEqual(await outcome(fresh, body))
      }),
      { numRuns: 300 },
    )
  })

  it('still refuses a field given twice when the names are otherwise the expected ones', async () => {
    const warm = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    expect((await outcome(warm, Buffer.from(base))).ok).toBe(true)
    const twice = Buffer.from(`${base}&${pairs[0]}`)
    expect(await outcome(warm, twice)).toEqual({ ok: false, code: 'duplicate_field' })
    // And recognises the original names again afterwards.
    expect((await outcome(warm, Buffer.from(base))).ok).toBe(true)
  })
})
