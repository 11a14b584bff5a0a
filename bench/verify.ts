/**
 * npm run bench:verify — how close parse + verify + classify comes to the least work JavaScript can do here (the
 * floor: signed bytes and HMAC from the raw body, no validation; see verify-floor.ts), and how it compares with
 * the pipeline merchants write by hand today. Everything runs in one process, in one run, on the built dist/.
 * Environment: BENCH_TIME_MS (per task, default 2000).
 */
import { createHmac } from 'node:crypto'
import { Bench } from 'tinybench'
import { type Core, fromDist, type Testing } from './dist.js'
import { FloorVerifier } from './verify-floor.js'

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

const receiver = createReceiver({ checksumToken })
const floor = new FloorVerifier(checksumToken)
const floorCreateHmac = new FloorVerifier(checksumToken, true)
if (!naiveVerify(bytes)) throw new Error('naive verification failed: the benchmark input is wrong')
if (!floor.verify(bytes) || !floorCreateHmac.verify(bytes)) throw new Error('the floor refused the input')
const altered = Buffer.from(bytes)
altered[altered.indexOf('transaction_amount=') + 'transaction_amount='.length] = '9'.charCodeAt(0)
if (floor.verify(altered) || floorCreateHmac.verify(altered)) throw new Error('the floor accepted an altered body')
if ((await receiver.verify({ body: bytes, contentType })).state !== 'succeeded') throw new Error('receiver refused the input')

const bench = new Bench({ time: Number(process.env.BENCH_TIME_MS ?? 2000), warmup: true, warmupTime: 500 })
bench
  .add('(a) HMAC-SHA256 alone', () => {
    createHmac('sha256', checksumToken).update(canonical).digest('hex')
  })
  .add('(b) naive: URLSearchParams, sort, join, HMAC', () => {
    naiveVerify(bytes)
  })
  .add('(c) fpx-collect: parse + verify + classify', async () => {
    await receiver.verify({ body: bytes, contentType })
  })
  .add('(d) floor: signed bytes + HMAC (precomputed pads)', () => {
    floor.verify(bytes)
  })
  .add("(e) floor with createHmac's per-message key setup", () => {
    floorCreateHmac.verify(bytes)
  })

await bench.run()

const hz = (name: string): number => {
  const task = bench.getTask(name)
  const result = task?.result as { throughput?: { mean: number } } | undefined
  if (!result?.throughput) throw new Error(`task ${name} has no result`)
  return result.throughput.mean
}
const a = hz('(a) HMAC-SHA256 alone')
const b = hz('(b) naive: URLSearchParams, sort, join, HMAC')
const c = hz('(c) fpx-collect: parse + verify + classify')
const d = hz('(d) floor: signed bytes + HMAC (precomputed pads)')
const e = hz("(e) floor with createHmac's per-message key setup")
console.log(`callback: ${Object.keys(fields).length + 1} fields, ${bytes.length} bytes; signed string ${canonical.length} characters`)
console.table(
  bench.tasks.map((task) => ({ task: task.name, 'ops/s': Math.round(hz(task.name)), 'µs/op': Number((1e6 / hz(task.name)).toFixed(2)) })),
)
const verdict = (met: boolean) => (met ? 'met' : 'NOT met')
console.log(`d/e = ${(d / e).toFixed(2)}  (what precomputed pads save on the floor; for comparison)`)
console.log(`c/a = ${(c / a).toFixed(2)}  (for comparison; the floor itself is ${(d / a).toFixed(2)}x a)`)
console.log(`c time / floor time = ${(d / c).toFixed(2)}  (goal <= 1.4: ${verdict(d / c <= 1.4)})`)
console.log(`c/b = ${(c / b).toFixed(2)}  (goal >= 3.5: ${verdict(c / b >= 3.5)})`)
