/**
 * A store shared by every process that reaches the same PostgreSQL database (or one embedded PGlite): one row
 * per exchange_number holds the handled states and the lease.
 * @module fpx-collect/postgres
 */
import { checkPositiveInteger, DEFAULT_RETENTION_MS } from '../../contract/store-options.js'
import type { InboxQueue } from '../../contract/inbox-queue.js'
import { once } from '../../contract/once.js'
import type { PaymentBook, SweepLock } from '../../contract/payment-book.js'
import type { Claim, ClaimRequest, Completion, LeaseRef, OrderRef, Release, ReceiverStore } from '../../contract/store.js'
import type { SeenResult } from '../../contract/payment-book.js'
import { failureText } from '../../contract/book-query.js'
import { blockingStates, claimOf, type ClaimRow, claimStatements } from './claims.js'
import { postgresLeaseEnds } from './lease-ends.js'
import { codeOf, isPGlite, isPool, type PGliteLike, type PoolLike, type PostgresQueryable, type Query, queryOn } from './client.js'
import { postgresInbox } from './inbox.js'
import { inboxTable } from './inbox-sql.js'
import { postgresPaymentBook } from './payment-book.js'
import { bookTable } from './payment-book-schema.js'
import { DEFAULT_TABLE, READY, readyParams, schemaStatements, tableName } from './sql.js'
import { postgresTimeline, timelineTable } from './timeline.js'
import { transactionalClaims } from './transactions.js'

export type { PGliteLike, PoolConnectionLike, PoolLike, PostgresQueryable } from './client.js'

