import type { Logger } from '../core/logger.js'
import type { SweepLockCalls } from './sweep-options.js'

/**
 * The sweep lock as one sweeper holds it: taken, renewed when a third of its lease has passed (and on a heartbeat
 * while a pass runs), and given back. Its token fences the book's bookkeeping against an older holder.
 */
export class SweepLease {
  private held: { token: number; renewedAt: number } | undefined

  constructor(
    private readonly ownerOf: () => string,
    private readonly lock: SweepLockCalls,
    private readonly lockMs: number,
    private readonly logger: Logger,
  ) {}

  get owner(): string {
    return this.ownerOf()
  }

  /** The fencing token while held, else undefined. */
  get token(): number | undefined {
    return this.held?.token
  }

  /** Whether this sweeper holds the lock now: acquired, or renewed when a third of its lease has passed. */
  async hold(): Promise<boolean> {
    const held = this.held
    if (held !== undefined) {
      if (Date.now() - held.renewedAt < this.lockMs / 3) return true
      if (await this.lock.renew(this.owner, held.token, this.lockMs)) {
        held.renewedAt = Date.now()
        return true
      }
      this.held = undefined
      this.logger.warn({ token: held.token }, 'lost the sweep lock (its lease ran out and another process took it); this process stops sweeping')
      return false
    }
    const taken = await this.lock.acquire(this.owner, this.lockMs)
    if (taken === undefined) return false
    this.held = { token: taken.token, renewedAt: Date.now() }
    return true
  }

  /**
   * Renews the lease until the returned timer is cleared, not only at each turn: lookups in flight (a slow API,
   * handlers that take their time) outlasted it, and another process then took the lock and looked up the same
   * payments meanwhile.
   */
  heartbeat(): ReturnType<typeof setInterval> {
    const timer = setInterval(() => {
      if (this.held === undefined) return
      this.hold().catch((error: unknown) => {
        this.logger.warn({ err: error }, 'the store failed to renew the sweep lock; it is tried again')
      })
    }, Math.max(1, Math.floor(this.lockMs / 4)))
    ;(timer as { unref?: () => void }).unref?.()
    return timer
  }

  /** Gives the lock back, if held; `quiet` when a failure needs no warning (the lease frees it anyway). */
  async release(quiet: boolean): Promise<void> {
    const held = this.held
    this.held = undefined
    if (held === undefined) return
    await this.lock.release(this.owner, held.token).catch((error: unknown) => {
      if (!quiet) this.logger.warn({ err: error }, 'the store failed to release the sweep lock; it frees itself when its lease runs out')
    })
  }
}
