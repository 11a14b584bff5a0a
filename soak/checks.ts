import type { PaymentState } from '../src/core/payment.js'
import type { StoreKind } from './config.js'
import type { PaymentPlan } from './plan.js'
import { RANK } from './protocol.js'
import type { Kill } from './workers.js'

/*
 * What the ledger (one row per handler run) and the store must look like after the run. A "double run" is a
 * row for an (exchange_number, state) that is not its group's last: a run whose claim was not completed, since
 * a completed claim makes every later delivery a duplicate. The PostgreSQL store in transactional mode allows
 * none (the row rolls back with the claim). The Redis store allows one per run a SIGKILL cut between its effect
 * and its completion: so each must come from a killed process, and no killed process may have more than the
 * requests it had in flight when it died.
 */

export interface LedgerRow {
  id: number
  exchange_number: string
  state: PaymentState
  pid: number
  /** When the handler wrote it (epoch ms, the database's clock on this machine). */
  at: number
}

export interface Findings {
  rows: number
  pairs: number
  doubleRuns: number
  /** The most double runs the kills could cause: the requests in flight on the killed workers. */
  doubleRunBound: number
  /** Double runs per killed pid. */
  doubleRunsByPid: Map<number, number>
  /** With a store restart: second runs by processes never killed (the store forgot, or cut a completion). */
  restartDoubleRuns: number
  /** States that ran after a higher one had (a stale 99 after its 00, a failure after a success). */
  regressions: number
  /** Payments whose handled states the store no longer has at the end. */
  forgotten: number
  /** Each kind of violation, with its count and a few examples. */
  violations: Map<string, { count: number; examples: string[] }>
}

export interface CheckInput {
  store: StoreKind
  payments: ReadonlyMap<string, PaymentPlan>
  rows: readonly LedgerRow[]
  /** Every worker pid the run started. */
  pids: ReadonlySet<number>
  kills: readonly Kill[]
  /** The states the store says were handled, by exchange_number. */
  storeHandled: ReadonlyMap<string, readonly string[]>
  leasesLeft: number
  /**
   * Set when the store was restarted mid-run: whether its configuration may forget handled states (Redis without
   * AOF always). Then second runs, regressions and forgotten states are reported as figures, not violations.
   */
  restartForgets?: boolean
  /**
   * When the store was down (epoch ms, from the crash until it answered again): a second run counts against the
   * restart when its first run came before the store was back (a handler that ran on a claim the restart
   * forgot) and the second after the crash.
   */
  restartWindow?: { from: number; to: number }
  /**
   * Requests in flight when the store crashed: where the store forgets nothing, the most second runs the crash
   * may cause (runs whose completion the crash cut, as a worker's SIGKILL can).
   */
  restartInFlight?: number
}

const EXAMPLES = 5
const rank = (state: string) => RANK[state] ?? -1

