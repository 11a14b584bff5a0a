import { randomInt } from 'node:crypto'
import { flagReader, type StoreKind } from './config.js'
import type { SoakSweep } from './sweep-protocol.js'

/*
 * The sweep soak's knobs: an environment variable (SOAK_PAYMENTS=200) or the flag (--payments=200), as the other
 * soaks take them. Horizons are seconds here, where a deployment's are minutes and days.
 */

export interface SweepSoakConfig {
  stores: StoreKind[]
  payments: number
  workers: number
  /** SIGKILLs of the process holding the sweep lock, spread over the run. */
  kills: number
  /** Payments created at once, and how many a second at most (the buyers' pace). */
  concurrency: number
  createPerSecond: number
  /** Share of payments whose redirect and callbacks are all lost (the emulator's lose_results). */
  lostShare: number
  /** Share of B2B1 payments whose 00 after approval is lost (lose_approvals). */
  lostApprovalShare: number
  /** What the buyers do, as shares: paid, refused by the bank, never paid, B2B1 approved later, B2B1 never approved. */
  mix: { approve: number; reject: number; never: number; pendingApproved: number; pendingNever: number }
  /** A B2B1 approval comes this long after the 99, at random between the two. */
  approveAfterMs: [number, number]
  sweep: SoakSweep
  /** Added to the stated bound for queueing behind the rate bound and for a loaded machine. */
  slackMs: number
  /**
   * A lookup that starts this soon after its payment became final crossed a result arriving at the same moment:
   * the re-read just before it was answered before the result was settled. Reported, not a violation; later ones are.
   */
  crossingMs: number
  leaseMs: number
  seed: number
  keep: boolean
  redisUrl: string
  databaseUrl: string
}

const DEFAULTS = { payments: 600, workers: 3, kills: 1, concurrency: 8 }

export function loadSweepConfig(argv: readonly string[] = process.argv.slice(2), env: NodeJS.ProcessEnv = process.env): SweepSoakConfig {
  const { count, share, flag, stores, done } = flagReader(argv, env)
  const config: SweepSoakConfig = {
    stores: stores(),
    payments: count('payments', DEFAULTS.payments),
    workers: count('workers', DEFAULTS.workers, 2),
    kills: count('kills', DEFAULTS.kills, 0),
    concurrency: count('concurrency', DEFAULTS.concurrency),
    createPerSecond: count('create-per-second', 5),
    lostShare: share('lost-share', 0.3),
    lostApprovalShare: share('lost-approval-share', 0.5),
    mix: {
      approve: share('approve-share', 0.45),
      reject: share('reject-share', 0.15),
      never: share('never-share', 0.1),
      pendingApproved: share('pending-approved-share', 0.2),
      pendingNever: share('pending-never-share', 0.1),
    },
    approveAfterMs: [count('approve-after-min-ms', 500, 0), count('approve-after-max-ms', 4000, 0)],
    sweep: {
      firstLookupAfterMs: count('first-lookup-after-ms', 3000),
      backoff: { baseMs: count('backoff-base-ms', 500), maxMs: count('backoff-max-ms', 2000) },
      abandonAfterMs: count('abandon-after-ms', 10_000),
      pendingAbandonAfterMs: count('pending-abandon-after-ms', 15_000),
      maxLookupsPerMinute: count('max-lookups-per-minute', 1200),
      everyMs: count('every-ms', 250),
      lockMs: count('lock-ms', 2000),
    },
    slackMs: count('slack-ms', 5000, 0),
    crossingMs: count('crossing-ms', 500, 0),
    leaseMs: count('lease-ms', 10_000),
    seed: count('seed', randomInt(2 ** 31), 0),
    keep: flag('keep'),
    redisUrl: env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    databaseUrl: env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  }
  done()
  const total = Object.values(config.mix).reduce((sum, value) => sum + value, 0)
  if (Math.abs(total - 1) > 1e-9) throw new Error(`the shares of what buyers do must add up to 1, not ${total}`)
  if (config.approveAfterMs[1] < config.approveAfterMs[0]) throw new Error('approve-after-max-ms must be at least approve-after-min-ms')
  return config
}
