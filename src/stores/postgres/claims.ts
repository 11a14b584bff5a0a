/*
 * Claims, completions and releases: one statement each, on the database clock (now(), or clock_timestamp() where
 * the transaction's start is too early), durations taken in milliseconds as float8. A completion or a release
 * notifies LEASE_ENDS_CHANNEL (delivered at its commit), so that a delivery waiting for the lease hears of it.
 *
 * A claim reads the row as its statement began (`seen`). When that already shows why the claim cannot be taken (a
 * live lease of another delivery, or the state handled or overtaken), it is answered from there and writes nothing.
 * Otherwise it is an INSERT … ON CONFLICT, which locks the row as it stands now and takes the lease when it is
 * free, expired or the caller's own and nothing handled blocks the state; concurrent claims of one exchange_number
 * queue on that lock and exactly one takes it. The row is written either way then, so that its latest state comes
 * back even when it changed after the statement began (a transaction that held it has just committed). Once
 * claimed, the same statement reads which other payment paid the order, if any, and the payment book's record of it.
 */
import { currentOfBits, PAYMENT_STATES, type PaymentState, STATE_BIT } from '../../core/payment.js'
import { type Claim, type ClaimRequest, isRegression } from '../../contract/store.js'
import type { BookTable } from './payment-book-schema.js'
import { bookedJson, completionStatements, failureStatements, type OrderParams } from './payment-book-sql.js'
import { type BookRow, bookedPayment } from './payment-book.js'

const ms = (param: string) => `${param}::float8 * interval '1 millisecond'`
const LEASE_FREE = `(r.lease_owner IS NULL OR r.lease_expires_at <= now())`
/** Past retention and not held by a live lease: claimed afresh, or deleted by prune. */
const FORGOTTEN = `(r.expires_at <= now() AND ${LEASE_FREE})`
/** Whether a claim ($2 owner, $6 the states that block it) takes row r. */
const TAKES = `((${LEASE_FREE} OR r.lease_owner = $2::text) AND (${FORGOTTEN} OR NOT r.handled && $6::text[]))`
// Retry-After when there is no lease expiry to go by.
const RETRY_SOON_MS = 1000

export interface ClaimStatements {
  /**
   * $1 exchange_number, $2 owner, $3 state, $4 leaseMs, $5 retentionMs, $6 the states that block $3 (text[]),
   * $7 order_number, $8 uid. One row: handled, claimed, lease_owner, lease_remaining_ms, paid_by, booked (json).
   */
  claim: string
  /**
   * The claim in a pool transaction, which runs under a short lock_timeout (transactions.ts): it puts lock_timeout
   * back to its default for the rest of the transaction (`set_config` with a NULL value is a reset), so that the
   * handlers' own writes wait for locks as the app configured.
   */
  claimInTransaction: string
  /**
   * $1 exchange_number, $2 owner, $3 state, $4 retentionMs, $5 order_number, $6 uid, $7 now (ms, the application's),
   * $8 whether a result was seen, $9 its uid, $10 amount (sen), $11 buyer e-mail, $12 buyer name. Records the state
   * handled, marks the order paid by a success, settles the booked payment (or records the order from its result).
   * One row: done (0 or 1).
   */
  complete: string
  /** $1 exchange_number, $2 owner, $3 state, $4 retentionMs. */
  release: string
  /**
   * The release after a handler failure: the release's $1 to $4, then $5 order_number, $6 uid, $7 now (ms), $8 to
   * $12 the result seen (as complete's), $13 the failure's message. Counts the failure on the booked payment (or
   * records the order from its result). Rows: done.
   */
  releaseFailed: string
  /** $1 the most rows to delete. One row: deleted. */
  prune: string
  /** $1 exchange_number. A row when a live lease is held on it. */
  leaseHeld: string
  /** $1 exchange_number, $2 order_number, $3 uid. A row (paid_by) when another payment of the order was paid. */
  paidBy: string
}

/**
 * The channel completions and releases notify (lease-ends.ts), with the table and exchange_number in JSON; a
 * completion adds the owner whose lease it ended and the state it recorded ($2 and $3 of its statement).
 */