export function check(input: CheckInput): Findings {
  const violations = new Map<string, { count: number; examples: string[] }>()
  const violate = (kind: string, example: string) => {
    const entry = violations.get(kind) ?? { count: 0, examples: [] }
    entry.count++
    if (entry.examples.length < EXAMPLES && !entry.examples.includes(example)) entry.examples.push(example)
    violations.set(kind, entry)
  }
  const killed = new Map(input.kills.map((kill) => [kill.pid, kill]))

  // exchange_number → state → rows in id order (the rows arrive sorted by id).
  const byPayment = new Map<string, Map<PaymentState, LedgerRow[]>>()
  for (const row of input.rows) {
    if (!input.pids.has(row.pid)) violate('a ledger row from a process the run never started', `${row.exchange_number} ${row.state} pid ${row.pid}`)
    let states = byPayment.get(row.exchange_number)
    if (states === undefined) byPayment.set(row.exchange_number, (states = new Map()))
    const group = states.get(row.state) ?? []
    group.push(row)
    states.set(row.state, group)
  }

  const forgiving = input.restartForgets === true
  let pairs = 0
  let doubleRuns = 0
  let restartDoubleRuns = 0
  let regressions = 0
  let forgotten = 0
  const doubleRunsByPid = new Map<number, number>()
  for (const [exchangeNumber, states] of byPayment) {
    const plan = input.payments.get(exchangeNumber)
    if (plan === undefined) violate('a ledger row for a payment the driver never sent', exchangeNumber)
    for (const [state, group] of states) {
      pairs++
      if (plan !== undefined && !plan.expected.has(state)) {
        regressions++
        if (!forgiving) violate('a state ran that must not have (a stale 99 after its final result)', `${exchangeNumber} ${state}`)
      }
      const earlier = group.slice(0, -1)
      doubleRuns += earlier.length
      for (const row of earlier) {
        const where = `${exchangeNumber} ${state}: runs by pids ${group.map((r) => r.pid).join(', ')}`
        if (input.store === 'postgres') violate('a second run with the transactional PostgreSQL store', where)
        else if (killed.has(row.pid)) doubleRunsByPid.set(row.pid, (doubleRunsByPid.get(row.pid) ?? 0) + 1)
        else if (
          input.restartForgets !== undefined &&
          input.restartWindow !== undefined &&
          row.at < input.restartWindow.to &&
          (group.at(-1) as LedgerRow).at >= input.restartWindow.from
        ) {
          restartDoubleRuns++
        } else violate('a second run after a first run by a process that was never killed', where)
      }
    }
    // Each state's completed run is its last row; completed runs must never move the payment backwards.
    const completed = [...states].map(([state, group]) => ({ state, id: (group.at(-1) as LedgerRow).id })).sort((a, b) => a.id - b.id)
    let previous: PaymentState | undefined
    for (const { state } of completed) {
      if (previous !== undefined && rank(state) < rank(previous)) {
        // A stale 99 that ran is counted above already.
        if (plan === undefined || plan.expected.has(state)) regressions++
        if (!forgiving) violate('a payment regressed (a lower state ran after a higher one)', `${exchangeNumber}: ${completed.map((c) => c.state).join(' then ')}`)
      }
      previous = state
    }
  }

  // With AOF appendfsync always nothing handled is forgotten, and a completion resent after the restart is told
  // it was applied: no handler may run twice across the crash.
  if (input.restartForgets === false && input.store === 'redis' && restartDoubleRuns > 0)
    violate(
      'second runs across a restart that forgets nothing',
      `${restartDoubleRuns} second runs (${input.restartInFlight ?? 0} requests were in flight at the crash)`,
    )
  for (const [pid, count] of doubleRunsByPid) {
    const kill = killed.get(pid) as Kill
    if (count > kill.inFlight) violate('more double runs than the kill could cause', `pid ${pid}: ${count} double runs, ${kill.inFlight} requests in flight`)
  }

  for (const [exchangeNumber, plan] of input.payments) {
    const states = byPayment.get(exchangeNumber)
    for (const state of plan.expected)
      if (states?.has(state) !== true) violate('lost: an expected state never ran', `${exchangeNumber} ${state}`)
    const highest = [...(states?.keys() ?? [])].sort((a, b) => rank(b) - rank(a))[0]
    if (highest !== plan.final) violate('the highest state handled is not the final one', `${exchangeNumber}: ${highest ?? 'none'}, expected ${plan.final}`)
    const handled = [...(input.storeHandled.get(exchangeNumber) ?? [])].sort().join(',')
    const expected = [...plan.expected].sort().join(',')
    if (handled !== expected) {
      forgotten++
      if (!forgiving) violate('the store disagrees with the plan', `${exchangeNumber}: store [${handled}], expected [${expected}]`)
    }
  }
  if (input.leasesLeft > 0) violate('leases left behind after every delivery was acknowledged', `${input.leasesLeft} leases`)

  const doubleRunBound = input.store === 'postgres' ? 0 : input.kills.reduce((sum, kill) => sum + kill.inFlight, 0)
  return { rows: input.rows.length, pairs, doubleRuns, doubleRunBound, doubleRunsByPid, restartDoubleRuns, regressions, forgotten, violations }
}
