/**
 * A query's splits hashed out of the whole message's signed bytes (core/result/split-signing.ts) against the same
 * verifier with that shortcut turned off (every split signed on its own, as before issue 21 point 4), through the
 * whole verification: same answer, same fields, same unsigned parameters, same credential set, for generated
 * queries built to break the byte ranges (own names sorting anywhere, `|`, empty values, `+`, escapes in any
 * spelling, non-ASCII, `&&`, names that are service names, nested `params[...]`, several credential sets, a uid
 * naming none, tokens looked up asynchronously). Every acceptance is also checked against an oracle that shares no
 * code with the package: URLSearchParams, the fields after some leading ones, sorted by UTF-8 bytes, createHmac.
 */
import { createHmac } from 'node:crypto'
import fc from 'fast-check'
import { afterEach, describe, expect, it, vi } from 'vitest'

vi.mock('../../src/core/result/split-signing.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/core/result/split-signing.js')>()
  return { ...original, splitSigner: vi.fn(original.splitSigner) }
})

import * as splitSigning from '../../src/core/result/split-signing.js'
import { isReceiverError, PAYMENT_FIELD_RULES, type VerifyOptions } from '../../src/index.js'
import { Verifier } from '../../src/core/result/verify.js'
import { samplePaymentFields } from '../../src/testing.js'

const actual = await vi.importActual<typeof import('../../src/core/result/split-signing.js')>('../../src/core/result/split-signing.js')
const signerSwitch = vi.mocked(splitSigning.splitSigner)
/** Runs `work` with every split signed on its own: the reference the shortcut must agree with. */
async function withoutShortcut<T>(work: () => Promise<T>): Promise<T> {
  signerSwitch.mockImplementation(() => undefined)
  try {
    return await work()
  } finally {
    signerSwitch.mockImplementation(actual.splitSigner)
  }
}
afterEach(() => void signerSwitch.mockImplementation(actual.splitSigner))

const TOKEN_A = 'ab'.repeat(32)
const TOKEN_B = 'another token, short'
const TOKEN_C = 'k'.repeat(131) // longer than a block: hashed first
const TOKEN_X = 'cd'.repeat(32) // configured nowhere
const UID_A = '6f1c2a4e-8b3d-4f7a-9c2e-1d5b7a9e3f10'
const UID_B = '0a9b8c7d-6e5f-4a3b-8c1d-2e3f4a5b6c7d'
const UID_C = '9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b'
const MERCHANT_ID = '3f9a0c1b2d4e5f6a7b8c'
const TOKEN_OF: Readonly<Record<string, string>> = { [UID_A]: TOKEN_A, [UID_B]: TOKEN_B, [UID_C]: TOKEN_C }
const TOKEN_BY_VALUE: Readonly<Record<string, string>> = { [TOKEN_A]: UID_A, [TOKEN_B]: UID_B, [TOKEN_C]: UID_C }

/** SPLIT_RUNS=40000 for a hard run (the default keeps the suite quick); the time limit grows with it. */
const RUNS = Number(process.env.SPLIT_RUNS ?? 400)
const TIME_LIMIT = Math.max(20_000, RUNS * 5)

type Config = 'single' | 'sets' | 'only' | 'resolver'
const configs: Record<Config, VerifyOptions> = {
  single: { checksumToken: TOKEN_A },
  sets: {
    credentials: [
      { uid: UID_A, checksumToken: TOKEN_A },
      { uid: UID_B, checksumToken: TOKEN_B },
      { uid: UID_C, checksumToken: TOKEN_C },
    ],
  },
  only: { credentials: [{ uid: UID_B, checksumToken: TOKEN_B }] },
  resolver: {
    // A real look-up waits; a later tick, so deliveries interleave in the concurrent property.
    resolveChecksumToken: async (uid) => {
      await new Promise((resolve) => setImmediate(resolve))
      return TOKEN_OF[uid]
    },
  },
}
/** The token an accepted message was verified with, by configuration and reported credential set. */
function tokenUsed(config: Config, credential: { index: number } | undefined, uid: unknown): string {
  if (config === 'single') return TOKEN_A
  if (config === 'only') return TOKEN_B
  if (config === 'sets') return [TOKEN_A, TOKEN_B, TOKEN_C][(credential as { index: number }).index] as string
  return TOKEN_OF[uid as string] as string
}

type Pair = readonly [string, string]

function rightToken(config: Config, uid: string | undefined): string {
  if (config === 'single') return TOKEN_A
  if (config === 'only') return TOKEN_B
  if (uid !== undefined && uid in TOKEN_OF) return TOKEN_OF[uid] as string
  return config === 'sets' ? TOKEN_C : TOKEN_X
}