export const LEASE_ENDS_CHANNEL = 'fpx_collect_lease_ends'
const notify = (t: string, completion = false) =>
  `pg_notify('${LEASE_ENDS_CHANNEL}', json_build_object('t', '${t.replaceAll("'", "''")}', 'x', $1::text${completion ? ", 'o', $2::text, 's', $3::text" : ''})::text)`

export function claimStatements(t: string, book: BookTable): ClaimStatements {
  /** Another payment that paid the order ($1 the payment's own exchange_number), kept as long as its row. */
  const paidBy = (order: string, uid: string) => `SELECT p.exchange_number AS paid_by FROM ${t} AS p
    WHERE p.paid_order_number = ${order}::text AND p.paid_uid IS NOT DISTINCT FROM ${uid}::text AND p.exchange_number <> $1::text AND p.expires_at > now()
    ORDER BY p.expires_at DESC LIMIT 1`
  const claim = `WITH seen AS (
  SELECT r.handled, r.lease_owner, r.lease_expires_at, r.expires_at FROM ${t} AS r WHERE r.exchange_number = $1::text
), taken AS (
  INSERT INTO ${t} AS r (exchange_number, lease_owner, lease_state, lease_expires_at, expires_at)
  SELECT $1::text, $2::text, $3::text, now() + ${ms('$4')}, now() + ${ms('$5')}
  WHERE NOT EXISTS (SELECT FROM seen AS r WHERE (NOT ${LEASE_FREE} AND r.lease_owner <> $2::text) OR (NOT ${FORGOTTEN} AND r.handled && $6::text[]))
  ON CONFLICT (exchange_number) DO UPDATE SET
    handled = CASE WHEN ${FORGOTTEN} THEN '{}' ELSE r.handled END,
    expires_at = CASE WHEN ${FORGOTTEN} THEN excluded.expires_at ELSE r.expires_at END,
    paid_order_number = CASE WHEN ${FORGOTTEN} THEN NULL ELSE r.paid_order_number END,
    paid_uid = CASE WHEN ${FORGOTTEN} THEN NULL ELSE r.paid_uid END,
    lease_owner = CASE WHEN ${TAKES} THEN excluded.lease_owner ELSE r.lease_owner END,
    lease_state = CASE WHEN ${TAKES} THEN excluded.lease_state ELSE r.lease_state END,
    lease_expires_at = CASE WHEN ${TAKES} THEN excluded.lease_expires_at ELSE r.lease_expires_at END
  RETURNING r.handled, r.lease_owner, r.lease_state, r.lease_expires_at
), found AS (
  SELECT handled, lease_owner, lease_expires_at, coalesce(lease_owner = $2::text AND lease_state = $3::text, false) AS claimed FROM taken
  UNION ALL
  SELECT handled, lease_owner, lease_expires_at, false FROM seen WHERE NOT EXISTS (SELECT FROM taken)
)
SELECT f.handled, f.claimed, f.lease_owner,
  CASE WHEN f.lease_owner IS NOT NULL AND f.lease_expires_at > now() THEN extract(epoch FROM f.lease_expires_at - now())::float8 * 1000 END AS lease_remaining_ms,
  CASE WHEN f.claimed THEN (${paidBy('$7', '$8')}) END AS paid_by,
  CASE WHEN f.claimed THEN ${bookedJson(book, '$7', '$8')} END AS booked`
  const order: Omit<OrderParams, 'retentionMs'> = {
    order: '$5',
    uid: '$6',
    state: '$3',
    exchange: '$1',
    now: '$7',
    seen: { given: '$8', uid: '$9', amount: '$10', email: '$11', name: '$12' },
  }
  const completion = completionStatements(book, { ...order, retentionMs: '$4' }, 'EXISTS (SELECT FROM done)')
  const failure = failureStatements(book, { ...order, retentionMs: '$4' }, '$13', 'EXISTS (SELECT FROM released)')
  const release = `UPDATE ${t} AS r SET
  lease_owner = NULL, lease_state = NULL, lease_expires_at = NULL, expires_at = now() + ${ms('$4')}
WHERE r.exchange_number = $1::text AND r.lease_owner = $2::text AND r.lease_state = $3::text`
  return {
    claim: `${claim}\nFROM found AS f`,
    claimInTransaction: `${claim},\n  set_config('lock_timeout', NULL, true) AS lock_timeout\nFROM found AS f`,

    complete: `WITH done AS (
  UPDATE ${t} AS r SET
    handled = CASE WHEN $3::text = ANY (r.handled) THEN r.handled ELSE array_append(r.handled, $3::text) END,
    lease_owner = NULL, lease_state = NULL, lease_expires_at = NULL, expires_at = clock_timestamp() + ${ms('$4')},
    paid_order_number = CASE WHEN $3::text = 'succeeded' THEN $5::text ELSE r.paid_order_number END,
    paid_uid = CASE WHEN $3::text = 'succeeded' THEN $6::text ELSE r.paid_uid END
  WHERE r.exchange_number = $1::text AND r.lease_owner = $2::text AND r.lease_state = $3::text
  RETURNING 1
), settled AS (
  ${completion.settle}
  RETURNING 1
), recorded AS (
  ${completion.record}
  RETURNING 1
), notified AS (
  SELECT ${notify(t, true)} FROM done
)
SELECT count(*)::int AS done FROM done, (SELECT count(*) FROM notified) AS n`,

    release: `WITH released AS (${release}
  RETURNING 1
)
SELECT 1 AS done, ${notify(t)} AS notified FROM released`,

    releaseFailed: `WITH released AS (${release}
  RETURNING 1
), counted AS (
  ${failure.count}
  RETURNING 1
), recorded AS (
  ${failure.record}
  RETURNING 1
)
SELECT 1 AS done, ${notify(t)} AS notified FROM released`,

    leaseHeld: `SELECT 1 FROM ${t} AS r WHERE r.exchange_number = $1::text AND NOT ${LEASE_FREE}`,
    paidBy: paidBy('$2', '$3'),

    // In batches, skipping rows a claim holds locked (it is taking a forgotten row over).
    prune: `WITH gone AS (
  DELETE FROM ${t} WHERE exchange_number IN (
    SELECT r.exchange_number FROM ${t} AS r WHERE ${FORGOTTEN} LIMIT $1::int FOR UPDATE SKIP LOCKED)
  RETURNING 1)
SELECT count(*)::int AS deleted FROM gone`,
  }
}

