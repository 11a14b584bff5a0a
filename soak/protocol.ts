import type { StoreKind } from './config.js'

/** What the driver and its workers agree on. */

/** A fixed test token: the soak signs with it and the workers verify with it. Not a secret. */
export const TOKEN = 'soak'.repeat(16)

/** Which logical delivery and which attempt of it a request is, for the ledger (the body stays as the service signs it). */
export const DELIVERY_HEADER = 'x-soak-delivery'
export const ATTEMPT_HEADER = 'x-soak-attempt'

export const CALLBACK_PATH = '/fpx/callback'
export const REDIRECT_PATH = '/fpx/redirect'

/** Passed to each worker as JSON in SOAK_WORKER: it may hold connection URLs, so it is never printed. */
export interface WorkerSettings {
  store: StoreKind
  ledgerTable: string
  /** The PostgreSQL store's table. */
  storeTable: string
  redisPrefix: string
  failRate: number
  leaseMs: number
  effectDelayMs: number
  poolSize: number
  redisUrl: string
  databaseUrl: string
  /**
   * Inbox mode: handlers fail from outageStartAt to outageEndAt (epoch ms; far ahead until the driver sends
   * { type: 'recover', at }), and back off up to backoffMaxMs.
   */
  inbox?: { outageStartAt: number; outageEndAt: number; backoffMaxMs: number }
  /** The store will be restarted: Redis commands wait for the reconnection (and in-flight ones are resent). */
  storeRestarts: boolean
}

export type WorkerMessage = { type: 'ready'; port: number } | { type: 'failed'; message: string }

export const LEDGER_COLUMNS = `(
  id bigserial PRIMARY KEY,
  exchange_number text NOT NULL,
  state text NOT NULL,
  kind text NOT NULL,
  pid integer NOT NULL,
  delivery integer NOT NULL,
  attempt integer NOT NULL,
  at timestamptz NOT NULL DEFAULT clock_timestamp()
)`

export const RANK: Record<string, number> = { pending: 0, failed: 1, succeeded: 2 }
