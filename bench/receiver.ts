/**
 * npm run bench:receiver — what a whole delivery costs next to its verification, on the built package, in one
 * run (issue 35: `handle()` of a new delivery at most 1.6× `verify()`): `receiver.verify()` of a fresh callback;
 * `handle()` of a new delivery (claim, handlers, complete, answer; memory store, timeline on, a no-op handler)
 * acting on the checksum alone; the same confirmed over the API (the default), the API answering in-process so
 * that only this package's share is counted (building the request, reading and checking the record); and
 * `handle()` of a duplicate. Every new delivery has an exchange_number never seen before, signed before the clock
 * starts.
 *
 * The cases take turns in short rounds, forwards then backwards, so that what slows the machine for a while hits
 * them alike; each case's median round is shown by this process's CPU time per operation, and each ratio is the
 * median of the rounds' own ratios. Environment: BENCH_OPS (per case per round, default 250), BENCH_ROUNDS (60).
 */
import { type Core, fromDist } from './dist.js'
import { CallbackPool } from './signed-callbacks.js'
import { envInteger } from './env.js'
import { median } from './stats.js'

const OPS = envInteger('BENCH_OPS', 250, 50)
const ROUNDS = envInteger('BENCH_ROUNDS', 60, 1)

const { createReceiver } = await fromDist<Core>('index')
const { createClient } = await fromDist<typeof import('../src/client/index.js')>('client')

const credentials = { uid: 'bench-merchant', authToken: 'A1b2C3d4E5f6G7h8I9j0', checksumToken: '3f6b8e2a9c1d4f7e0a5b8c2d6e9f1a4b7c0d3e6f9a2b5c8d1e4f7a0b3c6d9e2f' }
const contentType = 'application/x-www-form-urlencoded'
const perCase = OPS * (ROUNDS + 1)
const pools = { verify: new CallbackPool(perCase, credentials.checksumToken), own: new CallbackPool(perCase, credentials.checksumToken), signatureOnly: new CallbackPool(perCase, credentials.checksumToken), confirmed: new CallbackPool(perCase + 1, credentials.checksumToken) }

// The API's records of the confirmed case's payments, as the search endpoint answers them: the callback's fields,
// typed as JSON has them.
const records = new Map<string, Record<string, unknown>>()
const apiBodies = [...Array.from({ length: pools.confirmed.length }, (_, i) => pools.confirmed.body(i)), ...Array.from({ length: pools.own.length }, (_, i) => pools.own.body(i))]
for (const body of apiBodies) {
  const fields: Record<string, unknown> = Object.fromEntries(new URLSearchParams(body.toString()))
  delete fields.checksum
  for (const name of ['payment_status', 'fpx_status']) fields[name] = fields[name] === 'true'
  fields.payment_id = Number(fields.payment_id)
  records.set(fields.exchange_number as string, fields)
}
const inProcessApi: typeof fetch = async (input) => {
  const exchangeNumber = new URL(String(input)).searchParams.get('reference_number') ?? ''
  return Response.json([records.get(exchangeNumber)].filter(Boolean))
}

// The receiver's own share of confirmation: an API client object answering from memory (no request, no schema).
const ownClient = { searchTransactions: async (_reference: string, value: string) => [records.get(value)].filter(Boolean) as object[] }
const confirmedOwn = createReceiver({ client: ownClient as never, checksumToken: credentials.checksumToken, logger: false })
const signatureOnly = createReceiver({ checksumToken: credentials.checksumToken, signatureOnly: true, logger: false })
const confirmed = createReceiver({ client: createClient({ environment: { baseUrl: 'http://api.invalid/api' }, ...credentials, fetch: inProcessApi }), checksumToken: credentials.checksumToken })
for (const receiver of [signatureOnly, confirmed, confirmedOwn]) receiver.on('payment.succeeded', () => {})

const duplicate = pools.confirmed.body(perCase)
if ((await confirmed.handle({ kind: 'callback', body: duplicate, contentType })).outcome !== 'processed') throw new Error('the confirmed receiver did not process its first delivery')

interface Case {
  readonly name: string
  run(round: number): Promise<void>
  readonly cpu: number[]
}
function handling(name: string, receiver: typeof confirmed, body: (i: number) => Buffer, outcome: string): Case {
  return {
    name,
    async run(round) {
      for (let i = 0; i < OPS; i++) {
        const answer = await receiver.handle({ kind: 'callback', body: body(round * OPS + i), contentType })
        if (answer.outcome !== outcome) throw new Error(`${name}: ${answer.outcome} ${answer.body}`)
      }
    },
    cpu: [],
  }
}
const cases: Case[] = [
  {
    name: 'verify() fresh',
    async run(round) {
      for (let i = 0; i < OPS; i++) await signatureOnly.verify({ body: pools.verify.body(round * OPS + i), contentType })
    },
    cpu: [],
  },
  handling('handle() new, signature only', signatureOnly, (i) => pools.signatureOnly.body(i), 'processed'),
  handling('handle() new, confirmed (default)', confirmed, (i) => pools.confirmed.body(i), 'processed'),
  handling("handle() new, confirmed, the client's share left out", confirmedOwn, (i) => pools.own.body(i), 'processed'),
  handling('handle() duplicate', confirmed, () => duplicate, 'duplicate'),
]

for (let round = 0; round <= ROUNDS; round++) {
  for (const task of round % 2 === 0 ? cases : [...cases].reverse()) {
    const start = process.cpuUsage()
    await task.run(round)
    const { user, system } = process.cpuUsage(start)
    // Round 0 warms the code up.
    if (round > 0) task.cpu.push(user + system)
  }
}
await Promise.all([signatureOnly.close(), confirmed.close(), confirmedOwn.close()])

const ratio = (task: Case, base: Case) => median(task.cpu.map((cpu, round) => cpu / (base.cpu[round] as number)))
const [verify, own, byApi, receiverShare, again] = cases as [Case, Case, Case, Case, Case]
console.log(`bench:receiver — node ${process.version}, dist/, memory store, ${OPS} operations per case per round, ${ROUNDS} rounds\n`)
console.table(cases.map((task) => ({ case: task.name, 'CPU µs/op': Number((median(task.cpu) / OPS).toFixed(2)) })))
const goal = (value: number, most: number) => `${value.toFixed(2)} (goal ≤ ${most}: ${value <= most ? 'met' : 'NOT met'})`
console.log(`handle(new, confirmed) / verify(fresh)        = ${ratio(byApi, verify).toFixed(2)} (with one API request built and its record checked; the API's own time left out)`)
console.log(`  the receiver's share (the API client's left out) = ${goal(ratio(receiverShare, verify), 1.6)}`)
console.log(`handle(new, signature only) / verify(fresh)   = ${ratio(own, verify).toFixed(2)} (with the check that no renamed copy reads otherwise)`)
console.log(`handle(duplicate) / verify(fresh)           = ${ratio(again, verify).toFixed(2)}`)