/** The states that, once handled, keep `incoming` from being claimed: itself, and any it would regress from. */
export function blockingStates(incoming: PaymentState): string {
  return `{${PAYMENT_STATES.filter((state) => state === incoming || isRegression(state, incoming)).join(',')}}`
}

export interface ClaimRow {
  handled: unknown
  claimed: boolean
  lease_owner: string | null
  lease_remaining_ms: number | null
  paid_by: string | null
  booked: BookRow | string | null
}

/** The handled column as STATE_BIT bits, as the other stores keep it. */
function handledBits(value: unknown): number {
  if (!Array.isArray(value) || !value.every((state) => PAYMENT_STATES.includes(state as PaymentState)))
    throw new Error('the store table holds an unknown payment state')
  return (value as PaymentState[]).reduce((bits, state) => bits | STATE_BIT[state], 0)
}

/** The claim's answer, with the rules of contract/store.ts (checked in the memory store's order: busy, stale, duplicate). */
export function claimOf(row: ClaimRow | undefined, request: ClaimRequest): Claim<never> {
  if (row === undefined) return { outcome: 'busy', retryAfterMs: RETRY_SOON_MS }
  const handled = handledBits(row.handled)
  const current = currentOfBits(handled)
  if (row.claimed) {
    const booked = typeof row.booked === 'string' ? (JSON.parse(row.booked) as BookRow) : row.booked
    // What the merchant's client recorded: a record the book made from a result has nothing to check against.
    const recorded = booked === null || booked.kind === 'result' ? undefined : bookedPayment(booked)
    return { outcome: 'claimed', previousState: current, paidBy: row.paid_by, ...(recorded === undefined ? {} : { booked: recorded }) }
  }
  if (row.lease_remaining_ms !== null && row.lease_owner !== request.owner)
    return { outcome: 'busy', retryAfterMs: Math.max(1, Math.ceil(row.lease_remaining_ms)) }
  if (current !== null && isRegression(current, request.state)) return { outcome: 'stale', currentState: current }
  if (handled & STATE_BIT[request.state]) return { outcome: 'duplicate' }
  return { outcome: 'busy', retryAfterMs: RETRY_SOON_MS }
}
