/*
 * Transactions held open from a claim to its completion, for the transactional PostgreSQL store: on a connection
 * of its own taken from a pg Pool, or on a PGlite instance (one session, so one such transaction at a time).
 */

/** Anything with pg's `query(text, params)` returning `{ rows }`: a pg Pool or Client, PGlite, a transaction. */
export interface PostgresQueryable {
  query(text: string, params?: unknown[]): Promise<{ rows: unknown[] }>
}

/** A connection checked out of a pool (pg's PoolClient). */
export interface PoolConnectionLike extends PostgresQueryable {
  release(error?: Error | boolean): void
}

/** A pg Pool: each transactional claim takes a connection of its own for as long as its handlers run. */
export interface PoolLike extends PostgresQueryable {
  connect(): Promise<PoolConnectionLike>
  readonly totalCount: number
}

/** A PGlite instance (or anything with its `transaction(callback)`). */
export interface PGliteLike extends PostgresQueryable {
  transaction<T>(callback: (tx: PostgresQueryable & { rollback(): Promise<void> }) => Promise<T>): Promise<T>
}

export interface OpenTransaction {
  query(text: string, params: unknown[]): Promise<unknown[]>
  /** What the handlers receive as event.transaction. */
  readonly handle: unknown
  commit(): Promise<void>
  /** Never throws: a transaction that cannot be rolled back cleanly is dropped with its connection. */
  rollback(): Promise<void>
  /** Ends it now, without waiting (the lease ran out); whatever the handlers do with it afterwards fails. */
  abandon(): void
}

export type Begin = () => Promise<OpenTransaction>

export function isPool(client: unknown): client is PoolLike {
  const candidate = client as Partial<PoolLike>
  return typeof candidate.connect === 'function' && typeof candidate.totalCount === 'number'
}

export function isPGlite(client: unknown): client is PGliteLike {
  return typeof (client as Partial<PGliteLike>).transaction === 'function'
}

/**
 * Sends one query at a time through a single connection (a pg Client): pg deprecates queueing concurrent
 * queries on a client itself, and concurrent deliveries would. Pools and PGlite manage that already.
 */
export function oneAtATime(client: PostgresQueryable): PostgresQueryable {
  if (typeof (client as { connect?: unknown }).connect !== 'function' || isPool(client) || isPGlite(client)) return client
  let last: Promise<unknown> = Promise.resolve()
  return {
    query(text, params) {
      const result = last.then(() => client.query(text, params))
      last = result.catch(() => {})
      return result
    },
  }
}

interface ErrorEvents {
  on(event: 'error', listener: (error: Error) => void): unknown
  removeListener(event: 'error', listener: (error: Error) => void): unknown
}

export function poolTransactions(pool: PoolLike, lockTimeoutMs: number): Begin {
  return async () => {
    const connection = await pool.connect()
    const events = connection as unknown as Partial<ErrorEvents>
    let ended = false
    const end = (error?: Error) => {
      if (ended) return
      ended = true
      // A connection released with an error is closed, not reused: the server rolls back whatever it held. It
      // keeps our listener, for the errors its closing may still emit.
      if (error === undefined) events.removeListener?.('error', onError)
      connection.release(error)
    }
    // The pool listens for errors only on idle connections; one dropped while checked out (its transaction gone
    // with it) would otherwise be an unhandled 'error' event that kills the process.
    const onError = (error: Error) => end(error)
    events.on?.('error', onError)
    try {
      // A duplicate delivery would otherwise wait on the claimed row for as long as the handlers run. One
      // simple-protocol round trip (no parameters), as pg sends it. The claim statement run in this transaction
      // (claimInTransaction in sql.ts) puts lock_timeout back to its default once the row is ours, so that the
      // handlers' own writes wait for locks as the app configured, not as briefly as the claim does.
      await connection.query(`BEGIN; SET LOCAL lock_timeout = ${lockTimeoutMs}`)
    } catch (error) {
      end(error as Error)
      throw error
    }
    return {
      query: async (text, params) => (await connection.query(text, params)).rows,
      handle: connection,
      async commit() {
        if (ended) throw new Error('the connection holding the transaction was lost; nothing was committed')
        try {
          await connection.query('COMMIT')
        } catch (error) {
          end(error as Error)
          throw error
        }
        end()
      },
      async rollback() {
        if (ended) return
        try {
          await connection.query('ROLLBACK')
          end()
        } catch (error) {
          end(error as Error)
        }
      },
      abandon: () => end(new Error('the lease expired while the transaction was open')),
    }
  }
}

export function pgliteTransactions(db: PGliteLike): Begin {
  return () =>
    new Promise<OpenTransaction>((resolveOpen, rejectOpen) => {
      let finish!: (commit: boolean) => void
      const finished = new Promise<boolean>((resolve) => {
        finish = resolve
      })
      let opened = false
      // PGlite commits when the callback returns, so it stays open until the claim is completed or released.
      const done = db.transaction(async (tx) => {
        opened = true
        resolveOpen({
          query: async (text, params) => (await tx.query(text, params)).rows,
          handle: tx,
          async commit() {
            finish(true)
            await done
          },
          async rollback() {
            finish(false)
            await done.catch(() => {})
          },
          abandon() {
            finish(false)
            done.catch(() => {})
          },
        })
        if (!(await finished)) await tx.rollback()
      })
      done.catch((error: unknown) => {
        if (!opened) rejectOpen(error)
      })
    })
}
