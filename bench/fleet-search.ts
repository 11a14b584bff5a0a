/**
 * Which rates bench/fleet.ts measures for a column, one at a time: a generator that yields the next rate and is
 * given that step's result back, so that the run can take the columns in turns (one step of each per round) and
 * a burst of other work on the machine hits one step of every column rather than every step of one.
 */
import type { ColumnName, ColumnResult, Step } from './fleet-report.js'

export interface SearchPlan {
  startRate: number
  rateStep: number
  maxRate: number
  /** Halvings between the last rate held and the first not held. */
  refine: number
  /** How many times a step not held is measured again before its rate is taken as the limit. */
  retry: number
  /** A rate measured in any case, for the latency the table shows there. */
  referenceRate: number
  /** Rates given instead of the search. */
  rates: readonly number[] | undefined
}

export type RateSearch = Generator<number, void, Step>

export function* searchRates(plan: SearchPlan): RateSearch {
  const measured = new Set<number>()
  // A step not held is measured again: on a machine shared with other work, one burst of it fails a single step
  // (the same rate held and failed minutes apart in one session).
  function* judged(rate: number): Generator<number, Step, Step> {
    measured.add(rate)
    let step = yield rate
    for (let again = 0; again < plan.retry && !step.passed; again++) step = yield rate
    return step
  }
  if (plan.rates !== undefined) {
    for (const rate of plan.rates) yield rate
    return
  }
  let held: Step | undefined
  let failed: Step | undefined
  for (let rate = plan.startRate; rate <= plan.maxRate && failed === undefined; rate += plan.rateStep) {
    const step = yield* judged(rate)
    if (step.passed) held = step
    else failed = step
  }
  for (let round = 0; round < plan.refine && failed !== undefined; round++) {
    const low = held?.rate ?? 0
    const rate = Math.round((low + failed.rate) / 2 / 3) * 3
    if (rate <= low || rate >= failed.rate) break
    const step = yield* judged(rate)
    if (step.passed) held = step
    else failed = step
  }
  if (!measured.has(plan.referenceRate)) yield plan.referenceRate
}

/** A column's steps summed up: its highest rate held, the first rate that failed every time it was measured. */
export function columnResult(name: ColumnName, steps: readonly Step[], referenceRate: number): ColumnResult {
  const held = steps.filter((step) => step.passed).sort((a, b) => b.rate - a.rate)
  const failing = steps.filter((step) => !steps.some((other) => other.rate === step.rate && other.passed)).sort((a, b) => a.rate - b.rate)
  return {
    name,
    steps: [...steps],
    best: held[0],
    atReference: steps.find((step) => step.rate === referenceRate),
    // Store work is read at the first rate, which no column is overloaded at: retries under overload inflate it.
    atFirst: steps[0],
    firstFailing: failing[0],
  }
}
