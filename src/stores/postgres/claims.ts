/*
 * Deciding a claim from the database's answer, and keeping the claims a transactional store holds open.
 */
import { currentOfBits, PAYMENT_STATES, type PaymentState, STATE_BIT } from '../../core/payment.js'
import type { Statements } from './sql.js'
import { codeOf } from './upkeep.js'
import type { Begin, OpenTransaction } from './transactions.js'
import { type Claim, type ClaimRequest, isRegression, type LeaseRef } from '../../contract/store.js'

export type Run = (text: string, params: unknown[]) => Promise<unknown[]>
export type Decision = Exclude<Claim<never>, { outcome: 'claimed' }> | { readonly outcome: 'claimed'; readonly previousState: PaymentState | null }

const CLAIM_ATTEMPTS = 3
// Retry-After when there is no lease expiry to go by.
const RETRY_SOON_MS = 1000
const LOCK_NOT_AVAILABLE = '55P03'
const IN_FAILED_TRANSACTION = '25P02'

interface InspectedRow {
  handled: unknown
  lease_owner: string | null
  forgotten: boolean
  lease_remaining_ms: number | null
}

/** The handled column as STATE_BIT bits, as the other stores keep it. */
function handledBits(value: unknown): number {
  if (!Array.isArray(value) || !value.every((state) => PAYMENT_STATES.includes(state as PaymentState)))
    throw new Error('the store table holds an unknown payment state')
  return (value as PaymentState[]).reduce((bits, state) => bits | STATE_BIT[state], 0)
}

/** The states that, once handled, keep `incoming` from being claimed: itself, and any it would regress from. */
function blockingStates(incoming: PaymentState): string {
  return `{${PAYMENT_STATES.filter((state) => state === incoming || isRegression(state, incoming)).join(',')}}`
}

/**
 * Runs the claim statement and, when it takes nothing, one SELECT to say why, with the rules of store.ts
 * (checked in the memory store's order: busy, then stale, then duplicate).
 */
export async function decide(
  run: Run,
  sql: Pick<Statements, 'claim' | 'inspect'>,
  request: ClaimRequest,
  leaseMs: number,
  retentionMs: number,
): Promise<Decision> {
  const { exchangeNumber, owner, state } = request
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    const params = [exchangeNumber, owner, state, leaseMs, retentionMs, blockingStates(state)]
    const [claimed] = (await run(sql.claim, params)) as { handled: unknown }[]
    if (claimed !== undefined) return { outcome: 'claimed', previousState: currentOfBits(handledBits(claimed.handled)) }
    const [row] = (await run(sql.inspect, [exchangeNumber])) as InspectedRow[]
    // Gone, forgotten or freed since the claim looked: try again.
    if (row === undefined || row.forgotten) continue
    if (row.lease_remaining_ms !== null && row.lease_owner !== owner)
      return { outcome: 'busy', retryAfterMs: Math.max(1, Math.ceil(row.lease_remaining_ms)) }
    const handled = handledBits(row.handled)
    const current = currentOfBits(handled)
    if (current !== null && isRegression(current, state)) return { outcome: 'stale', currentState: current }
    if (handled & STATE_BIT[state]) return { outcome: 'duplicate' }
  }
  // Leases changing hands faster than we can look: let the sender come back shortly.
  return { outcome: 'busy', retryAfterMs: RETRY_SOON_MS }
}

/** A claim this process holds in an open transaction (or, with PGlite, is busy taking). */
interface Held {
  readonly owner: string
  readonly state: PaymentState
  readonly expiresAt: number
  readonly settled: Promise<void>
  readonly settle: () => void
  open?: OpenTransaction
  timer?: NodeJS.Timeout
}

/**
 * Claims held open in this process, by client: every store on one PGlite instance shares its single session, so
 * they must all see each other's open claims; on a pool, any store instance may complete what another claimed.
 */
const openClaims = new WeakMap<object, Map<string, Held>>()

export interface TransactionalClaimsOptions {
  client: object
  begin: Begin
  /** One session for everything (PGlite): claims of an exchange_number held open are answered here. */
  exclusive: boolean
  /** Told apart in `openClaims` from other tables on the same client. */
  table: string
  lockTimeoutMs: number
  decide(run: Run, request: ClaimRequest, leaseMs: number): Promise<Decision>
}

