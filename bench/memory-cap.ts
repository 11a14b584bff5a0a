/**
 * npm run bench:memory-cap — what a new payment costs the memory store once it is full (maxEntries reached, so each
 * new one makes the store forget its oldest), against the same store with room to spare, both holding as many
 * payments. Measured for the receiver's claim + complete and for the payment book's record(). The two stores take
 * turns, round by round, and each ratio is the median of the rounds' own ratios: the machine's speed drifts within
 * seconds, and a pair of rounds a few milliseconds apart sees the same machine.
 *
 * A Map keeps a deleted entry's slot until its table is rebuilt, so forgetting the oldest one at a time by a walk
 * from the front steps over every slot forgotten before; the store forgets a batch (1 % of the cap) per walk
 * (src/stores/memory/cap.ts). Goal: at the cap, at most 1.5× the cost with room.
 *
 * Environment: BENCH_CAP (payments held, default 100,000), BENCH_OPS (new payments a round, default 500),
 * BENCH_ROUNDS (default 40).
 */
import type { PaymentBook } from '../src/contract/payment-book.js'
import type { ReceiverStore } from '../src/contract/store.js'
import { createdPayment } from '../test/stores/payment-book-fixtures.js'
import { type Core, fromDist } from './dist.js'
import { envInteger } from './env.js'
import { median } from './stats.js'

const { memoryStore } = await fromDist<Core>('index')

const CAP = envInteger('BENCH_CAP', 100_000, 10)
const OPS = envInteger('BENCH_OPS', 500, 1)
const ROUNDS = envInteger('BENCH_ROUNDS', 40, 1)
const GOAL = 1.5

let serial = 0
const nextNumber = () => `EX${(serial++).toString().padStart(12, '0')}`

async function newPayment(store: ReceiverStore): Promise<void> {
  const lease = { exchangeNumber: nextNumber(), state: 'succeeded' as const, owner: 'bench' }
  const claim = await store.claim({ ...lease, leaseMs: 60_000 })
  if (claim.outcome !== 'claimed' || !(await store.complete(lease))) throw new Error(`a new payment was not claimed and completed: ${claim.outcome}`)
}

async function bookPayment(book: PaymentBook, settled: boolean): Promise<void> {
  const payment = createdPayment({ attached: {} })
  if ((await book.record(payment)) !== 'created') throw new Error('a new payment was not recorded')
  if (settled && !(await book.settle(payment, 'succeeded', nextNumber()))) throw new Error('a recorded payment was not settled')
}

interface Case {
  name: string
  /** One new payment on `store`. */
  op(store: ReceiverStore): Promise<void>
  /** Fills a store with `count` payments. */
  fill(store: ReceiverStore, count: number): Promise<void>
}

const CASES: Case[] = [
  {
    name: 'claim + complete of a new payment',
    op: newPayment,
    fill: async (store, count) => {
      for (let i = 0; i < count; i++) await newPayment(store)
    },
  },
  {
    name: 'payment book record() of a new payment',
    op: (store) => bookPayment(store.paymentBook!(), false),
    // Settled, as most are: the cap forgets the payment closed longest ago.
    fill: async (store, count) => {
      for (let i = 0; i < count; i++) await bookPayment(store.paymentBook!(), true)
    },
  },
]

async function timed(store: ReceiverStore, op: Case['op']): Promise<number> {
  const start = performance.now()
  for (let i = 0; i < OPS; i++) await op(store)
  return ((performance.now() - start) * 1000) / OPS
}

console.log(`memory store, ${CAP.toLocaleString('en')} payments held; ${ROUNDS} rounds of ${OPS} new payments each, the stores taking turns`)
let failed = false
for (const { name, op, fill } of CASES) {
  const full = memoryStore({ maxEntries: CAP })
  const roomy = memoryStore({ maxEntries: 100 * CAP })
  await fill(full, CAP)
  await fill(roomy, CAP)
  const atCap: number[] = []
  const withRoom: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    for (const [store, into] of round % 2 === 0 ? ([[full, atCap], [roomy, withRoom]] as const) : ([[roomy, withRoom], [full, atCap]] as const))
      into.push(await timed(store, op))
  }
  const ratio = median(atCap.map((micros, round) => micros / (withRoom[round] as number)))
  const met = ratio <= GOAL
  failed ||= !met
  console.log(
    `${name}: ${median(atCap).toFixed(2)} µs at the cap, ${median(withRoom).toFixed(2)} µs with room; at the cap / with room = ${ratio.toFixed(2)} (goal <= ${GOAL}: ${met ? 'met' : 'NOT met'})`,
  )
}
if (failed && process.env.CI !== undefined) process.exitCode = 1
