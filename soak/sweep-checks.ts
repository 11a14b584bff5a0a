import type { BookedPayment } from '../src/contract/payment-book.js'
import type { SweepSoakConfig } from './sweep-config.js'

/** What the sweep soak checks at the end, from the rows the workers wrote and the book the store keeps. */

export type Plan = 'approve' | 'reject' | 'never' | 'pendingApproved' | 'pendingNever'

export interface PlannedPayment {
  readonly orderNumber: string
  readonly plan: Plan
  /** Whether the emulator lost its redirect and callbacks (lose_results), or its 00 after approval (lose_approvals). */
  readonly lost: boolean
  readonly approvalLost: boolean
  createdAt: number
  /** When its result existed at the service (the bank's answer, or the approval); creation for one never paid. */
  resultAt: number
}

export interface LedgerRow {
  order_number: string
  exchange_number: string
  state: string
  kind: string
  pid: number
  at: number
}
export interface LookupRow {
  reference: string
  value: string
  pid: number
  started_at: number
  ended_at: number | null
}
export interface FinalRow {
  order_number: string
  at: number
}

const EXPECTED: Record<Plan, string> = { approve: 'succeeded', reject: 'failed', never: 'abandoned', pendingApproved: 'succeeded', pendingNever: 'abandoned' }

export interface SweepFindings {
  readonly violations: Map<string, string[]>
  readonly lines: [string, string][]
}

const ms = (value: number) => `${Math.round(value)} ms`

function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number
}

