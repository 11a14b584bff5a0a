/*
 * Waiting for a lease another process holds to end, without asking the store again and again: a store that can
 * hear its completions and releases (Redis PUBLISH, PostgreSQL NOTIFY) opens a feed of them while somebody waits,
 * and this keeps the waiters. The feed is opened when a delivery first waits and closed a second after the last
 * wait, so an idle process holds no extra connection and can exit. What is heard wakes a waiter, which then claims
 * again, with one exception: a completion by the very owner this store's busy claim named. Owners are unique to
 * a delivery (a receiver's random tag and a counter), so that completion is this store's, and its state is handled;
 * anything else may come from another store sharing the channel (another prefix, database or schema), so it never
 * decides an answer by itself.
 */
import { PAYMENT_STATES, type PaymentState } from '../core/payment.js'

/** A completion a store announced: the owner whose lease it ended, and the state it recorded. */
export interface HeardCompletion {
  readonly owner: string
  readonly state: string
}

/** An open feed of lease ends; `close` ends it. */
export interface LeaseEndFeed {
  close(): void
}

/**
 * Opens a feed: `heard` for every lease end, `lost` when the connection closes or starts reconnecting (what ended
 * meanwhile is not heard, so the feed is dropped, its waiters claim again, and the next wait opens another).
 */
export type OpenLeaseEndFeed = (heard: (exchangeNumber: string, completed?: HeardCompletion) => void, lost: () => void) => Promise<LeaseEndFeed>

/**
 * The one end of a wait that decides an answer: the holder named by this store's busy claim completed `state`.
 * Keyed by a symbol this package does not export, so that no value a store passes on (what its own feed heard,
 * say) can be taken for it: only leaseEndWaiter makes one, and a store of anybody else's only wakes its waiters.
 */
const HOLDER_COMPLETED: unique symbol = Symbol('fpx-collect: the holder completed')
export interface HolderCompleted {
  readonly [HOLDER_COMPLETED]: PaymentState
}

/** The state a wait's end says was completed by the holder, when it is this package's mark; otherwise undefined. */
export function completedState(end: unknown): PaymentState | undefined {
  return typeof end === 'object' && end !== null && HOLDER_COMPLETED in end ? (end as HolderCompleted)[HOLDER_COMPLETED] : undefined
}

/** What a store's claim and its awaitLeaseEnd (contract/store.ts) use. */
export interface LeaseEndWaiter {
  /**
   * Called by the store's claim when its answer was busy, with when that claim was sent (performance.now()) and,
   * where the store can tell, the owner holding the lease.
   */
  foundBusy(exchangeNumber: string, sentAt: number, holder?: string): void
  /** Resolves with the mark when the holder that the busy claim named was heard completing a state; else with nothing. */
  awaitLeaseEnd(exchangeNumber: string, timeoutMs: number): Promise<HolderCompleted | undefined>
}

/** A claim answered busy: when it was sent, and the owner it found holding the lease. */
interface BusyClaim {
  readonly at: number
  readonly holder: string | undefined
}

/** A lease end heard: when, and the completion it announced (none for a release). */
interface HeardEnd {
  readonly at: number
  readonly completed: HeardCompletion | undefined
}

/** The state `holder` completed, when `completed` is its completion. */
function completedBy(holder: string | undefined, completed: HeardCompletion | undefined): PaymentState | undefined {
  if (holder === undefined || completed?.owner !== holder) return undefined
  return PAYMENT_STATES.includes(completed.state as PaymentState) ? (completed.state as PaymentState) : undefined
}

/** Seconds are plenty: the feed is kept for a burst, not for the life of the process. */
const IDLE_CLOSE_MS = 1000
/** How long what was heard is kept, for a waiter whose claim's answer came after the end itself. */
const HEARD_KEPT_MS = 2000
/** After a feed failed to open (no server, no permission), waits answer at once for this long. */
const RETRY_OPEN_AFTER_MS = 30_000

/**
 * `open` makes the feed; `stillHeld` asks the store once whether a live lease is held on the payment, for a wait
 * that opens the feed (an end before the feed listened is not heard).
 */
