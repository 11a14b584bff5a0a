/*
 * The SQL of the PostgreSQL store. Every statement is one round trip, uses the database clock (now(), or
 * clock_timestamp() where the transaction's start is too early) for leases and retention so that processes with
 * drifting clocks agree, and takes its durations in milliseconds as float8.
 *
 * One row per exchange_number:
 *   handled           the payment states whose handlers completed;
 *   lease_*           the delivery working on it now (a random owner token, the state it handles, until when);
 *   expires_at        when the row may be forgotten (retention after the last completion or release, or a little
 *                     later: see complete), unless a live lease still holds it.
 */

import { inboxSchemaStatements, inboxTable } from './inbox-sql.js'
import { bookSchemaStatements, bookTable } from './payment-book-sql.js'
import { STATE_LIST_SQL } from './state-list.js'
import { timelineSchemaStatements, timelineTable } from './timeline.js'

export const DEFAULT_TABLE = 'fpx_collect'

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/
// Room for the index name's suffix within PostgreSQL's 63-byte identifiers, which it would silently truncate.
const MAX_TABLE_NAME = 63 - '_expires_at_idx'.length

export interface TableName {
  /** As written in SQL: quoted, schema-qualified when a schema was given. */
  readonly sql: string
  readonly indexSql: string
  /** The schema as given (unquoted), if any, and the table's own name. */
  readonly schema: string | undefined
  readonly name: string
}

/** Parses `table` or `schema.table` (plain identifiers only: the name is spliced into SQL, so nothing else). */
export function tableName(name: string): TableName {
  const parts = typeof name === 'string' ? name.split('.') : []
  const table = parts.at(-1) ?? ''
  if (parts.length < 1 || parts.length > 2 || !parts.every((part) => IDENTIFIER.test(part)) || table.length > MAX_TABLE_NAME)
    throw new TypeError(`table must be "name" or "schema.name" with letters, digits and _ (name at most ${MAX_TABLE_NAME} characters)`)
  return {
    sql: parts.map((part) => `"${part}"`).join('.'),
    indexSql: `"${table}_expires_at_idx"`,
    schema: parts.length === 2 ? parts[0] : undefined,
    name: table,
  }
}

/** The schema, one statement per entry. sql/fpx-collect.sql is this for the default table name (a test keeps them equal). */
export function schemaStatements(table: TableName): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${table.sql} (
  exchange_number text PRIMARY KEY,
  handled text[] NOT NULL DEFAULT '{}' CHECK (handled <@ ARRAY[${STATE_LIST_SQL}]),
  lease_owner text,
  lease_state text CHECK (lease_state IN (${STATE_LIST_SQL})),
  lease_expires_at timestamptz,
  expires_at timestamptz NOT NULL
)`,
    `CREATE INDEX IF NOT EXISTS ${table.indexSql} ON ${table.sql} (expires_at)`,
    // Inbox mode's table (src/stores/postgres/inbox-sql.ts), created with the rest so that a role without
    // CREATE works from the SQL file alone.
    ...inboxSchemaStatements(inboxTable(table)),
    ...timelineSchemaStatements(timelineTable(table)),
    ...bookSchemaStatements(bookTable(table)),
  ]
}

const ms = (param: string) => `${param}::float8 * interval '1 millisecond'`
const LEASE_FREE = `(r.lease_owner IS NULL OR r.lease_expires_at <= now())`
/** Past retention and not held by a live lease: claimed afresh, or deleted by prune. */
const FORGOTTEN = `(r.expires_at <= now() AND ${LEASE_FREE})`

export interface Statements {
  /**
   * $1 exchange_number, $2 owner, $3 state, $4 leaseMs, $5 how long a new row is kept (retention plus the slack
   * of complete below), $6 the states that block $3 (text[]).
   */
  claim: string
  /**
   * The claim in a pool transaction, which runs it under a short `lock_timeout` (see transactions.ts): when it
   * takes the row, it also puts lock_timeout back to its default for the rest of the transaction, as
   * `SET LOCAL lock_timeout TO DEFAULT` did in a round trip of its own (`set_config` with a NULL value is that
   * reset). Evaluated per row returned, so only once the row is ours; no row back leaves the short timeout on.
   */
  claimInTransaction: string
  /** $1 exchange_number. */
  inspect: string
  /**
   * $1 exchange_number, $2 owner, $3 state, $4 retentionMs. Leaves expires_at alone when it already reaches
   * retention past now: the claim of a new row reserves that slack (see postgresStore), so the common
   * completion changes no indexed column and PostgreSQL updates the row in place (a HOT update) instead of
   * adding entries to both of its indexes. The clock is read when the statement runs (clock_timestamp()), not
   * when the transaction began (now()): a transactional store completes in the claim's transaction, possibly a
   * whole lease later.
   */
  complete: string
  release: string
  /** $1 the most rows to delete. */
  prune: string
  exists: string
}

export function statements(table: TableName): Statements {
  const t = table.sql
  const claim = claimStatement(t)
  return {
    claim,
    claimInTransaction: `WITH claimed AS (
${claim}
)
SELECT claimed.handled, set_config('lock_timeout', NULL, true) AS lock_timeout FROM claimed`,

    inspect: `SELECT r.handled, r.lease_owner, ${FORGOTTEN} AS forgotten,
  CASE WHEN NOT ${LEASE_FREE} THEN extract(epoch FROM r.lease_expires_at - now())::float8 * 1000 END AS lease_remaining_ms
