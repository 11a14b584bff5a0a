/**
 * npm run bench:refusal — what the diagnosis of refused checksums costs, on the built package, in one run:
 *
 * - a flood of forged callbacks (a genuine one with its amount changed), answered by handle() (log line, answer,
 *   timeline; memory store) and by verify(), with the default diagnosisPerSecond (4) against diagnosisPerSecond: 0,
 *   which is the refusal as it was before diagnoses existed: the flood ratio the issue bounds (≤ 3×);
 * - the same with every refusal diagnosed (diagnosisPerSecond: Infinity): what one diagnosis costs, the price the
 *   rationing keeps a flood from paying;
 * - the accepted path, verify() and handle() of a genuine callback (a duplicate, so the store's growth does not
 *   blur it), with diagnoses on and off: the diagnosis code is never reached there, so the ratio is 1 within noise.
 *
 * Each pair runs in the same process, the cases taking turns round after round; the median round is reported by
 * this process's CPU time per operation (wall time too). Environment: BENCH_OPS (default 4000), BENCH_ROUNDS (7).
 */
import { type Core, fromDist, type Testing } from './dist.js'
import { envInteger } from './env.js'
import { median } from './stats.js'

const OPS = envInteger('BENCH_OPS', 4000, 100)
const ROUNDS = envInteger('BENCH_ROUNDS', 7, 1)

const { createReceiver, memoryStore } = await fromDist<Core>('index')
const { samplePaymentFields, signCallback } = await fromDist<Testing>('testing')

const checksumToken = '3f6b8e2a9c1d4f7e0a5b8c2d6e9f1a4b7c0d3e6f9a2b5c8d1e4f7a0b3c6d9e2f'
const contentType = 'application/x-www-form-urlencoded'
const genuine = Buffer.from(signCallback(samplePaymentFields(), checksumToken).body)
const forged = Buffer.from(genuine.toString().replace('transaction_amount=100.20', 'transaction_amount=1.00'))
if (forged.equals(genuine)) throw new Error('the forged body is the genuine one')

type Receiver = ReturnType<typeof createReceiver>
const receiverWith = (diagnosisPerSecond: number): Receiver => {
  const receiver = createReceiver({ checksumToken, store: memoryStore(), diagnosisPerSecond })
  receiver.on('payment.succeeded', () => {})
  return receiver
}
const off = receiverWith(0)
const rationed = receiverWith(4)
const every = receiverWith(Number.POSITIVE_INFINITY)
for (const receiver of [off, rationed, every]) {
  const first = await receiver.handle({ kind: 'callback', body: genuine, contentType })
  if (first.outcome !== 'processed') throw new Error(`the genuine callback was ${first.outcome}`)
}
const probe = await every.verify({ body: forged, contentType }).then(
  () => undefined,
  (error: { diagnosis?: { verdict: string; hmacs: number } }) => error.diagnosis,
)
if (probe?.verdict !== 'unexplained') throw new Error('the forged body was not diagnosed')

interface Case {
  readonly name: string
  run(): Promise<void>
  readonly rounds: { cpuMicros: number; wallMicros: number }[]
}

function handleCase(name: string, receiver: Receiver, body: Buffer, outcome: string): Case {
  return {
    name,
    async run() {
      for (let i = 0; i < OPS; i++) {
        const response = await receiver.handle({ kind: 'callback', body, contentType })
        if (response.outcome !== outcome) throw new Error(`${name}: ${response.outcome}`)
      }
    },
    rounds: [],
  }
}

function verifyCase(name: string, receiver: Receiver, body: Buffer, valid: boolean): Case {
  return {
    name,
    async run() {
      for (let i = 0; i < OPS; i++) {
        const ok = await receiver.verify({ body, contentType }).then(
          () => true,
          () => false,
        )
        if (ok !== valid) throw new Error(`${name}: ${ok ? 'accepted' : 'refused'}`)
      }
    },
    rounds: [],
  }
}

const pairs: [Case, Case][] = [
  [handleCase('handle() forged, diagnoses off (today)', off, forged, 'rejected'), handleCase('handle() forged, default (4 diagnoses/s)', rationed, forged, 'rejected')],
  [verifyCase('verify() forged, diagnoses off (today)', off, forged, false), verifyCase('verify() forged, default (4 diagnoses/s)', rationed, forged, false)],
  [handleCase('handle() forged, diagnoses off (today)', off, forged, 'rejected'), handleCase('handle() forged, every one diagnosed', every, forged, 'rejected')],
  [verifyCase('verify() forged, diagnoses off (today)', off, forged, false), verifyCase('verify() forged, every one diagnosed', every, forged, false)],
  [verifyCase('verify() genuine, diagnoses off', off, genuine, true), verifyCase('verify() genuine, default', rationed, genuine, true)],
  [handleCase('handle() genuine duplicate, diagnoses off', off, genuine, 'duplicate'), handleCase('handle() genuine duplicate, default', rationed, genuine, 'duplicate')],
]
const cases = pairs.flat()

for (let round = 0; round <= ROUNDS; round++) {
  for (const task of cases) {
    const cpu = process.cpuUsage()
    const from = performance.now()
    await task.run()
    const wall = performance.now() - from
    const { user, system } = process.cpuUsage(cpu)
    // Round 0 warms the code up and is not kept.
    if (round > 0) task.rounds.push({ cpuMicros: (user + system) / OPS, wallMicros: (wall * 1000) / OPS })
  }
}

const cpuOf = (task: Case) => median(task.rounds.map((r) => r.cpuMicros))
const wallOf = (task: Case) => median(task.rounds.map((r) => r.wallMicros))
console.log(
  `node ${process.version}; dist/ build; memory store, timeline on; ${genuine.length}-byte callback; ${OPS} ops per case per round, ` +
    `median of ${ROUNDS} rounds after a warm-up; a full diagnosis of the forged body computes ${probe.hmacs} HMACs\n`,
)
console.log('| baseline | case | baseline µs CPU/op | case µs CPU/op | ratio (CPU) | ratio (wall) |')
console.log('|---|---|---:|---:|---:|---:|')
for (const [baseline, task] of pairs) {
  console.log(
    `| ${baseline.name} | ${task.name} | ${cpuOf(baseline).toFixed(2)} | ${cpuOf(task).toFixed(2)} | ` +
      `${(cpuOf(task) / cpuOf(baseline)).toFixed(2)}× | ${(wallOf(task) / wallOf(baseline)).toFixed(2)}× |`,
  )
}
