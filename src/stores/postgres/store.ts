/**
 * A store shared by every process that reaches the same PostgreSQL database (or one embedded PGlite): one row
 * per exchange_number holds the handled states and the lease.
 * @module fpx-collect/postgres
 */
import { decide, type Decision, type Run, type TransactionalClaims, transactionalClaims } from './claims.js'
import { DEFAULT_TABLE, schemaStatements, type Statements, statements, tableName } from './sql.js'
import { postgresInbox } from './inbox.js'
import { inboxTable } from './inbox-sql.js'
import { preparedStatements } from './prepared.js'
import { postgresPaymentBook } from './payment-book.js'
import { bookTable } from './payment-book-sql.js'
import type { PaymentBook, SweepLock } from '../../contract/payment-book.js'
import type { InboxQueue } from '../../contract/inbox-queue.js'
import { postgresTimeline, timelineTable } from './timeline.js'
import { createSchema, PRUNE_BATCH, pruneInBatches, tableReady } from './upkeep.js'
import { checkPositiveInteger, DEFAULT_RETENTION_MS } from '../../contract/store-options.js'
import {
  isPGlite,
  isPool,
  oneAtATime,
  type PGliteLike,
  pgliteTransactions,
  poolTransactions,
  type PoolLike,
  type PostgresQueryable,
} from './transactions.js'
import type { Claim, ClaimRequest, LeaseRef, ReceiverStore } from '../../contract/store.js'

export type { PGliteLike, PoolConnectionLike, PoolLike, PostgresQueryable } from './transactions.js'

export interface PostgresStoreOptions<TClient = PostgresQueryable> {
  /** A pg Pool or Client, or a PGlite instance: anything with `query(text, params)` returning `{ rows }`. */
  client: TClient
  /** The table, `name` or `schema.name`; created on first use when missing. Default `fpx_collect`. */
  table?: string
  /** How long a claim holds an exchange_number, overriding the receiver's leaseMs when given. */
  leaseMs?: number
  /**
   * How long handled states are remembered after the last completion. Default 30 days: the service's
   * redelivery window is not stated, and a state forgotten too early runs its handlers again. A payment may be
   * remembered up to a lease longer (the receiver's leaseMs unless this store's is given, at most a thousandth
   * of retentionMs): that lets its completion update the row in place.
   */
  retentionMs?: number
  /**
   * Run each claim in a transaction that stays open while the handlers run and hand it to them as
   * event.transaction: their writes commit together with the completion, or roll back with a release, a
   * crash or an expired lease. Needs a pg Pool (a connection per running delivery) or a PGlite instance.
   */
  transactional?: boolean
  /**
   * Transactional mode: how long a duplicate delivery waits for the row another open transaction holds before
   * it is answered busy (409). Default 2000 ms.
   */
  lockTimeoutMs?: number
  /** Delete expired rows (one batch, in the background) after every this many completions; 0 never. Default 1000. */
  pruneEvery?: number
}

export interface PostgresStore<TTransaction = undefined> extends ReceiverStore<TTransaction> {
  /** Creates the table and its index if missing (what sql/fpx-collect.sql does). Safe to run again. */
  migrate(): Promise<void>
  /**
   * Deletes the rows past retention that no live lease holds, and says how many; timeline entries and the book's
   * closed payments past retention go too (not counted). Schedule it, or rely on pruneEvery.
   */
  prune(): Promise<number>
  /** Inbox mode's queue in `<table>_inbox`: what createReceiver({ inbox }) uses, and the operator API without a receiver. */
  openInbox(): InboxQueue
  /** Payments known from creation (`<table>_book`), and the lock of one sweeper at a time (`<table>_locks`). */
  paymentBook(): PaymentBook
  sweepLock(): SweepLock
}

/** The transaction a transactional store hands its handlers: a PoolClient for a pg Pool, a Transaction for PGlite. */
export type TransactionOf<TClient> = TClient extends { transaction(callback: (tx: infer T) => Promise<never>): Promise<unknown> }
  ? T
  : TClient extends { connect(): Promise<infer T>; connect(callback: never): void }
    ? T
    : TClient extends { connect(): Promise<infer T> }
      ? T
      : never

/**
 * Claims are one `INSERT … ON CONFLICT DO UPDATE … WHERE <lease free> RETURNING` on the database clock; when it
 * returns nothing, one SELECT tells busy (409 with Retry-After from the lease's expiry) from duplicate and stale,
 * with the same "never regress" rules as every store. Only the lease's owner can complete or release.
 *
 * Without `transactional`, a process killed after its handlers' effects but before completion leaves the state
 * unrecorded and the next delivery runs the handlers again. With it, those effects roll back with the claim.
 */
