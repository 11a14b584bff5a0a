/**
 * npm run bench:query — what fields in the query string cost against the same fields in a body (issue 21,
 * defect 4: a forged 15 KB bodyless request once cost 7–10× its body twin, because every split of the query into
 * the URL's own leading parameters and the signed fields was decoded afresh). Goal: query time / body time <= 2
 * for the same bytes, forged (nobody's checksum matches: the worst case, every split tried) and genuine.
 * On the built dist/, in one run; tasks take turns round after round and each ratio is the median of the rounds'.
 * Environment: BENCH_ROUNDS (default 7), BENCH_TIME_MS (per task and round, default 300).
 */
import { type Core, fromDist, type Testing } from './dist.js'
import { envInteger } from './env.js'
import { throughputRounds } from './rounds.js'
import { median } from './stats.js'

const { createReceiver } = await fromDist<Core>('index')
const { samplePaymentFields, signCallback } = await fromDist<Testing>('testing')

const checksumToken = '3f6b8e2a9c1d4f7e0a5b8c2d6e9f1a4b7c0d3e6f9a2b5c8d1e4f7a0b3c6d9e2f'
const FORM = 'application/x-www-form-urlencoded'
const receiver = createReceiver({ checksumToken, signatureOnly: true, maxBodyBytes: 64 * 1024, logger: { debug() {}, info() {}, warn() {}, error() {} } })

// Forged: ~15 KB of fields whose names the service never sends (so each leading one may be the URL's own), and a
// checksum nobody made.
const filler = Array.from({ length: 150 }, (_, i) => `f${String(i).padStart(3, '0')}=${'x'.repeat(90)}`).join('&')
const forged = `${filler}&${signCallback(samplePaymentFields(), checksumToken).body.replace(/checksum=[0-9a-f]+/, `checksum=${'0'.repeat(64)}`)}`
// Genuine: the same size of signed fields, after the URL's own two parameters.
const extra = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`f${String(i).padStart(3, '0')}`, 'x'.repeat(90)]))
const genuineFields = signCallback(samplePaymentFields(extra), checksumToken).body
const genuine = `shop=42&lang=ms&${genuineFields}`

async function refused(delivery: Parameters<typeof receiver.verify>[0]): Promise<void> {
  try {
    await receiver.verify(delivery)
  } catch {
    return
  }
  throw new Error('a forged delivery was accepted')
}

const forgedBody = Buffer.from(forged)
const genuineBody = Buffer.from(genuineFields)
await refused({ query: forged })
await refused({ body: forgedBody, contentType: FORM })
if ((await receiver.verify({ query: genuine })).state !== 'succeeded') throw new Error('the genuine query was refused')
if ((await receiver.verify({ body: genuineBody, contentType: FORM, query: 'shop=42&lang=ms' })).state !== 'succeeded')
  throw new Error('the genuine body was refused')

const TASKS: [string, () => Promise<unknown>][] = [
  ['forged, fields in the query', () => refused({ query: forged })],
  ['forged, fields in the body', () => refused({ body: forgedBody, contentType: FORM })],
  ["genuine, after the URL's own query", () => receiver.verify({ query: genuine })],
  ["genuine, body beside the URL's own query", () => receiver.verify({ body: genuineBody, contentType: FORM, query: 'shop=42&lang=ms' })],
]

const ROUNDS = envInteger('BENCH_ROUNDS', 7, 1)
const TIME_MS = envInteger('BENCH_TIME_MS', 300, 10)
const rounds = await throughputRounds(TASKS, 300)

const ratio = (fast: readonly number[], slow: readonly number[]) => median(fast.map((value, i) => value / (slow[i] as number)))
console.log(`forged ${forged.length} bytes, genuine ${genuine.length} bytes; ${ROUNDS} rounds of ${TIME_MS} ms per task, medians`)
console.table(
  TASKS.map(([name], i) => {
    const hz = median(rounds[i] as number[])
    return { task: name, 'ops/s': Math.round(hz), 'µs/op': Number((1e6 / hz).toFixed(1)) }
  }),
)
const [forgedQuery, forgedBodyRounds, genuineQuery, genuineBodyRounds] = rounds as [number[], number[], number[], number[]]
for (const [what, query, body] of [
  ['forged', forgedQuery, forgedBodyRounds],
  ['genuine', genuineQuery, genuineBodyRounds],
] as const) {
  const slower = ratio(body, query)
  console.log(`${what}: query time / body time = ${slower.toFixed(2)}  (goal <= 2: ${slower <= 2 ? 'met' : 'NOT met'})`)
}
