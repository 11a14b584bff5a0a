/*
 * The sweeper: payments the book holds open (no result yet, or a B2B1 99) are found through the service's API once
 * they are old enough, and what the API shows is handed to the receiver through the same classification and
 * deduplication as a delivery (handleTrusted). Each pass first reads the transactions list's recent successes
 * (sweep-listing.ts): a paid payment whose results were lost is found there whatever else is open. Then the payments
 * due are looked up one by one (sweep-results.ts), backing off, and closed `abandoned` after their horizon. Every
 * API request takes its turn under one rate bound. One sweeper at a time across the processes sharing a store:
 * the store's SweepLock, held while sweeping and renewed, its fencing token on every write of bookkeeping.
 */
import { randomId } from '../core/crypto.js'
import type { Logger } from '../core/logger.js'
import type { BookedPayment } from '../contract/payment-book.js'
import type { TimelineEntry } from '../contract/timeline.js'
import type { LookupOutcome } from './book-metrics.js'
import { described } from './confirm.js'
import { answeredWithin, storeWithinMs } from './dispatch.js'
import type { ReceiverResponse } from './events.js'
import { SweepLease } from './sweep-lease.js'
import { type ListingClient, listSuccesses, successesOf } from './sweep-listing.js'
import { type Counts, type LookupClient, nothing, type SweepBook, type SweepLockCalls, type SweepReport, type SweepSettings } from './sweep-options.js'
import { SweepResults } from './sweep-results.js'

export type { LookupClient, SweepReport } from './sweep-options.js'

export interface SweeperParts {
  readonly book: SweepBook
  readonly lock: SweepLockCalls
  /** The API client for a credential set (by its API UID). */
  readonly client: (uid: string) => LookupClient
  /**
   * The API UIDs whose transactions are listed at each pass, beside those of the payments due: the receiver's
   * configured credential sets.
   */
  readonly uids: readonly string[]
  /** receiver.handleTrusted, the record taken as the given uid's (the API client asked was that credential set's). */
  readonly handOver: (fields: Record<string, string>, uid: string) => Promise<ReceiverResponse>
  readonly record: (entries: readonly TimelineEntry[]) => void
  readonly counted: (outcome: LookupOutcome) => void
  readonly logger: Logger
  readonly settings: SweepSettings
}

type Turn = number | 'skip' | 'lost'

/**
 * The transactions list is read at most once a minute, and at most half a minute's rate bound of pages each time:
 * the lookups keep at least half of the requests however busy the list.
 */
const LIST_EVERY_MS = 60_000
/**
 * An API request of the sweeper is given up after this many of the lock's leases: the default client's own
 * time-outs and retries (3 × 15 s and their waits) end well within two default leases, and the pass's heartbeat
 * keeps the lock meanwhile.
 */
const API_WITHIN_LOCKS = 2

/**
 * The book, the lock and the API clients with every call answered within its bound, or rejected. One call that
 * never settled (a paused store, a client with no time-out) kept its pass running for ever, and with it `running`
 * and the lock its heartbeat renews: no later pass in any process sharing the store, so a payment whose results
 * were lost was never found. Store calls get what a delivery's get (half the lock's lease, at most 10 s).
 */
function bounded(parts: SweeperParts): SweeperParts {
  const { book, lock, client, settings } = parts
  const store = storeWithinMs(settings.lockMs)
  const api = API_WITHIN_LOCKS * settings.lockMs
  return {
    ...parts,
    book: {
      listOpen: (query) => answeredWithin(book.listOpen(query), store),
      summary: () => answeredWithin(book.summary(), store),
      find: (orderNumber, options) => answeredWithin(book.find(orderNumber, options), store),
      noteLookup: (payment, note, token) => answeredWithin(book.noteLookup(payment, note, token), store),
      settle: (payment, state, exchangeNumber) => answeredWithin(book.settle(payment, state, exchangeNumber), store),
    },
    lock: {
      acquire: (owner, ttlMs) => answeredWithin(lock.acquire(owner, ttlMs), store),
      renew: (owner, token, ttlMs) => answeredWithin(lock.renew(owner, token, ttlMs), store),
      release: (owner, token) => answeredWithin(lock.release(owner, token), store),
      notePass: (note) => answeredWithin(lock.notePass(note), store),
    },
    client: (uid) => {
      const found = client(uid)
      const listing = found.transactions?.bind(found)
      return {
        searchTransactions: (reference, value) => answeredWithin(found.searchTransactions(reference, value), api, 'the status API'),
        // Absent stays absent: the sweeper then looks payments up one by one, and says so once.
        ...(listing === undefined ? {} : { transactions: (query: Parameters<typeof listing>[0]) => answeredWithin(listing(query), api, 'the transactions list') }),
      }
    },
  }
}

