/*
 * Transactional mode: each claim runs in a transaction left open while the handlers run (handed to them as
 * event.transaction), committed with the completion, rolled back with a release, a crash or the end of the lease.
 * On a pg Pool the transaction holds a connection of its own; PGlite is one session, so it holds the session.
 */
import type { PaymentState } from '../../core/payment.js'
import type { Claim, ClaimRequest, LeaseRef } from '../../contract/store.js'
import { codeOf, isPGlite, type PGliteLike, type PoolLike, type Query, statementsOn } from './client.js'

const LOCK_NOT_AVAILABLE = '55P03'
const IN_FAILED_TRANSACTION = '25P02'
// Retry-After for a claim that was taken only after its lease had run out.
const RETRY_SOON_MS = 1000

interface OpenTransaction {
  readonly query: Query
  /** What the handlers receive as event.transaction. */
  readonly handle: unknown
  /** Commits (throwing when that fails), or rolls back (never throwing: a connection that cannot is dropped). */
  end(commit: boolean): Promise<void>
  /** Rolls back now, without waiting (the lease ran out); whatever the handlers do with it afterwards fails. */
  abandon(): void
}

type Begin = () => Promise<OpenTransaction>

interface ErrorEvents {
  on(event: 'error', listener: (error: Error) => void): unknown
  removeListener(event: 'error', listener: (error: Error) => void): unknown
}

function poolTransactions(pool: PoolLike, lockTimeoutMs: number): Begin {
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
      // A duplicate delivery would otherwise wait on the claimed row for as long as the handlers run. One round
      // trip (no parameters: both statements in one simple query); the claim resets it once the row is ours.
      await connection.query(`BEGIN; SET LOCAL lock_timeout = ${lockTimeoutMs}`)
    } catch (error) {
      end(error as Error)
      throw error
    }
    return {
      query: statementsOn(connection),
      handle: connection,
      async end(commit) {
        if (ended) {
          if (commit) throw new Error('the connection holding the transaction was lost; nothing was committed')
          return
        }
        try {
          await connection.query(commit ? 'COMMIT' : 'ROLLBACK')
        } catch (error) {
          end(error as Error)
          if (commit) throw error
          return
        }
        end()
      },
      abandon: () => end(new Error('the lease expired while the transaction was open')),
    }
  }
}

function pgliteTransactions(db: PGliteLike): Begin {
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
          async end(commit) {
            finish(commit)
            await (commit ? done : done.catch(() => {}))
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

/** A claim this store holds open (with PGlite, also one it is busy taking). */
interface Held {
  readonly owner: string
  readonly state: PaymentState
  /** When its lease ends (ms). */
  readonly until: number
  open?: OpenTransaction
  timer?: ReturnType<typeof setTimeout>
}

export function transactionalClaims(client: PoolLike | PGliteLike, lockTimeoutMs: number) {
  const pglite = isPGlite(client)
  const begin = pglite ? pgliteTransactions(client) : poolTransactions(client, lockTimeoutMs)
  /** By exchange_number: a completion brings only its lease, and the transaction is found by it. */
  const held = new Map<string, Held>()

  /** Forgets `entry` and ends its transaction, without waiting: its lease is over. */
  function drop(exchangeNumber: string, entry: Held): void {
    if (held.get(exchangeNumber) === entry) held.delete(exchangeNumber)
    clearTimeout(entry.timer)
    entry.open?.abandon()
  }

  /** Takes the open claim of `lease` out of the map, if this store holds it. */
  function take(lease: LeaseRef): OpenTransaction | undefined {
    const entry = held.get(lease.exchangeNumber)
    if (entry?.open === undefined || entry.owner !== lease.owner || entry.state !== lease.state) return undefined
    held.delete(lease.exchangeNumber)
    clearTimeout(entry.timer)
    return entry.open
  }

  return {
    /** Opens a transaction and runs `claim` in it; keeps it open when claimed, rolls it back otherwise. */
    async claim(request: ClaimRequest, leaseMs: number, claim: (query: Query) => Promise<Claim<never>>): Promise<Claim<unknown>> {
      const key = request.exchangeNumber
      const ours: Held = { owner: request.owner, state: request.state, until: Date.now() + leaseMs }
      if (pglite) {
        // One session: a second transaction starts when the open one ends. A claim of a payment whose transaction
        // this store holds open would wait for its handlers (or, in the same delivery's flow, for ever): busy.
        const current = held.get(key)
        const now = Date.now()
        if (current !== undefined && current.until > now) return { outcome: 'busy', retryAfterMs: current.until - now }
        if (current !== undefined) drop(key, current)
        held.set(key, ours)
      }
      const giveUp = () => {
        if (held.get(key) === ours) held.delete(key)
      }
      let open: OpenTransaction | undefined
      let answer: Claim<never>
      try {
        open = await begin()
        answer = await claim(open.query)
      } catch (error) {
        await open?.end(false)
        giveUp()
        // Another transaction holds the row for longer than lockTimeoutMs: its handlers are still running.
        if (codeOf(error) === LOCK_NOT_AVAILABLE) return { outcome: 'busy', retryAfterMs: Math.min(lockTimeoutMs, leaseMs) }
        throw error
      }
      const remaining = ours.until - Date.now()
      if (answer.outcome !== 'claimed' || remaining <= 0) {
        await open.end(false)
        giveUp()
        return answer.outcome === 'claimed' ? { outcome: 'busy', retryAfterMs: RETRY_SOON_MS } : answer
      }
      const previous = held.get(key)
      if (previous !== undefined && previous !== ours) drop(key, previous)
      ours.open = open
      held.set(key, ours)
      // The lease ends with the transaction: past it, the writes roll back and the claim can be taken over.
      ours.timer = setTimeout(() => drop(key, ours), remaining)
      ;(ours.timer as { unref?: () => void }).unref?.()
      return { ...answer, transaction: open.handle }
    },

    /** Runs `complete` in the lease's transaction and commits when it returns true; false when the lease is not held here. */
    async complete(lease: LeaseRef, complete: (query: Query) => Promise<boolean>): Promise<boolean> {
      const open = take(lease)
      if (open === undefined) return false
      try {
        const done = await complete(open.query)
        await open.end(done)
        return done
      } catch (error) {
        await open.end(false)
        if (codeOf(error) !== IN_FAILED_TRANSACTION) throw error
        throw new Error('a statement the handlers ran in the transaction failed, so nothing was committed', { cause: error })
      }
    },

    async release(lease: LeaseRef): Promise<boolean> {
      const open = take(lease)
      if (open === undefined) return false
      await open.end(false)
      return true
    },

    /**
     * The open transaction of `lease`'s claim when this store holds it, for a read the delivery makes meanwhile:
     * PGlite is one session, so a read beside the transaction would wait for it to end.
     */
    heldQuery(lease: LeaseRef): Query | undefined {
      const entry = held.get(lease.exchangeNumber)
      return entry !== undefined && entry.owner === lease.owner && entry.state === lease.state ? entry.open?.query : undefined
    },
  }
}
