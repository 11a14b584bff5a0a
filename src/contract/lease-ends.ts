/*
 * Waiting for a lease another process holds to end, without asking the store again and again: a store that can
 * hear its completions and releases (Redis PUBLISH, PostgreSQL NOTIFY) opens a feed of them while somebody waits,
 * and this keeps the waiters. The feed is opened when a delivery first waits and closed a second after the last
 * wait, so an idle process holds no extra connection and can exit. What is heard only wakes a waiter, which then
 * claims again: a message may come from another store sharing the channel (another prefix, database or schema),
 * so it never decides an answer by itself.
 */

/** An open feed of lease ends; `close` ends it. */
export interface LeaseEndFeed {
  close(): void
}

/**
 * Opens a feed: `heard` for every lease end, `lost` when the connection closes or starts reconnecting (what ended
 * meanwhile is not heard, so the feed is dropped, its waiters claim again, and the next wait opens another).
 */
export type OpenLeaseEndFeed = (heard: (exchangeNumber: string) => void, lost: () => void) => Promise<LeaseEndFeed>

/** What a store's claim and its awaitLeaseEnd (contract/store.ts) use. */
export interface LeaseEndWaiter {
  /** Called by the store's claim when its answer was busy, with when that claim was sent (performance.now()). */
  foundBusy(exchangeNumber: string, sentAt: number): void
  awaitLeaseEnd(exchangeNumber: string, timeoutMs: number): Promise<void>
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
  const waiting = new Map<string, Set<() => void>>()
  // When each busy claim was sent, and when each end was heard: both kept briefly, oldest first.
  const busySince = new Map<string, number>()
  const heardAt = new Map<string, number>()
  let feed: Promise<LeaseEndFeed> | undefined
  let listeningSince: number | undefined
  let failedAt = Number.NEGATIVE_INFINITY
  let idle: ReturnType<typeof setTimeout> | undefined

  const keep = (map: Map<string, number>, key: string, at: number) => {
    map.delete(key)
    map.set(key, at)
    for (const [oldest, kept] of map) {
      if (kept > performance.now() - HEARD_KEPT_MS) break
      map.delete(oldest)
    }
  }
  const heard = (exchangeNumber: string) => {
    keep(heardAt, exchangeNumber, performance.now())
    for (const done of waiting.get(exchangeNumber) ?? []) done()
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
    foundBusy: (exchangeNumber, sentAt) => keep(busySince, exchangeNumber, sentAt),

    async awaitLeaseEnd(exchangeNumber, timeoutMs) {
      clearTimeout(idle)
      const askedAt = busySince.get(exchangeNumber)
      busySince.delete(exchangeNumber)
      let ended = false
      let done = () => {}
      const over = new Promise<void>((resolve) => {
        done = () => {
          ended = true
          resolve()
        }
      })
      const timer = setTimeout(done, timeoutMs)
      const waiters = waiting.get(exchangeNumber) ?? new Set()
      waiters.add(done)
      waiting.set(exchangeNumber, waiters)
      try {
        if (listeningSince !== undefined && askedAt !== undefined && listeningSince <= askedAt) {
          // Listening before the busy claim was sent: its end is heard, maybe already, before this wait began.
          const before = heardAt.get(exchangeNumber)
          if (before === undefined || before < askedAt) await over
          return
        }
        await Promise.race([listen(), over])
        if (ended) return
        // Listening now: an end from now on is heard; one that came before shows here. Bounded by the wait too: on
        // a small pool the check may queue behind the feed's own connection.
        if (await Promise.race([stillHeld(exchangeNumber), over.then(() => true)])) await over
      } catch {
        // No feed, or the check failed: the delivery claims again now and hears from the store what holds.
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