export class Sweeper {
  private readonly lease: SweepLease
  private readonly results: SweepResults
  private running: Promise<SweepReport> | undefined
  private timer: ReturnType<typeof setTimeout> | undefined
  private stopped = false
  private lastRequestAt = Number.NEGATIVE_INFINITY
  private listedAt = Number.NEGATIVE_INFINITY
  /** When each credential set's transactions were last listed. */
  private readonly uidListedAt = new Map<string, number>()
  private gate: Promise<void> = Promise.resolve()
  /** Ends the waits for a turn at once when stop() comes. */
  private readonly wakers = new Set<() => void>()
  private id: string | undefined
  private toldNoList = false

  /** This sweeper's name on the lock and in its timeline entries: drawn when first needed, never at construction. */
  get owner(): string {
    return (this.id ??= `sweeper:${randomId()}`)
  }

  private readonly parts: SweeperParts

  constructor(given: SweeperParts) {
    const parts = bounded(given)
    this.parts = parts
    this.lease = new SweepLease(() => this.owner, parts.lock, parts.settings.lockMs, parts.logger)
    this.results = new SweepResults(parts, () => this.owner)
  }

  /** Sweeps every `everyMs` in this process, on an unref'd timer, until stop(). */
  start(): void {
    if (this.stopped || this.timer !== undefined) return
    const tick = () => {
      // A pass running when stop() came ends here: re-arming would take the lock again after close(), for good.
      if (this.stopped) return
      this.timer = setTimeout(() => {
        void this.sweep(false).then(tick, tick)
      }, this.parts.settings.everyMs)
      ;(this.timer as { unref?: () => void }).unref?.()
    }
    tick()
  }

  /**
   * One pass now (or the one running): takes or renews the lock, lists and looks up what is due, and keeps the lock
   * when sweeping in-process (so the rate bound holds in one place), else gives it back. Never rejects.
   */
  sweep(keepAlive = true): Promise<SweepReport> {
    this.running ??= this.pass(keepAlive)
      .catch((error: unknown) => {
        this.parts.logger.error({ err: error }, 'the sweep failed; it runs again on the next pass')
        return { ...nothing(true), failures: 1, failing: [{ orderNumber: null, message: `the sweep failed (${described(error)})` }] }
      })
      .finally(() => {
        this.running = undefined
      })
    return this.running
  }

