/*
 * A payment's timeline read as its life: the entries of one delivery (or inbox attempt, lookup, action) as one
 * step, in the order they happened, each said in words an operator reads: where it came from, what the receiver
 * did, what it answered and why.
 */
import type { PaymentState } from '../core/payment.js'
import type { TimelineEntry, TimelineEvent, TimelineSource } from '../contract/timeline.js'

export interface LifeStep {
  readonly at: Date
  readonly source: TimelineSource
  readonly entries: readonly TimelineEntry[]
  /** The entry that ends it: what the receiver finally did. */
  readonly last: TimelineEntry
}

const SOURCES: Record<TimelineSource, string> = {
  callback: 'Callback from the service',
  redirect: 'Redirect (buyer’s browser)',
  reconcile: 'API record handed over',
  inbox: 'Inbox attempt',
  client: 'Created by the client',
  sweep: 'Sweeper',
  console: 'Console action',
}

const EVENTS: Record<TimelineEvent, string> = {
  received: 'received',
  refused: 'refused',
  verified: 'checksum verified',
  duplicate: 'duplicate: handled before, acknowledged',
  stale: 'stale: a later state was handled, acknowledged',
  busy: 'busy: another delivery held the payment',
  handler_failed: 'handler failed',
  failed: 'failed',
  processed: 'handlers ran, state recorded',
  queued: 'written to the inbox',
  dead_lettered: 'dead-lettered: no attempts left',
  created: 'created',
  lookup: 'looked up through the status API',
  abandoned: 'closed as abandoned',
  looked_up: 'looked up now',
  retried: 'inbox entry retried',
}

export const sourceLabel = (source: TimelineSource): string => SOURCES[source] ?? source
export const eventLabel = (event: TimelineEvent): string => EVENTS[event] ?? event

/** The entries grouped by attempt, each group where its first entry falls. */
export function lifeSteps(entries: readonly TimelineEntry[]): LifeStep[] {
  const groups = new Map<string, TimelineEntry[]>()
  for (const entry of entries) {
    // The book's `created` entry and the sweeper's and console's notes stand alone, whatever their attempt says.
    const key = entry.event === 'created' ? `created:${entry.at.getTime()}` : entry.attempt
    const group = groups.get(key)
    if (group === undefined) groups.set(key, [entry])
    else group.push(entry)
  }
  return [...groups.values()].map((group) => {
    const [first] = group as [TimelineEntry, ...TimelineEntry[]]
    return { at: first.at, source: first.source, entries: group, last: group.at(-1) as TimelineEntry }
  })
}

/**
 * What the step did, as a chain of events: `received → checksum verified → confirmed with the API → handlers ran`.
 * A confirming receiver asks the API before any handler of a new state runs, so a step whose handlers ran (or
 * failed) was confirmed first; a record handed over from the API needs no confirmation.
 */
export function stepChain(step: LifeStep, confirming: boolean | undefined): string[] {
  const chain: string[] = []
  for (const entry of step.entries) {
    if (confirming === true && (entry.event === 'processed' || entry.event === 'handler_failed') && step.source !== 'reconcile') chain.push('confirmed with the API')
    chain.push(eventLabel(entry.event))
  }
  return chain
}

/** The handled state a timeline shows last, and whether the handlers of a state keep failing since (no later success). */
export function handlerTrouble(entries: readonly TimelineEntry[]): { readonly failing: PaymentState | null; readonly failures: number } {
  let failing: PaymentState | null = null
  let failures = 0
  for (const entry of entries) {
    if (entry.state === null) continue
    if (entry.event === 'handler_failed') {
      if (failing !== entry.state) failures = 0
      failing = entry.state
      failures++
    } else if ((entry.event === 'processed' || entry.event === 'duplicate' || entry.event === 'stale') && entry.state === failing) {
      failing = null
      failures = 0
    }
  }
  return { failing, failures }
}

/** Every exchange_number the timeline names under verified entries (refusals name what they claimed, not what is). */
export function exchangeNumbers(entries: readonly TimelineEntry[]): string[] {
  return [...new Set(entries.filter((entry) => entry.verified && entry.exchangeNumber !== null).map((entry) => entry.exchangeNumber as string))]
}