export function leaseEndWaiter(open: OpenLeaseEndFeed, stillHeld: (exchangeNumber: string) => Promise<boolean>): LeaseEndWaiter {
  const waiting = new Map<string, Set<(completed?: HeardCompletion) => void>>()
  // Each busy claim and each end heard, by exchange_number: both kept briefly, oldest first.
  const busy = new Map<string, BusyClaim>()
  const ends = new Map<string, HeardEnd>()
  let feed: Promise<LeaseEndFeed> | undefined
  let listeningSince: number | undefined
  let failedAt = Number.NEGATIVE_INFINITY
  let idle: ReturnType<typeof setTimeout> | undefined

  const keep = <T extends { at: number }>(map: Map<string, T>, key: string, seen: T) => {
    map.delete(key)
    map.set(key, seen)
    for (const [oldest, kept] of map) {
      if (kept.at > performance.now() - HEARD_KEPT_MS) break
      map.delete(oldest)
    }
  }
  const heard = (exchangeNumber: string, completed?: HeardCompletion) => {
    keep(ends, exchangeNumber, { at: performance.now(), completed })
    for (const done of waiting.get(exchangeNumber) ?? []) done(completed)
  }
  const close = () => {
    const current = feed
    feed = undefined
    listeningSince = undefined
    void current?.then((opened) => opened.close(), () => undefined)
  }
  const listen = () => {
    if (feed !== undefined) return feed
    if (performance.now() - failedAt < RETRY_OPEN_AFTER_MS) return Promise.reject(new Error('the feed of lease ends failed to open a moment ago'))
    const lost = () => {
      if (feed !== opening) return
      // Lost before it ever listened: as good as failed to open.
      if (listeningSince === undefined) failedAt = performance.now()
      close()
      // What ended meanwhile was not heard: every waiter claims again now.
      for (const waiters of waiting.values()) for (const done of waiters) done()
    }
    const opening = open(heard, lost)
    feed = opening
    opening.then(
      () => feed === opening && (listeningSince = performance.now()),
      () => {
        failedAt = performance.now()
        if (feed === opening) feed = undefined
      },
    )
    return opening
  }

  return {
    foundBusy: (exchangeNumber, sentAt, holder) => keep(busy, exchangeNumber, { at: sentAt, holder }),

    async awaitLeaseEnd(exchangeNumber, timeoutMs) {
      clearTimeout(idle)
      const found = busy.get(exchangeNumber)
      const askedAt = found?.at
      busy.delete(exchangeNumber)
      let ended = false
      let state: PaymentState | undefined
      let done = (_completed?: HeardCompletion) => {}
      const over = new Promise<void>((resolve) => {
        // The first end decides: a time-out or a release heard first leaves the state unset.
        done = (completed) => {
          if (ended) return
          ended = true
          state = completedBy(found?.holder, completed)
          resolve()
        }
      })
      const end = () => (state === undefined ? undefined : { [HOLDER_COMPLETED]: state })
      const timer = setTimeout(() => done(), timeoutMs)
      const waiters = waiting.get(exchangeNumber) ?? new Set()
      waiters.add(done)
      waiting.set(exchangeNumber, waiters)
      try {
        if (listeningSince !== undefined && askedAt !== undefined && listeningSince <= askedAt) {
          // Listening before the busy claim was sent: its end is heard, maybe already, before this wait began.
          const before = ends.get(exchangeNumber)
          if (before === undefined || before.at < askedAt) await over
          else done(before.completed)
          return end()
        }
        await Promise.race([listen(), over])
        if (ended) return end()
        // Listening now: an end from now on is heard; one that came before shows here. Bounded by the wait too: on
        // a small pool the check may queue behind the feed's own connection.
        if (await Promise.race([stillHeld(exchangeNumber), over.then(() => true)])) await over
        return end()
      } catch {
        // No feed, or the check failed: the delivery claims again now and hears from the store what holds.
        return undefined
      } finally {
        clearTimeout(timer)
        waiters.delete(done)
        if (waiters.size === 0) waiting.delete(exchangeNumber)
        if (waiting.size === 0) {
          idle = setTimeout(close, IDLE_CLOSE_MS)
          ;(idle as { unref?: () => void }).unref?.()
        }
      }
    },
  }
}