export function postgresStore<TClient extends PoolLike | PGliteLike>(
  options: PostgresStoreOptions<TClient> & { transactional: true },
): PostgresStore<TransactionOf<TClient>>
/** Claims, completions and releases each one statement on the client; see the transactional overload for the rest. */
export function postgresStore(options: PostgresStoreOptions & { transactional?: false }): PostgresStore
export function postgresStore(options: PostgresStoreOptions<PostgresQueryable> & { transactional?: boolean }): PostgresStore<unknown> {
  if (options === null || typeof options !== 'object') throw new TypeError('postgresStore needs options with a client')
  const client = options.client
  if (typeof (client as Partial<PostgresQueryable> | null)?.query !== 'function')
    throw new TypeError('client must be a pg Pool or Client or a PGlite instance (anything with query(text, params))')
  checkPositiveInteger('leaseMs', options.leaseMs)
  checkPositiveInteger('retentionMs', options.retentionMs)
  checkPositiveInteger('lockTimeoutMs', options.lockTimeoutMs)
  checkPositiveInteger('pruneEvery', options.pruneEvery, true)
  const table = tableName(options.table ?? DEFAULT_TABLE)
  const sql = statements(table)
  const retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS
  const lockTimeoutMs = options.lockTimeoutMs ?? 2000
  const pruneEvery = options.pruneEvery ?? 1000

  // Parsed and planned once per session instead of on every delivery (prepared.ts); the pool transaction's own
  // claim only where it is used (PGlite prepares every statement it is given at once).
  const claims = options.transactional === true && !isPGlite(client) && isPool(client) ? [sql.claimInTransaction] : [sql.claim]
  const prepared = preparedStatements(client, [...claims, sql.inspect, sql.complete, sql.release])
  const serial = prepared.wrap(oneAtATime(client))
  const query = async (text: string, params: unknown[] = []) => (await serial.query(text, params)).rows
  // A new row's retention starts this much after its claim, so that a completion within it finds expires_at
  // already far enough and leaves it unchanged (see the complete statement): the lease (60 s by default) at the
  // default 30 days' retention.
  const claimRetentionMs = (leaseMs: number) => retentionMs + Math.min(leaseMs, retentionMs / 1000)
  const decideWith =
    (statements: Pick<Statements, 'claim' | 'inspect'>) =>
    (run: Run, request: ClaimRequest, leaseMs: number): Promise<Decision> =>
      decide(run, statements, request, leaseMs, claimRetentionMs(leaseMs))
  const decideOn = decideWith(sql)

  let transactions: TransactionalClaims | undefined
  if (options.transactional === true) {
    const shared = { client, table: table.sql, lockTimeoutMs, decide: decideOn }
    // PGlite is one session: a second transaction waits for the first to end, so claims of an exchange_number
    // whose transaction is open are answered in this process, without touching the database.
    if (isPGlite(client)) transactions = transactionalClaims({ ...shared, begin: prepared.begin(pgliteTransactions(client)), exclusive: true })
    else if (isPool(client))
      transactions = transactionalClaims({
        ...shared,
        // A pool transaction runs the claim under a short lock_timeout, and the claim that takes the row resets it
        // in the same round trip (a statement of its own before).
        decide: decideWith({ claim: sql.claimInTransaction, inspect: sql.inspect }),
        begin: prepared.begin(poolTransactions(client, lockTimeoutMs)),
        exclusive: false,
      })
    else
      throw new TypeError(
        'transactional: true needs a pg Pool (each delivery holds a connection of its own while its handlers run) ' +
          'or a PGlite instance; a single pg Client cannot keep one transaction open per delivery',
      )
  }

  // One migration at a time per store: the claims' first use and the payment book's (read just before a claim) would
  // otherwise run the schema together and collide on the catalog more often than createSchema's retries allow.
  let migrating: Promise<void> | undefined
  const migrate = () =>
    (migrating ??= createSchema(query, schemaStatements(table)).finally(() => {
      migrating = undefined
    }))
  const ensureTable = tableReady(query, sql.exists, [table.sql], migrate)
  const timeline = postgresTimeline({ query, table: timelineTable(table), retentionMs, exists: sql.exists })
  const booked = bookTable(table)
  // The book's tables came in a later version: a store whose claims table exists may lack them.
  const book = postgresPaymentBook({ query, table: booked, ready: tableReady(query, sql.exists, booked.lookups, migrate), retentionMs })

  async function prune(limit = Number.MAX_SAFE_INTEGER): Promise<number> {
    await ensureTable()
    const total = await pruneInBatches(query, sql.prune, limit)
    await timeline.prune(limit)
    await pruneInBatches(query, book.pruneStatement, limit)
    return total
  }

  let completions = 0
  let pruning = false
  function afterCompletion(): void {
    if (pruneEvery === 0 || ++completions % pruneEvery !== 0 || pruning) return
    pruning = true
    // Never delays the answer, and a failure only means the rows wait for the next round.
    prune(PRUNE_BATCH)
      .catch(() => {})
      .finally(() => {
        pruning = false
      })
  }

  const leaseParams = (lease: LeaseRef) => [lease.exchangeNumber, lease.owner, lease.state, retentionMs]

  return {
    async claim(request: ClaimRequest): Promise<Claim<unknown>> {
      await ensureTable()
      const leaseMs = options.leaseMs ?? Math.max(1, Math.ceil(request.leaseMs))
      return transactions === undefined ? decideOn(query, request, leaseMs) : transactions.claim(request, leaseMs)
    },

    async complete(lease: LeaseRef): Promise<boolean> {
      await ensureTable()
      const done =
        transactions === undefined
          ? (await query(sql.complete, leaseParams(lease))).length > 0
          : await transactions.complete(lease, async (open) => (await open.query(sql.complete, leaseParams(lease))).length > 0)
      if (done) afterCompletion()
      return done
    },

    async release(lease: LeaseRef): Promise<boolean> {
      await ensureTable()
      if (transactions === undefined) return (await query(sql.release, leaseParams(lease))).length > 0
      return transactions.release(lease)
    },

    appendTimeline: timeline.append,
    readTimeline: timeline.read,
    migrate,
    prune: () => prune(),
    openInbox: () => postgresInbox({ query, table: inboxTable(table), ready: tableReady(query, sql.exists, [inboxTable(table).lookup], migrate) }),
    paymentBook: () => book.book,
    sweepLock: () => book.lock,
  }
}