export interface TransactionalClaims {
  claim(request: ClaimRequest, leaseMs: number): Promise<Claim<unknown>>
  /** Runs `record` in the lease's transaction and commits when it returns true; false when not held here. */
  complete(lease: LeaseRef, record: (open: OpenTransaction) => Promise<boolean>): Promise<boolean>
  release(lease: LeaseRef): Promise<boolean>
}

export function transactionalClaims(options: TransactionalClaimsOptions): TransactionalClaims {
  const { begin, exclusive, lockTimeoutMs } = options
  const held = openClaims.get(options.client) ?? new Map<string, Held>()
  openClaims.set(options.client, held)
  const keyOf = (exchangeNumber: string) => `${options.table}.${exchangeNumber}`

  function newHeld(request: ClaimRequest, expiresAt: number): Held {
    let settle!: () => void
    const settled = new Promise<void>((resolve) => {
      settle = resolve
    })
    return { owner: request.owner, state: request.state, expiresAt, settled, settle }
  }

  /** Forgets `entry` and ends its transaction, without waiting: its lease is over. */
  function drop(key: string, entry: Held): void {
    if (held.get(key) === entry) held.delete(key)
    clearTimeout(entry.timer)
    entry.open?.abandon()
    entry.settle()
  }

  /** Takes this process's open claim for `lease` out of the map, if it holds one. */
  function take(lease: LeaseRef): (Held & { open: OpenTransaction }) | undefined {
    const key = keyOf(lease.exchangeNumber)
    const entry = held.get(key)
    if (entry?.open === undefined || entry.owner !== lease.owner || entry.state !== lease.state) return undefined
    held.delete(key)
    clearTimeout(entry.timer)
    return entry as Held & { open: OpenTransaction }
  }

  return {
    async claim(request, leaseMs) {
      const key = keyOf(request.exchangeNumber)
      const now = Date.now()
      const ours = newHeld(request, now + leaseMs)
      if (exclusive) {
        const current = held.get(key)
        if (current !== undefined && current.expiresAt > now)
          return { outcome: 'busy', retryAfterMs: current.expiresAt - now, settled: current.settled }
        // Holds the place while this claim waits for the session, so that concurrent claims wait for it.
        held.set(key, ours)
        if (current !== undefined) drop(key, current)
      }
      const giveUp = () => {
        if (held.get(key) === ours) held.delete(key)
        ours.settle()
      }
      let open: OpenTransaction
      let claim: Decision
      try {
        open = await begin()
      } catch (error) {
        giveUp()
        throw error
      }
      try {
        claim = await options.decide(open.query, request, leaseMs)
      } catch (error) {
        await open.rollback()
        giveUp()
        // Another transaction holds the row for longer than lockTimeoutMs: its handlers are still running.
        if (codeOf(error) === LOCK_NOT_AVAILABLE) return { outcome: 'busy', retryAfterMs: Math.min(lockTimeoutMs, leaseMs) }
        throw error
      }
      const remaining = ours.expiresAt - Date.now()
      // With PGlite, the place may have been taken over while this claim waited for the session.
      if (claim.outcome !== 'claimed' || remaining <= 0 || (exclusive && held.get(key) !== ours)) {
        await open.rollback()
        giveUp()
        return claim.outcome === 'claimed' ? { outcome: 'busy', retryAfterMs: RETRY_SOON_MS } : claim
      }
      const previous = held.get(key)
      if (previous !== undefined && previous !== ours) drop(key, previous)
      ours.open = open
      held.set(key, ours)
      // The lease ends with the transaction: past it, the writes roll back and the claim can be taken over.
      ours.timer = setTimeout(() => drop(key, ours), remaining)
      ours.timer.unref()
      return { ...claim, transaction: open.handle }
    },

    async complete(lease, record) {
      const entry = take(lease)
      if (entry === undefined) return false
      try {
        if (!(await record(entry.open))) {
          await entry.open.rollback()
          return false
        }
        await entry.open.commit()
        return true
      } catch (error) {
        await entry.open.rollback()
        if (codeOf(error) !== IN_FAILED_TRANSACTION) throw error
        throw new Error('a statement the handlers ran in the transaction failed, so nothing was committed', { cause: error })
      } finally {
        entry.settle()
      }
    },

    async release(lease) {
      const entry = take(lease)
      if (entry === undefined) return false
      await entry.open.rollback()
      entry.settle()
      return true
    },
  }
}