export interface PostgresStoreOptions<TClient = PostgresQueryable> {
  /** A pg Pool or Client, or a PGlite instance: anything with `query(text, params)` returning `{ rows }`. */
  client: TClient
  /** The table, `name` or `schema.name`; created on first use when missing. Default `fpx_collect`. */
  table?: string
  /**
   * How long a claim holds an exchange_number, overriding the receiver's leaseMs when given. A receiver on this
   * store times its deliveries (the confirmation's half, store calls, waits) by the shorter of the two.
   */
  leaseMs?: number
  /**
   * How long handled states (and the orders they paid) are remembered after the last completion. Default 30 days:
   * the service's redelivery window is not stated, and a state forgotten too early runs its handlers again.
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
  /**
   * Creates the tables and indexes if missing, and adds what a later version needs to tables an earlier one made
   * (what sql/fpx-collect.sql does). Safe to run again.
   */
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

// Codes a concurrent CREATE ... IF NOT EXISTS can fail with; the next attempt finds the object there.
const CREATE_RACES = new Set(['23505', '42P07', '42710'])
/** Rows deleted per statement: a large backlog is deleted in steps that each hold their locks briefly. */
const PRUNE_BATCH = 1000

/**
 * A claim is one statement (claims.ts) that also answers which other payment paid the order and what the payment
 * book holds of it; a completion is one statement that also marks the order paid and settles the book; a release is
 * one. With `transactional`, the claim runs after a BEGIN and the completion is followed by its COMMIT (a release is
 * the ROLLBACK); without it, a process killed after its handlers' effects but before completion leaves the state
 * unrecorded, and the next delivery runs the handlers again.
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
  const retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS
  const pruneEvery = options.pruneEvery ?? 1000
  const sql = claimStatements(table.sql, bookTable(table))
  const query = queryOn(client)

  let transactions: ReturnType<typeof transactionalClaims> | undefined
  if (options.transactional === true) {
    if (!isPGlite(client) && !isPool(client))
      throw new TypeError(
        'transactional: true needs a pg Pool (each delivery holds a connection of its own while its handlers run) ' +
          'or a PGlite instance; a single pg Client cannot keep one transaction open per delivery',
      )
    transactions = transactionalClaims(client, options.lockTimeoutMs ?? 2000)
  }
  const claimSql = transactions !== undefined && !isPGlite(client) ? sql.claimInTransaction : sql.claim
  // A transactional claim already waits for the row's lock (lockTimeoutMs).
  const waiter = transactions === undefined ? postgresLeaseEnds(client, table.sql, query, sql.leaseHeld) : undefined

  // Asked first, so that an app whose role may not create tables works with tables made from the SQL file.
  const schemaComplete = async () => ((await query(READY, readyParams(table)))[0] as { ready: boolean | null } | undefined)?.ready === true
  // One migration at a time per store: concurrent first uses would otherwise run the schema together.
  let migrating: Promise<void> | undefined
  const migrate = () =>
    (migrating ??= createSchema(query, schemaStatements(table), schemaComplete).finally(() => {
      migrating = undefined
    }))
  const ready = once(migrate)
  const timeline = postgresTimeline({ query, table: timelineTable(table), retentionMs, ready })
  const book = postgresPaymentBook({ query, table: bookTable(table), ready, retentionMs })

  async function prune(limit = Number.MAX_SAFE_INTEGER): Promise<number> {
    await ready()
    const total = await pruneInBatches(query, sql.prune, limit)
    await pruneInBatches(query, timeline.pruneStatement, limit)
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

  return {
    ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
    async claim(request: ClaimRequest): Promise<Claim<unknown>> {
      await ready()
      const leaseMs = options.leaseMs ?? Math.max(1, Math.ceil(request.leaseMs))
      const { exchangeNumber, owner, state } = request
      const params = [exchangeNumber, owner, state, leaseMs, retentionMs, blockingStates(state), request.orderNumber ?? null, request.uid ?? null]
      const rowOf = async (run: Query) => (await run(claimSql, params))[0] as ClaimRow | undefined
      if (transactions !== undefined) return transactions.claim(request, leaseMs, async (run) => claimOf(await rowOf(run), request))
      const sentAt = performance.now()
      const row = await rowOf(query)
      const answer = claimOf(row, request)
      if (answer.outcome === 'busy') waiter?.foundBusy(exchangeNumber, sentAt, row?.lease_owner ?? undefined)
      return answer
    },

    async paidBy(payment: LeaseRef & OrderRef): Promise<string | null> {
      if (payment.orderNumber === undefined) return null
      await ready()
      const run = transactions?.heldQuery(payment) ?? query
      const [row] = (await run(sql.paidBy, [payment.exchangeNumber, payment.orderNumber, payment.uid ?? null])) as { paid_by: string }[]
      return row?.paid_by ?? null
    },

    async complete(completion: Completion): Promise<boolean> {
      await ready()
      const { exchangeNumber, owner, state } = completion
      const params = [exchangeNumber, owner, state, retentionMs, completion.orderNumber ?? null, completion.uid ?? null, Date.now(), ...seenParams(completion.seen)]
      const complete = async (run: Query) => ((await run(sql.complete, params))[0] as { done: number } | undefined)?.done === 1
      const done = transactions === undefined ? await complete(query) : await transactions.complete(completion, complete)
      if (done) afterCompletion()
      return done
    },

    async release(lease: Release): Promise<boolean> {
      await ready()
      const { exchangeNumber, owner, state, failure } = lease
      const order = [lease.orderNumber ?? null, lease.uid ?? null]
      if (transactions !== undefined) {
        // The release is the rollback: the failure is counted after it, or the rollback would take it back.
        const released = await transactions.release(lease)
        if (released && failure !== undefined)
          await query(book.noteFailureStatement, [...order, state, exchangeNumber, Date.now(), ...seenParams(failure.seen), failureText(failure.message)])
        return released
      }
      if (failure === undefined) return (await query(sql.release, [exchangeNumber, owner, state, retentionMs])).length > 0
      const params = [exchangeNumber, owner, state, retentionMs, ...order, Date.now(), ...seenParams(failure.seen), failureText(failure.message)]
      return (await query(sql.releaseFailed, params)).length > 0
    },

    ...(waiter === undefined ? {} : { awaitLeaseEnd: waiter.awaitLeaseEnd }),
    appendTimeline: timeline.append,
    readTimeline: timeline.read,
    migrate,
    prune: () => prune(),
    openInbox: () => postgresInbox({ query, table: inboxTable(table), ready }),
    paymentBook: () => book.book,
    sweepLock: () => book.lock,
  }
}

/** A result seen (SeenResult) as the statements take it: whether there is one, its uid, amount, buyer e-mail and name. */
function seenParams(seen: SeenResult | undefined): unknown[] {
  if (seen === undefined) return [false, null, null, null, null]
  return [true, seen.uid, seen.amountSen, seen.buyerEmail, seen.buyerName]
}

/**
 * Runs schema statements (each `IF NOT EXISTS`) until `schemaComplete()` says the schema is all there, trying again when
 * a concurrent migration raced it. A statement takes a lock on its table even when what it makes exists, so it would
 * wait behind every open transaction there (a transactional claim's, for as long as its handlers run), and every
 * claim would queue behind it: once another process has completed the schema, none is run.
 */
async function createSchema(query: Query, schema: readonly string[], schemaComplete: () => Promise<boolean>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      for (const statement of schema) {
        if (await schemaComplete()) return
        await query(statement)
      }
      return
    } catch (error) {
      if (attempt >= 5 || !CREATE_RACES.has(codeOf(error) as string)) throw error
      // Another process is creating the same schema, a statement ahead: retrying at once would meet it at its next
      // statement again. A pause of a random length lets it finish first.
      await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 200))
    }
  }
}

/**
 * Runs `statement` (taking the most rows to delete as $1 and returning `deleted`) until a batch deletes fewer than
 * it may, or `limit` rows are gone; says how many.
 */
async function pruneInBatches(query: Query, statement: string, limit: number): Promise<number> {
  let total = 0
  for (;;) {
    const batch = Math.min(PRUNE_BATCH, limit - total)
    const [row] = (await query(statement, [batch])) as { deleted: number }[]
    const deleted = Number(row?.deleted ?? 0)
    total += deleted
    if (deleted < batch || total >= limit) return total
  }
}
