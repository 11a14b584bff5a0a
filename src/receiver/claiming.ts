/*
 * The claim step of a delivery's dispatch (dispatch.ts): the payment's lease, taken at once when it is free, waited
 * for while a delivery of it runs here (or the store says when its lease settles), asked again a few times while
 * another process holds it, and answered when there is nothing to run.
 */
import type { LocalClaims } from '../contract/local-claims.js'
import type { Claim, ReceiverStore } from '../contract/store.js'
import type { Logger } from '../core/logger.js'
import type { ReceiverResponse } from './events.js'
import { type InFlight, type Lease, type Step, unavailable } from './lease.js'
import { acknowledged, busy } from './responses.js'

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref())
}

/** Waits for `settled` or `ms`, whichever comes first, without keeping the process alive. */
async function waitFor(settled: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms)
    timer.unref()
  })
  await Promise.race([settled, timeout])
  clearTimeout(timer)
}

/**
 * How long a claim answered busy may still wait for the lease (`waitUntil`: while its holder runs here or the store
 * will say when it settles) and ask again (`askUntil`: while another process holds it), and the next pause.
 */
interface BusyRetry {
  readonly waitUntil: number
  readonly askUntil: number
  pauseMs: number
}

// The first pause before asking a store again about a lease another process holds; each later one doubles.
const FIRST_PAUSE_MS = 10

export class Claimer<TTransaction> {
  // Deliveries whose handlers run now, by exchange_number: a shared store cannot tell that the lease holder is in
  // this very process, but the receiver can, and then waits instead of answering 409.
  private readonly inFlight = new Map<string, InFlight>()

  constructor(
    private readonly store: ReceiverStore<TTransaction>,
    private readonly logger: Logger,
    private readonly leaseMs: number,
    private readonly busyWaitMs: number,
  ) {}

  /** Marks the lease's handlers as running here, for a store that cannot tell its waiters itself. */
  running(lease: Lease<TTransaction>): void {
    this.inFlight.set(lease.exchangeNumber, (lease.running = {}))
  }

  /** Tells this process's waiters (if `running` marked any) that the lease's handlers are done. */
  done(lease: Lease<TTransaction>): void {
    if (lease.running === undefined) return
    this.inFlight.delete(lease.exchangeNumber)
    lease.running.wake?.()
  }

  /**
   * Claims the payment: undefined once the lease is held, or the answer when there is nothing to run (a duplicate,
   * a stale state, a payment busy elsewhere for longer than busyWaitMs, the store failing). `retry` is made at the
   * first busy answer (most claims never see one) and carried through the claims asked again after it.
   */
  claim(lease: Lease<TTransaction>, inProcess: LocalClaims | undefined, retry?: BusyRetry): Step<ReceiverResponse | undefined> {
    let claim: Step<Claim<TTransaction>>
    try {
      claim = inProcess !== undefined ? (inProcess.claim(lease) as Claim<TTransaction>) : this.store.claim(lease)
    } catch (error) {
      return this.claimFailed(error, lease)
    }
    if (claim instanceof Promise)
      return claim.then(
        (answered) => this.claimed(answered, lease, inProcess, retry),
        (error: unknown) => this.claimFailed(error, lease),
      )
    return this.claimed(claim, lease, inProcess, retry)
  }

  private claimFailed(error: unknown, lease: Lease<TTransaction>): ReceiverResponse {
    this.logger.error({ ...lease.log, err: error }, 'the store failed to claim the payment')
    return unavailable(lease.verified, '5')
  }

  private claimed(
    claim: Claim<TTransaction>,
    lease: Lease<TTransaction>,
    inProcess: LocalClaims | undefined,
    retry: BusyRetry | undefined,
  ): Step<ReceiverResponse | undefined> {
    switch (claim.outcome) {
      case 'claimed':
        lease.previousState = claim.previousState
        lease.transaction = claim.transaction
        return undefined
      case 'duplicate':
        return acknowledged('duplicate', lease.verified)
      case 'stale':
        this.logger.info({ ...lease.log, currentState: claim.currentState }, 'ignored a payment result older than the one already handled')
        return acknowledged('stale', lease.verified)
    }
    // Busy. A duplicate is never acknowledged before the first delivery's handlers succeeded: wait for them here
    // when they run in this process, otherwise let the sender retry.
    const now = Date.now()
    const again = retry ?? { waitUntil: now + this.leaseMs, askUntil: now + this.busyWaitMs, pauseMs: FIRST_PAUSE_MS }
    const remaining = again.waitUntil - now
    // A store that tells when its lease settles (the memory store does) needs no waiting of ours.
    let settled = claim.settled
    if (settled === undefined) {
      const local = this.inFlight.get(lease.exchangeNumber)
      if (local !== undefined) settled = local.waiting ??= new Promise<void>((resolve) => (local.wake = resolve))
    }
    if (settled !== undefined && remaining > 0) return waitFor(settled, remaining).then(() => this.claim(lease, inProcess, again))
    // Held by another process: nothing here can tell when it is done, so ask again a few times, backing off.
    const left = again.askUntil - Date.now()
    if (left <= 0) return busy(claim.retryAfterMs, lease.verified)
    const pauseMs = Math.min(again.pauseMs, left)
    again.pauseMs *= 2
    return sleep(pauseMs).then(() => this.claim(lease, inProcess, again))
  }
}
