/**
 * npm run bench:verify — how close parse + verify + classify comes to the least work JavaScript can do here (the
 * floor: signed bytes and HMAC from the raw body, no validation; see verify-floor.ts), and how it compares with
 * the pipeline merchants write by hand today. Everything runs in one process, in one run, on the built dist/.
 * The tasks take turns, round after round, and each ratio is the median of the rounds' own ratios: a burst of
 * load from elsewhere on the machine then hits one round of every task instead of all of one task's time.
 * Environment: BENCH_ROUNDS (default 7), BENCH_TIME_MS (per task and round, default 300).
 */
import { createHmac } from 'node:crypto'
import { type Core, fromDist, type Testing } from './dist.js'
import { FloorVerifier } from './verify-floor.js'
import { envInteger } from './env.js'
import { throughputRounds } from './rounds.js'
import { median } from './stats.js'

const { createReceiver } = await fromDist<Core>('index')
const { samplePaymentFields, signCallback } = await fromDist<Testing>('testing')

const checksumToken = '3f6b8e2a9c1d4f7e0a5b8c2d6e9f1a4b7c0d3e6f9a2b5c8d1e4f7a0b3c6d9e2f'
const fields = samplePaymentFields()
const { body, contentType } = signCallback(fields, checksumToken)
const bytes = Buffer.from(body)
const unsigned = Object.fromEntries(new URLSearchParams(body))
delete unsigned.checksum
const canonical = Object.keys(unsigned)
  .sort()
  .map((name) => unsigned[name])
  .join('|')

/** What a hand-written verifier typically looks like: correct, and slow. */
function naiveVerify(raw: Buffer): boolean {
  const received = Object.fromEntries(new URLSearchParams(raw.toString('utf8')))
  const { checksum, ...rest } = received
  const text = Object.keys(rest)
    .sort()
    .map((name) => rest[name])
    .join('|')
  return createHmac('sha256', checksumToken).update(text).digest('hex') === checksum
}

const receiver = createReceiver({ checksumToken, signatureOnly: true, logger: false })
const floor = new FloorVerifier(checksumToken)
const floorCreateHmac = new FloorVerifier(checksumToken, true)
if (!naiveVerify(bytes)) throw new Error('naive verification failed: the benchmark input is wrong')
if (!floor.verify(bytes) || !floorCreateHmac.verify(bytes)) throw new Error('the floor refused the input')
const altered = Buffer.from(bytes)
altered[altered.indexOf('transaction_amount=') + 'transaction_amount='.length] = '9'.charCodeAt(0)
if (floor.verify(altered) || floorCreateHmac.verify(altered)) throw new Error('the floor accepted an altered body')
if ((await receiver.verify({ body: bytes, contentType })).state !== 'succeeded') throw new Error('receiver refused the input')

const TASKS: [string, () => unknown][] = [
  [
    '(a) HMAC-SHA256 alone',
    () => {
      createHmac('sha256', checksumToken).update(canonical).digest('hex')
    },
  ],
  ['(b) naive: URLSearchParams, sort, join, HMAC', () => naiveVerify(bytes)],
  ['(c) fpx-collect: parse + verify + classify', async () => await receiver.verify({ body: bytes, contentType })],
  ['(d) floor: signed bytes + one-shot HMAC', () => floor.verify(bytes)],
  ["(e) floor with createHmac's per-message key setup", () => floorCreateHmac.verify(bytes)],
]

const ROUNDS = envInteger('BENCH_ROUNDS', 7, 1)
const TIME_MS = envInteger('BENCH_TIME_MS', 300, 10)
const rounds = await throughputRounds(TASKS, 500)

const [a, b, c, d, e] = rounds as [number[], number[], number[], number[], number[]]
/** The median over rounds of one task's ops/s over another's, measured minutes apart at most. */
const ratio = (top: readonly number[], bottom: readonly number[]) => median(top.map((value, i) => value / (bottom[i] as number)))
console.log(
  `callback: ${Object.keys(fields).length + 1} fields, ${bytes.length} bytes; signed string ${canonical.length} characters; ` +
    `${ROUNDS} rounds of ${TIME_MS} ms per task, medians`,
)
console.table(
  TASKS.map(([name], i) => {
    const hz = median(rounds[i] as number[])
    return { task: name, 'ops/s': Math.round(hz), 'µs/op': Number((1e6 / hz).toFixed(2)) }
  }),
)
const verdict = (met: boolean) => (met ? 'met' : 'NOT met')
const floorRatio = ratio(d, c)
const naiveRatio = ratio(c, b)
console.log(`d/e = ${ratio(d, e).toFixed(2)}  (what one-shot hashing over precomputed pads saves on the floor; for comparison)`)
console.log(`c/a = ${ratio(c, a).toFixed(2)}  (for comparison; the floor itself is ${ratio(d, a).toFixed(2)}x a)`)
console.log(`c time / floor time = ${floorRatio.toFixed(2)}  (for comparison)`)
console.log(`c/b = ${naiveRatio.toFixed(2)}  (goal >= 2, issue 35: ${verdict(naiveRatio >= 2)}; rounds ${c.map((value, i) => (value / (b[i] as number)).toFixed(2)).join(' ')})`)