  /** Stops the timer, waits for a pass in progress (a lock's lease at most) and gives the lock back. */
  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    for (const wake of this.wakers) wake()
    // A pass handing results to handlers that never return waited twice the receiver's lease for each, one after
    // the other: a merchant's shutdown could take many minutes. Past a lock's lease the lock would have lapsed were
    // this process gone; the pass goes on by itself, its bookkeeping fenced by its token once the lock is given back.
    const running = this.running
    if (running !== undefined)
      await answeredWithin(running, this.parts.settings.lockMs, 'the sweep pass under way').catch((error: unknown) => {
        this.parts.logger.warn({ err: error }, 'stopped without waiting longer for the sweep pass under way; the payments it had not settled are looked up again on a later pass')
      })
    await this.lease.release(false)
  }

  private async pass(keepAlive: boolean): Promise<SweepReport> {
    if (!(await this.lease.hold())) return nothing(false)
    const report = nothing(true)
    const heartbeat = this.lease.heartbeat()
    try {
      await this.work(keepAlive, report)
    } catch (error) {
      this.results.failed(report, null, `the pass stopped (${described(error)})`)
      this.parts.logger.error({ err: error }, 'the sweep pass stopped; it runs again on the next pass')
    } finally {
      clearInterval(heartbeat)
    }
    await this.notePass(report)
    // An in-process sweeper keeps the lock between passes; a pass run on the operator's schedule gives it back.
    if (this.stopped || this.timer === undefined) await this.lease.release(true)
    return report
  }

  private async work(keepAlive: boolean, report: Counts): Promise<void> {
    const { book, settings } = this.parts
    const now = Date.now()
    this.results.prune(now)
    const due = await book.listOpen({ dueBy: new Date(now), limit: settings.batch })
    const uids = [...new Set([...this.parts.uids, ...due.map((payment) => payment.uid)])]
    const listDue = () => Date.now() - this.listedAt >= LIST_EVERY_MS
    if (listDue()) await this.listing(uids, keepAlive, report)
    // Lookups in flight: each waits its turn to start (the rate bound), then hands over and notes in parallel.
    const running = new Set<Promise<void>>()
    try {
      for (const payment of due) {
        // Oldest first: once one is too young for its first lookup, so is every one after it.
        if (payment.lookups === 0 && payment.createdAt.getTime() > now - settings.firstLookupAfterMs) break
        // Stopping, or the lock was lost in an earlier turn: stop here.
        if (this.stopped || this.lease.token === undefined) break
        // A long pass (hundreds due at 30 a minute) reads the list again as it goes, so a lost success waits no longer.
        if (listDue()) await this.listing(uids, keepAlive, report)
        while (running.size >= settings.concurrency) await Promise.race(running)
        if (this.lease.token === undefined) break
        report.due++
        // Handed over from the list (this pass or lately): closed, or waiting for its next lookup.
        if (this.results.waiting(payment, Date.now())) {
          report.skipped++
          continue
        }
        const task = this.lookUp(payment, now, keepAlive, report)
          .catch((error: unknown) => {
            this.results.failed(report, payment.orderNumber, `the lookup failed (${described(error)})`)
            this.parts.logger.error({ orderNumber: payment.orderNumber, err: error }, 'the sweeper failed to look up an open payment; it is tried again on a later pass')
          })
          .finally(() => running.delete(task))
        running.add(task)
      }
    } finally {
      await Promise.all(running)
    }
  }

  /**
   * A lookup in its turn, with the payment read again just before: one a result settled meanwhile is skipped, and so
   * is one whose next lookup moved past the pass's start (the list's success was handed over meanwhile).
   */
  private async lookUp(payment: BookedPayment, dueBy: number, keepAlive: boolean, report: Counts): Promise<void> {
    let current: BookedPayment | undefined
    const turn = await this.turn(keepAlive, async () => {
      current = await this.parts.book.find(payment.orderNumber, { uid: payment.uid })
      return current?.status === 'open' && (current.nextLookupAt?.getTime() ?? dueBy) <= dueBy
    })
    if (turn === 'skip') report.skipped++
    else if (turn !== 'lost' && current !== undefined) await this.results.lookUp(current, turn, report)
  }

  /**
   * The transactions list's successes since the oldest open payment, read with each credential set's client, each
   * page in its turn; those of open payments old enough for a lookup are handed over.
   */
  private async listing(uids: readonly string[], keepAlive: boolean, report: Counts): Promise<void> {
    const { book, settings, logger } = this.parts
    const { oldestCreatedAt: since } = await book.summary()
    // Nothing open is old enough: no success listed now can be a lost one's (asked again at the next pass).
    if (since === null || since.getTime() > Date.now() - settings.firstLookupAfterMs) return
    this.listedAt = Date.now()
    // The pages of one listing, whatever the number of credential sets: those listed longest ago go first.
    const maxPages = Math.max(1, Math.floor(settings.maxLookupsPerMinute / 2))
    let pages = 0
    const order = [...uids].sort((a, b) => (this.uidListedAt.get(a) ?? 0) - (this.uidListedAt.get(b) ?? 0))
    for (const uid of order) {
      if (this.stopped || this.lease.token === undefined || pages >= maxPages) return
      this.uidListedAt.set(uid, Date.now())
      let token = 0
      try {
        const client = this.parts.client(uid)
        if (typeof client.transactions !== 'function') {
          if (!this.toldNoList) logger.info({}, 'the API client has no transactions list (client.transactions): open payments are found by lookups alone')
          this.toldNoList = true
          continue
        }
        await listSuccesses(client as ListingClient, since, {
          turn: async () => {
            const turn = pages < maxPages ? await this.turn(keepAlive) : 'lost'
            if (typeof turn !== 'number') return false
            token = turn
            pages++
            report.listed++
            return true
          },
          page: (records) => this.foundIn(records, uid, token, report),
        })
      } catch (error) {
        const why = `the transactions list could not be read (${described(error)})`
        this.results.failed(report, null, why)
        logger.warn({ uid, err: described(error) }, `${why}; open payments are still looked up one by one, and the list is read again on the next pass`)
      }
    }
  }

  /** A page's successes that are open payments of `uid`, old enough for a lookup and not handed over lately. */
  private async foundIn(records: readonly Record<string, unknown>[], uid: string, token: number, report: Counts): Promise<void> {
    const youngest = Date.now() - this.parts.settings.firstLookupAfterMs
    for (const [orderNumber, successes] of successesOf(records, uid)) {
      try {
        const payment = await this.parts.book.find(orderNumber, { uid })
        if (payment === undefined || payment.status !== 'open' || payment.createdAt.getTime() > youngest || this.results.waiting(payment, Date.now())) continue
        await this.results.foundInList(payment, successes, token, report)
      } catch (error) {
        this.results.failed(report, orderNumber, `handing over what the transactions list shows failed (${described(error)})`)
        this.parts.logger.error({ orderNumber, err: error }, 'the sweeper failed to hand over a success the transactions list shows; it is tried again on a later pass')
      }
    }
  }

  /**
   * An API request's turn to start: at least 60 s / maxLookupsPerMinute after the previous one started, so any
   * minute holds at most that many, with the lock checked and `stillWanted` asked (a lookup reads its payment
   * again: a result may have come in since the list was read). Turns are taken one at a time, so that check and the
   * start stay together. Resolves to the lock's token, 'skip' when no longer wanted, 'lost' when the lock is.
   */
  private turn(keepAlive: boolean, stillWanted?: () => Promise<boolean>): Promise<Turn> {
    const mine = this.gate.then(async (): Promise<Turn> => {
      const wait = this.lastRequestAt + 60_000 / this.parts.settings.maxLookupsPerMinute - Date.now()
      if (wait > 0 && !this.stopped) await this.pause(Math.ceil(wait), keepAlive)
      // Still the one sweeper (renewing the lease when a third of it has passed), or no more requests. Stopped: the
      // turns queued behind the rate bound are not taken, or close() would wait for each (minutes at a low rate).
      if (this.stopped || this.lease.token === undefined || !(await this.lease.hold())) return 'lost'
      if (stillWanted !== undefined && !(await stillWanted())) return 'skip'
      this.lastRequestAt = Date.now()
      return this.lease.token ?? 'lost'
    })
    this.gate = mine.then(
      () => undefined,
      () => undefined,
    )
    return mine
  }

  private pause(ms: number, keepAlive: boolean): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer)
        this.wakers.delete(wake)
        resolve()
      }
      const timer = setTimeout(wake, ms)
      if (!keepAlive) (timer as { unref?: () => void }).unref?.()
      this.wakers.add(wake)
    })
  }

  /**
   * What the pass did, on the lock for the operator's view: its API requests (list pages
   * and lookups), the lost results it found, the payments it closed (final or abandoned), and its failing orders.
   */
  private async notePass(report: SweepReport): Promise<void> {
    const { lock, settings, logger } = this.parts
    const at = new Date()
    const inProcess = !this.stopped && this.timer !== undefined
    try {
      await lock.notePass({
        at,
        holder: this.owner,
        nextAt: inProcess ? new Date(at.getTime() + settings.everyMs) : null,
        lookups: report.lookups + report.listed,
        found: report.processed,
        closed: report.closed + report.abandoned,
        failures: report.failing.flatMap(({ orderNumber, message }) => (orderNumber === null ? [] : [{ orderNumber, message }])),
      })
    } catch (error) {
      logger.warn({ err: error }, 'the store failed to keep the note of the sweep pass; the pass itself is done')
    }
  }
}
