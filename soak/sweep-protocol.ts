import type { StoreKind } from './config.js'

/** What the sweep soak's driver and its workers agree on (soak/sweep.ts, soak/sweep-worker.ts). */

export const SWEEP_CALLBACK_PATH = '/fpx/callback'
export const SWEEP_REDIRECT_PATH = '/fpx/redirect'

/** The sweeper's settings in the soak: minutes become seconds, so a run shows every horizon. */
export interface SoakSweep {
  firstLookupAfterMs: number
  backoff: { baseMs: number; maxMs: number }
  abandonAfterMs: number
  pendingAbandonAfterMs: number
  maxLookupsPerMinute: number
  everyMs: number
  lockMs: number
}

/** Passed to each worker as JSON in SOAK_WORKER: it holds connection URLs and the merchant's test credentials. */
export interface SweepWorkerSettings {
  store: StoreKind
  redisUrl: string
  databaseUrl: string
  redisPrefix: string
  storeTable: string
  /** Handler runs: one row each. */
  ledgerTable: string
  /**
   * Status API searches, one row each with its start and end: the sweeper's (by order_number) and the receiver's
   * confirmations (by exchange_number).
   */
  lookupsTable: string
  /** Final results answered to a delivery (after the book was settled): when each payment became final. */
  finalsTable: string
  emulatorBaseUrl: string
  merchant: { uid: string; authToken: string; checksumToken: string }
  sweep: SoakSweep
  leaseMs: number
}

export const SWEEP_TABLES = {
  ledger: `(
  id bigserial PRIMARY KEY,
  order_number text NOT NULL,
  exchange_number text NOT NULL,
  state text NOT NULL,
  kind text NOT NULL,
  pid integer NOT NULL,
  at timestamptz NOT NULL DEFAULT clock_timestamp()
)`,
  lookups: `(
  id bigserial PRIMARY KEY,
  reference text NOT NULL,
  value text NOT NULL,
  pid integer NOT NULL,
  started_at timestamptz NOT NULL,
  ended_at timestamptz
)`,
  finals: `(
  order_number text NOT NULL,
  state text NOT NULL,
  pid integer NOT NULL,
  at timestamptz NOT NULL DEFAULT clock_timestamp()
)`,
}