function oracle(token: string, pairs: readonly Pair[]): string {
  const signed = pairs.filter(([name]) => name !== 'checksum')
  signed.sort(([a], [b]) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')))
  return createHmac('sha256', Buffer.from(token, 'utf8'))
    .update(Buffer.from(signed.map(([, value]) => value).join('|'), 'utf8'))
    .digest('hex')
}

/** The ways a form encoder may spell the same text. */
type Spelling = 'plus' | 'pct20' | 'lowerHex' | 'everyByte' | 'raw'
function spell(text: string, spelling: Spelling): string {
  switch (spelling) {
    case 'plus':
      return encodeURIComponent(text).replace(/%20/g, '+')
    case 'pct20':
      return encodeURIComponent(text)
    case 'lowerHex':
      return encodeURIComponent(text).replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase())
    case 'raw':
      // Only what the form syntax needs escaped; anything else, non-ASCII too, as it is (a non-ASCII query is signed as text).
      return text.replace(/[%&=+#]/g, (character) => encodeURIComponent(character))
    case 'everyByte':
      return [...Buffer.from(text, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0').toUpperCase()}`).join('')
  }
}

const SAMPLE: readonly Pair[] = Object.entries(samplePaymentFields()).flatMap(([name, value]) =>
  value === undefined || name === 'uid' ? [] : [[name, String(value)] as const],
)
const SAMPLE_NAMES = new Set(SAMPLE.map(([name]) => name))

const value = fc.oneof(
  fc.string({ maxLength: 10 }),
  fc.constantFrom('', '|', '||', '+', '%', ' ', '100%', 'é', '\u{1F600}', '|x|', 'a&b=c', '%7C', 'x'.repeat(40)),
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.string({ unit: 'binary-ascii', maxLength: 8 }),
)
const oddName = fc.constantFrom('0a', '0b', 'zz', '~', 'A', 'b c', 'p+q', 'x%y', '€', '\u{1F600}', 'ｚ', 'a=b', 'toString', '__proto__')
const unlisted = fc.constantFrom('id', 'name', 'bank', 'interface_name', 'interface_uid')
/** Fields the service might add (names the spec does not list), and nested ones. */
const extraName = fc
  .oneof(
    { arbitrary: oddName, weight: 3 },
    { arbitrary: unlisted, weight: 3 },
    { arbitrary: fc.string({ minLength: 1, maxLength: 5 }), weight: 3 },
    { arbitrary: fc.constantFrom('params[reference1]', 'params[reference1_label]'), weight: 1 },
  )
  .filter((name) => !SAMPLE_NAMES.has(name) && name !== 'checksum' && name !== 'uid')
/** The URL's own leading parameters: mostly names the service never sends, sometimes one it does. */
const ownName = fc.oneof(
  { arbitrary: fc.constantFrom('shop', 'lang', 'ref', 'securepay_return'), weight: 3 },
  // Brackets of the URL's own: a nested whole (or a stray `[`) whose splits are decoded afresh.
  { arbitrary: fc.constantFrom('filter[a]', 'filter[b][c]', 'tags[]', 'a[b', 'x]'), weight: 1 },
  { arbitrary: oddName, weight: 3 },
  { arbitrary: unlisted, weight: 2 },
  { arbitrary: fc.string({ minLength: 1, maxLength: 5 }), weight: 3 },
  { arbitrary: fc.constantFrom('uid', 'order_number', 'amount', 'checksum', 'params[x]', 'token'), weight: 1 },
)
type ChecksumKind = 'suffix' | 'whole' | 'plusOne' | 'minusOne' | 'random'

const delivery = fc.record({
  config: fc.constantFrom<Config>('single', 'sets', 'only', 'resolver'),
  uid: fc.constantFrom<string | undefined>(UID_A, UID_B, UID_C, MERCHANT_ID, undefined),
  // `right`: the token the configuration holds for the uid (or, when it names none, some configured one).
  token: fc.oneof({ arbitrary: fc.constant('right'), weight: 3 }, { arbitrary: fc.constantFrom(TOKEN_A, TOKEN_B, TOKEN_C, TOKEN_X), weight: 1 }),
  // Whether an own name may also be one of the service's fields (refused as repeated, both ways).
  clash: fc.constantFrom(false, false, false, false, true),
  own: fc.uniqueArray(fc.tuple(ownName, value), { maxLength: 9, selector: ([name]) => name }),
  extra: fc.uniqueArray(fc.tuple(extraName, value), { maxLength: 5, selector: ([name]) => name }),
  // Where the service's extra fields go: first (deciding which split is likeliest), or anywhere.
  shuffle: fc.boolean(),
  order: fc.array(fc.nat(), { minLength: 48, maxLength: 48 }),
  checksumAt: fc.nat(),
  kind: fc.constantFrom<ChecksumKind>('suffix', 'suffix', 'suffix', 'whole', 'plusOne', 'minusOne', 'random'),
  random: fc.stringMatching(/^[0-9a-f]{64}$/),
  upper: fc.boolean(),
  spelling: fc.constantFrom<Spelling>('plus', 'pct20', 'lowerHex', 'everyByte', 'raw'),
  nameSpelling: fc.constantFrom<Spelling>('plus', 'plus', 'everyByte'),
  emptyPairs: fc.boolean(),
  question: fc.boolean(),
  // As an adapter may hand it over: parsed search params (re-encoded by toString) instead of the raw text.
  searchParams: fc.constantFrom(false, false, false, true),
  // One own value the URL carries undecoded (a raw % or a Latin-1 escape), at this index modulo their count.
  broken: fc.option(fc.tuple(fc.nat(), fc.constantFrom('%', '%E9', '%ZZ')), { freq: 4 }),
})
type Delivery = typeof delivery extends fc.Arbitrary<infer T> ? T : never

interface Built {
  query: string | URLSearchParams
  /** Every pair as the query carries it, decoded (the oracle's reading). */
  pairs: Pair[]
  checksum: string
  /**
   * The URL's own parameters, when the service signed the rest with the token the configuration holds and
   * docs/operations-limits.md promises the split is found: then the result must never be lost.
   */
  promised: Pair[] | undefined
  /** How many pairs the service sent (its fields and checksum), after the URL's own. */
  signedCount: number
}

const LISTED = new Set([...Object.keys(PAYMENT_FIELD_RULES), 'params', 'shipping_address', 'billing_address'])
const KNOWN_UNLISTED = new Set(['interface_name', 'interface_uid', 'id', 'name', 'bank', 'fpx_buyer_bank_branch', 'fpx_seller_order_no'])
const listed = (name: string) => LISTED.has(name.split('[')[0] as string)

/** Whether the split after `own` is promised: up to 8 before a listed name, or one before a name results carry. */
function isPromised(d: Delivery, own: readonly Pair[], service: readonly Pair[], token: string): boolean {
  if (d.kind !== 'suffix' || d.token !== 'right' || (d.config === 'resolver' && !(token in TOKEN_BY_VALUE))) return false
  const names = new Set(service.map(([name]) => name))
  if (own.some(([name]) => listed(name) || names.has(name))) return false
  const first = (service[0] as Pair)[0]
  return own.length === 0 || (own.length <= 8 && listed(first)) || (own.length === 1 && KNOWN_UNLISTED.has(first))
}

function build(d: Delivery): Built {
  let service: Pair[] = [...d.extra, ...SAMPLE]
  if (d.uid !== undefined) service.push(['uid', d.uid])
  if (d.shuffle) {
    const keyed = service.map((pair, i) => [d.order[i % d.order.length] as number, i, pair] as const)
    keyed.sort((a, b) => a[0] - b[0] || a[1] - b[1])
    service = keyed.map(([, , pair]) => pair)
  }
  const serviceNames = new Set(service.map(([name]) => name))
  const own = (d.own as Pair[]).filter(([name]) => d.clash || !serviceNames.has(name))
  const token = d.token === 'right' ? rightToken(d.config, d.uid) : d.token
  const signedPart =
    d.kind === 'whole' ? [...own, ...service] : d.kind === 'plusOne' && own.length > 0 ? [own[own.length - 1] as Pair, ...service] : d.kind === 'minusOne' ? service.slice(1) : service
  let checksum = d.kind === 'random' ? d.random : oracle(token, signedPart)
  if (d.upper) checksum = checksum.toUpperCase()
  const at = d.checksumAt % (service.length + 1)
  const withChecksum: Pair[] = [...service.slice(0, at), ['checksum', checksum], ...service.slice(at)]
  const pairs = [...own, ...withChecksum]
  // URLSearchParams would repair the broken value (U+FFFD, or %25), so only a raw query carries it.
  const broken = d.broken !== null && own.length > 0 && !d.searchParams ? d.broken[0] % own.length : -1
  const spelled = pairs.map(([name, text], i) => `${spell(name, d.nameSpelling)}=${spell(text, d.spelling)}${i === broken ? (d.broken as [number, string])[1] : ''}`)
  const query = spelled.join(d.emptyPairs ? '&&' : '&')
  const text = d.question ? `?${query}` : query
  // unsignedQuery stops at the value that does not decode.
  const promised = isPromised(d, own, withChecksum, token) ? own.slice(0, broken < 0 ? own.length : broken) : undefined
  return { query: d.searchParams ? new URLSearchParams(text) : text, pairs, checksum, promised, signedCount: withChecksum.length }
}

type Outcome =
  | { accepted: true; fields: Record<string, unknown>; unsigned: Record<string, string>; credential: unknown; state: string; rendering: string }
  | { accepted: false; code: string; status: number; message: string }

async function outcome(verifier: Verifier, query: string | URLSearchParams): Promise<Outcome> {
  try {
    const verified = await verifier.verify({ body: '', query })
    return {
      accepted: true,
      fields: { ...verified.fields },
      unsigned: { ...verified.unsignedQuery },
      credential: verified.credential,
      state: verified.state,
      rendering: verified.rendering,
    }
  } catch (error) {
    if (!isReceiverError(error)) throw error
    return { accepted: false, code: error.code, status: error.status, message: error.message }
  }
}

/** An acceptance the oracle vouches for: the fields are those after some leading pairs, and they sign the checksum. */
function expectOracleAgrees(config: Config, built: Built, accepted: Extract<Outcome, { accepted: true }>): void {
  const token = tokenUsed(config, accepted.credential as { index: number } | undefined, accepted.fields.uid)
  const skips = Array.from({ length: built.pairs.length + 1 }, (_, skip) => skip).filter((skip) => {
    const rest = built.pairs.slice(skip)
    if (rest.some(([name]) => name.includes('['))) return false // nested: the rendering decides, not this oracle
    return (
      JSON.stringify(Object.fromEntries(rest)) === JSON.stringify(accepted.fields) &&
      oracle(token, rest) === built.checksum.toLowerCase()
    )
  })
  const nested = built.pairs.some(([name]) => name.includes('['))
  if (!nested) expect(skips.length).toBeGreaterThan(0)
  // A uid that names a configured set is only ever verified with that set's token.
  const uid = accepted.fields.uid as string | undefined
  if (config === 'sets') {
    const credential = accepted.credential as { uid: string; by: string }
    if (uid !== undefined && uid in TOKEN_OF) expect(credential).toMatchObject({ uid, by: 'uid' })
    else expect(credential.by).toBe('checksum')
  }
}

describe('query splits cut out of the whole signed string', () => {
  it('answer exactly as splits signed on their own, and every acceptance is one the oracle signs', async () => {
    const verifiers = Object.fromEntries(
      (Object.keys(configs) as Config[]).map((config) => [config, { fast: new Verifier({ ...configs[config], diagnosisPerSecond: 0 }), reference: new Verifier({ ...configs[config], diagnosisPerSecond: 0 }) }]),
    ) as Record<Config, { fast: Verifier; reference: Verifier }>
    const match = vi.spyOn(splitSigning.SplitSigner.prototype, 'match')
    const seen = { accepted: 0, bySplit: 0, refused: 0, viaRanges: 0, promised: 0 }
    await fc.assert(
      fc.asyncProperty(delivery, async (d) => {
        const built = build(d)
        const { fast, reference } = verifiers[d.config]
        const before = match.mock.results.filter((result) => result.value !== undefined).length
        const got = await outcome(fast, built.query)
        seen.viaRanges += match.mock.results.filter((result) => result.value !== undefined).length - before
        const expected = await withoutShortcut(() => outcome(reference, built.query))
        expect(got).toEqual(expected)
        if (built.promised !== undefined) {
          // A genuine result after the URL's own parameters, where the docs promise it is found: never lost.
          seen.promised++
          expect(got).toMatchObject({ accepted: true, unsigned: Object.fromEntries(built.promised) })
          const rest = built.pairs.slice(built.pairs.length - built.signedCount)
          // Nested fields come back grouped (params: {...}); the flat ones exactly as signed.
          if (got.accepted && !rest.some(([name]) => name.includes('['))) expect(got.fields).toEqual(Object.fromEntries(rest))
        }
        if (!got.accepted) {
          seen.refused++
          return
        }
        seen.accepted++
        if (Object.keys(got.unsigned).length > 0 && built.pairs.length > Object.keys(got.fields).length) seen.bySplit++
        expectOracleAgrees(d.config, built, got)
      }),
      { numRuns: RUNS },
    )
    match.mockRestore()
    // Not vacuous: splits were accepted through the byte ranges, and queries refused.
    expect(seen.viaRanges).toBeGreaterThan(10)
    expect(seen.bySplit).toBeGreaterThan(10)
    expect(seen.refused).toBeGreaterThan(10)
    expect(seen.promised).toBeGreaterThan(10)
  }, TIME_LIMIT)

  it('answer each of many interleaved deliveries as when it arrives alone (token look-ups resolve in between)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(delivery, { minLength: 2, maxLength: 8 }), async (batch) => {
        const built = batch.map((d) => ({ ...build({ ...d, config: 'resolver' }), d }))
        const alone = new Verifier({ ...configs.resolver, diagnosisPerSecond: 0 })
        const expected: Outcome[] = []
        for (const { query } of built) expected.push(await outcome(alone, query))
        // One verifier, all at once: each waits for its token while the others parse, sign and hash.
        const together = new Verifier({ ...configs.resolver, diagnosisPerSecond: 1000 })
        const got = await Promise.all(built.map(({ query }) => outcome(together, query)))
        expect(got.map((result) => (result.accepted ? result : { ...result, message: undefined }))).toEqual(
          expected.map((result) => (result.accepted ? result : { ...result, message: undefined })),
        )
      }),
      { numRuns: Math.ceil(RUNS / 4) },
    )
  }, TIME_LIMIT)

  it('answer the same on either side of the HMAC scratch limit (64 KiB with the key block)', async () => {
    const verifier = new Verifier({ checksumToken: TOKEN_A, diagnosisPerSecond: 0 })
    const reference = new Verifier({ checksumToken: TOKEN_A, diagnosisPerSecond: 0 })
    let accepted = 0
    // The message behind the inner pad may be at most 65,536 - 64 bytes: walk the whole and the split across it.
    const base = SAMPLE.filter(([name]) => name !== 'buyer_name')
    const baseLength = oracleLength([...base, ['uid', UID_A], ['buyer_name', '']])
    for (let target = 65_472 - 24; target <= 65_472 + 24; target += 3) {
      for (const own of [[['shop', '0123456789']], [['0a', 'x|y'], ['zz', '']]] as Pair[][]) {
        const service: Pair[] = [...base, ['uid', UID_A], ['buyer_name', 'n'.repeat(target - baseLength)]]
        for (const signedPart of [service, [...own, ...service]]) {
          const pairs: Pair[] = [...own, ...service, ['checksum', oracle(TOKEN_A, signedPart)]]
          const query = pairs.map(([name, text]) => `${spell(name, 'plus')}=${spell(text, 'plus')}`).join('&')
          const got = await outcome(verifier, query)
          expect(got).toEqual(await withoutShortcut(() => outcome(reference, query)))
          expect([target, got.accepted]).toEqual([target, true])
          if (got.accepted) accepted++
        }
      }
    }
    expect(accepted).toBeGreaterThan(0)
  })
})