FROM ${t} AS r WHERE r.exchange_number = $1::text`,

    complete: `UPDATE ${t} AS r SET
  handled = CASE WHEN $3::text = ANY (r.handled) THEN r.handled ELSE array_append(r.handled, $3::text) END,
  lease_owner = NULL, lease_state = NULL, lease_expires_at = NULL, expires_at = GREATEST(r.expires_at, clock_timestamp() + ${ms('$4')})
WHERE r.exchange_number = $1::text AND r.lease_owner = $2::text AND r.lease_state = $3::text
RETURNING 1 AS done`,

    release: `UPDATE ${t} AS r SET
  lease_owner = NULL, lease_state = NULL, lease_expires_at = NULL, expires_at = now() + ${ms('$4')}
WHERE r.exchange_number = $1::text AND r.lease_owner = $2::text AND r.lease_state = $3::text
RETURNING 1 AS done`,

    // In batches, skipping rows a claim holds locked (it is taking a forgotten row over).
    prune: `WITH gone AS (
  DELETE FROM ${t} WHERE exchange_number IN (
    SELECT r.exchange_number FROM ${t} AS r WHERE ${FORGOTTEN} LIMIT $1::int FOR UPDATE SKIP LOCKED)
  RETURNING 1)
SELECT count(*)::int AS deleted FROM gone`,

    exists: `SELECT to_regclass($1::text) IS NOT NULL AS found`,
  }
}

/**
 * Takes the lease when it is free, expired or the caller's own, and nothing handled blocks the state; a forgotten
 * row starts over. ON CONFLICT locks the row first, so concurrent claims of one exchange_number queue here and
 * exactly one of them sees its WHERE hold. No row back means: look (inspect) and decide.
 */
function claimStatement(t: string): string {
  return `INSERT INTO ${t} AS r (exchange_number, lease_owner, lease_state, lease_expires_at, expires_at)
VALUES ($1::text, $2::text, $3::text, now() + ${ms('$4')}, now() + ${ms('$5')})
ON CONFLICT (exchange_number) DO UPDATE SET
  handled = CASE WHEN ${FORGOTTEN} THEN '{}' ELSE r.handled END,
  expires_at = CASE WHEN ${FORGOTTEN} THEN excluded.expires_at ELSE r.expires_at END,
  lease_owner = excluded.lease_owner,
  lease_state = excluded.lease_state,
  lease_expires_at = excluded.lease_expires_at
WHERE (${LEASE_FREE} OR r.lease_owner = excluded.lease_owner)
  AND (${FORGOTTEN} OR NOT (r.handled && $6::text[]))
RETURNING r.handled`
}