export function checkSweep(input: {
  config: SweepSoakConfig
  payments: readonly PlannedPayment[]
  book: ReadonlyMap<string, BookedPayment | undefined>
  ledger: readonly LedgerRow[]
  lookups: readonly LookupRow[]
  finals: readonly FinalRow[]
  kills: readonly { pid: number; at: number }[]
  transactional: boolean
}): SweepFindings {
  const { config, payments, book, ledger, lookups, finals, kills } = input
  const { sweep, slackMs } = config
  const violations = new Map<string, string[]>()
  const violate = (kind: string, example: string) => {
    const list = violations.get(kind) ?? []
    list.push(example)
    violations.set(kind, list)
  }
  const killedAt = new Map(kills.map((kill) => [kill.pid, kill.at]))

  // Exactly once: one handler run per (exchange_number, state); with Redis, a second only where a kill cut the first.
  const runs = new Map<string, LedgerRow[]>()
  for (const row of ledger) runs.set(`${row.exchange_number}:${row.state}`, [...(runs.get(`${row.exchange_number}:${row.state}`) ?? []), row])
  let doubleRuns = 0
  let cutByKill = 0
  for (const [key, rows] of runs)
    if (rows.length > 1) {
      const cut = !input.transactional && rows.slice(0, -1).every((row) => killedAt.has(row.pid) && row.at <= (killedAt.get(row.pid) as number))
      if (cut) cutByKill += rows.length - 1
      else {
        doubleRuns += rows.length - 1
        violate('a payment state handled twice', `${key}: ${rows.map((row) => `${row.kind} by ${row.pid}`).join(', ')}`)
      }
    }

  const finalOf = new Map<string, number>()
  for (const row of finals) finalOf.set(row.order_number, Math.min(finalOf.get(row.order_number) ?? Number.POSITIVE_INFINITY, row.at))
  // The sweeper's own finds settle the book right after the handler, and it looks nothing up in between; unless the
  // kill came between the two (then the payment was not final, and the next sweeper rightly looks it up again).
  for (const row of ledger)
    if (row.kind === 'reconcile' && row.state !== 'pending' && !killedAt.has(row.pid)) finalOf.set(row.order_number, Math.min(finalOf.get(row.order_number) ?? Number.POSITIVE_INFINITY, row.at))

  const lookupsOf = new Map<string, LookupRow[]>()
  for (const row of lookups) if (row.reference === 'order_number') lookupsOf.set(row.value, [...(lookupsOf.get(row.value) ?? []), row])

  const latencies: number[] = []
  const abandonAges: number[] = []
  let lookedUpFinal = 0
  const crossings: number[] = []
  let lateApprovals = 0
  const reached = { succeeded: 0, failed: 0, abandoned: 0 }
  for (const payment of payments) {
    const booked = book.get(payment.orderNumber)
    // An approval that came after the 99's horizon (a stalled machine) may rightly find the payment abandoned.
    const late = payment.plan === 'pendingApproved' && payment.resultAt >= payment.createdAt + sweep.pendingAbandonAfterMs - sweep.backoff.maxMs
    const expected = late && booked?.status === 'abandoned' ? 'abandoned' : EXPECTED[payment.plan]
    if (late) lateApprovals++
    if (booked?.status !== expected) {
      violate('a payment not at its expected final state', `${payment.orderNumber} (${payment.plan}${payment.lost ? ', lost' : ''}${payment.approvalLost ? ', approval lost' : ''}): ${booked?.status ?? 'not in the book'}, expected ${expected}`)
      continue
    }
    reached[expected as keyof typeof reached]++
    const finalRuns = ledger.filter((row) => row.order_number === payment.orderNumber && row.state !== 'pending')
    if (expected === 'abandoned') {
      if (finalRuns.length > 0) violate('an abandoned payment with a final handler run', payment.orderNumber)
      const closedAt = (booked.lastLookupAt as Date).getTime()
      const horizon = payment.plan === 'never' ? sweep.abandonAfterMs : sweep.pendingAbandonAfterMs
      const age = closedAt - payment.createdAt
      abandonAges.push(age - horizon)
      if (age < horizon || age > horizon + sweep.backoff.maxMs + sweep.everyMs + sweep.lockMs + slackMs)
        violate('abandoned outside its horizon', `${payment.orderNumber}: ${age} ms after creation, horizon ${horizon} ms`)
      // Nothing is looked up once closed: the last lookup is the one that closed it.
      for (const row of lookupsOf.get(payment.orderNumber) ?? []) if (row.started_at > closedAt + 100) lookedUpFinal++
      continue
    }
    if (finalRuns.length === 0) violate('a paid payment whose handlers never ran', payment.orderNumber)
    const finalAt = finalOf.get(payment.orderNumber)
    if (finalAt === undefined) continue
    for (const row of lookupsOf.get(payment.orderNumber) ?? [])
      if (row.started_at > finalAt + config.crossingMs) lookedUpFinal++
      else if (row.started_at > finalAt) crossings.push(row.started_at - finalAt)
    const latency = finalAt - payment.resultAt
    latencies.push(latency)
    const bound = Math.max(payment.resultAt, payment.createdAt + sweep.firstLookupAfterMs) - payment.resultAt + sweep.backoff.maxMs + sweep.everyMs + sweep.lockMs + slackMs
    if (latency > bound) violate('final later than the bound', `${payment.orderNumber} (${payment.plan}${payment.lost ? ', lost' : ''}): ${latency} ms after its result, bound ${bound} ms`)
  }
  if (lookedUpFinal > 0) violate('lookups of payments already final', `${lookedUpFinal}`)

  // One sweeper at a time: no two processes' lookups overlap in time (a killed one's last runs until its death).
  const sweeps = lookups.filter((row) => row.reference === 'order_number').sort((a, b) => a.started_at - b.started_at)
  let overlaps = 0
  for (let i = 0; i < sweeps.length; i++) {
    const a = sweeps[i] as LookupRow
    const end = a.ended_at ?? killedAt.get(a.pid) ?? a.started_at
    for (let j = i + 1; j < sweeps.length && (sweeps[j] as LookupRow).started_at < end; j++)
      if ((sweeps[j] as LookupRow).pid !== a.pid) {
        overlaps++
        violate('sweepers overlapping', `pid ${a.pid} and pid ${(sweeps[j] as LookupRow).pid} at ${new Date(a.started_at).toISOString()}`)
      }
  }
  // The rate bound: evenly spaced lookups, at most maxLookupsPerMinute in any 60 s.
  let perMinute = 0
  for (let i = 0, j = 0; i < sweeps.length; i++) {
    while ((sweeps[j] as LookupRow).started_at <= (sweeps[i] as LookupRow).started_at - 60_000) j++
    perMinute = Math.max(perMinute, i - j + 1)
  }
  const gaps = sweeps.slice(1).map((row, i) => row.started_at - (sweeps[i] as LookupRow).started_at)
  const spacing = 60_000 / sweep.maxLookupsPerMinute
  const minGap = gaps.length === 0 ? 0 : Math.min(...gaps)
  if (perMinute > sweep.maxLookupsPerMinute) violate('lookups over the rate bound', `${perMinute} in one minute, bound ${sweep.maxLookupsPerMinute}`)
  if (gaps.length > 0 && minGap < 0.9 * spacing) violate('lookups closer than the spacing', `${minGap} ms apart, spacing ${spacing} ms`)
  const confirmations = lookups.filter((row) => row.reference === 'exchange_number').length
  const seconds = sweeps.length < 2 ? 0 : ((sweeps.at(-1) as LookupRow).started_at - (sweeps[0] as LookupRow).started_at) / 1000

  const lines: [string, string][] = [
    [
      'final',
      `succeeded ${reached.succeeded}, failed ${reached.failed}, abandoned ${reached.abandoned} of ${payments.length}` +
        (lateApprovals === 0 ? '' : ` (${lateApprovals} B2B1 approvals came within a backoff of their horizon or after it)`),
    ],
    ['handlers', `${ledger.length} runs; double runs ${doubleRuns}${input.transactional ? '' : `, second runs where a kill cut the first ${cutByKill}`}`],
    [
      'latency',
      `result → final: p50 ${ms(percentile(latencies, 50))}, p99 ${ms(percentile(latencies, 99))}, max ${ms(latencies.length === 0 ? 0 : Math.max(...latencies))} ` +
        `(bound: max(result, created + ${sweep.firstLookupAfterMs}) + backoff ${sweep.backoff.maxMs} + every ${sweep.everyMs} + lock ${sweep.lockMs} + slack ${slackMs} ms)`,
    ],
    ['abandoned', `closed ${abandonAges.length === 0 ? '-' : `${Math.round(Math.min(...abandonAges))}..${ms(Math.max(...abandonAges))}`} after their horizon (${sweep.abandonAfterMs} ms; 99: ${sweep.pendingAbandonAfterMs} ms)`],
    [
      'lookups',
      `${sweeps.length} by order_number over ${seconds.toFixed(1)} s, of payments already final ${lookedUpFinal}; ` +
        `crossing a result that arrived as they started ${crossings.length}${crossings.length === 0 ? '' : ` (at most ${ms(Math.max(...crossings))} after it)`}; ` +
        `confirmations by exchange_number ${confirmations}`,
    ],
    ['rate', `at most ${perMinute} lookups in any 60 s (bound ${sweep.maxLookupsPerMinute}); closest ${ms(minGap)} apart (spacing ${ms(spacing)})`],
    ['sweepers', `${new Set(sweeps.map((row) => row.pid)).size} processes swept in turn; overlaps ${overlaps}`],
  ]
  return { violations, lines }
}