describe('query splits of messages with many fields', () => {
  it('answer the same past the 64 value starts first allocated, and past the first signing buffer', async () => {
    const verifier = new Verifier({ checksumToken: TOKEN_A, diagnosisPerSecond: 0 })
    const reference = new Verifier({ checksumToken: TOKEN_A, diagnosisPerSecond: 0 })
    for (const count of [20, 40, 80, 200]) {
      // Own names and extra service names interleave in sort order with the service's, values with | and escapes.
      const extra: Pair[] = Array.from({ length: count }, (_, i) => [`x${String(i).padStart(3, '0')}`, i % 3 === 0 ? '' : `v|${i}+%é`])
      const own: Pair[] = [['x0005a', 'own|1'], ['a', '']]
      const service: Pair[] = [...SAMPLE, ['uid', UID_A], ...extra]
      for (const [signedPart, accepted] of [
        [service, true],
        [[...own, ...service], true],
        [service.slice(1), false],
      ] as const) {
        const pairs: Pair[] = [...own, ...service, ['checksum', oracle(TOKEN_A, signedPart)]]
        const query = pairs.map(([name, text]) => `${spell(name, 'plus')}=${spell(text, 'plus')}`).join('&')
        const got = await outcome(verifier, query)
        expect(got).toEqual(await withoutShortcut(() => outcome(reference, query)))
        expect([count, signedPart.length, got.accepted]).toEqual([count, signedPart.length, accepted])
      }
    }
  })
})

/** The byte length of the signed string of `pairs`. */
function oracleLength(pairs: readonly Pair[]): number {
  return Buffer.byteLength(pairs.map(([, text]) => text).join('|'))
}
