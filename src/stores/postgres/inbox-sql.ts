/*
 * The inbox table of the PostgreSQL store (inbox mode), next to the claims table: `<table>_inbox`, one row per
 * (exchange_number, state) waiting for its handlers, or dead-lettered. Rows are deleted once handled.
 *
 *   rank              the state's rank (pending 0, failed 1, succeeded 2). The states of one exchange_number run in
 *                     the order they arrived (received_at): a row waits while an earlier one is pending, and while
 *                     a higher one that arrived no later is in the table at all, so a 99 never runs after its 00;
 *   fields            the verified fields as JSON text (text keeps their order), rendering the checksum's,
 *                     signer who signed them (JSON text; null in rows written before it was kept);
 *   status            'pending' or 'dead'; attempts counted when taken; next_attempt_at the backoff;
 *   lease_*           the worker running an attempt now, and until when (then another worker takes it over).
 */
import { SOURCE_LIST_SQL, STATE_LIST_SQL } from './state-list.js'

/** What inboxTable needs of sql.ts's TableName (structural, so that neither module imports the other's). */
interface BaseTable {
  readonly sql: string
  readonly indexSql: string
}

export interface InboxTable {
  readonly sql: string
  readonly indexSql: string
  /** For to_regclass(). */
  readonly lookup: string
}

export function inboxTable(table: BaseTable): InboxTable {
  // tableName() leaves room for '_expires_at_idx' (15 characters); '_inbox_due_idx' is 14.
  const name = table.sql.replace(/"$/, '_inbox"')
  return { sql: name, indexSql: table.indexSql.replace(/_expires_at_idx"$/, '_inbox_due_idx"'), lookup: name }
}

export function inboxSchemaStatements(table: InboxTable): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${table.sql} (
  exchange_number text NOT NULL,
  state text NOT NULL CHECK (state IN (${STATE_LIST_SQL})),
  rank smallint NOT NULL,
  source text NOT NULL CHECK (source IN (${SOURCE_LIST_SQL})),
  order_number text,
  fields text NOT NULL,
  rendering text NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'dead')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  lease_owner text,
  lease_expires_at timestamptz,
  last_error text,
  received_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (exchange_number, state)
)`,
    `CREATE INDEX IF NOT EXISTS ${table.indexSql} ON ${table.sql} (status, next_attempt_at)`,
    // Added after the first version: a column of its own, so that made and migrated tables end up alike.
    `ALTER TABLE ${table.sql} ADD COLUMN IF NOT EXISTS signer text`,
  ]
}

const ms = (param: string) => `${param}::float8 * interval '1 millisecond'`
const COLUMNS = `i.exchange_number, i.state, i.source, i.order_number, i.status, i.attempts, i.next_attempt_at, i.received_at,
  CASE WHEN i.lease_expires_at > now() THEN i.lease_expires_at END AS leased_until, i.last_error`

/** The inbox's statements, their parameters ($n) named beside each. */
export function inboxStatements(table: InboxTable) {
  const t = table.sql
  const free = `(i.lease_owner IS NULL OR i.lease_expires_at <= now())`
  const retried = `status = 'pending', next_attempt_at = now(), attempts = CASE WHEN i.status = 'dead' THEN 0 ELSE i.attempts END`
  return {
    // $1 exchange_number, $2 state, $3 rank, $4 source, $5 order_number, $6 fields, $7 rendering, $8 signer.
    enqueue: `INSERT INTO ${t} (exchange_number, state, rank, source, order_number, fields, rendering, signer)
VALUES ($1::text, $2::text, $3::smallint, $4::text, $5::text, $6::text, $7::text, $8::text)
ON CONFLICT (exchange_number, state) DO NOTHING RETURNING 1 AS queued`,

    // $1 owner, $2 limit, $3 leaseMs. SKIP LOCKED lets workers in several processes take different rows at once; FOR UPDATE re-checks the
    // conditions on the row's latest version, so a row another worker just leased is not taken twice.
    take: `WITH due AS (
  SELECT i.exchange_number, i.state FROM ${t} AS i
  WHERE i.status = 'pending' AND i.next_attempt_at <= now() AND ${free}
    AND NOT EXISTS (SELECT 1 FROM ${t} AS h WHERE h.exchange_number = i.exchange_number AND h.state <> i.state
      AND ((h.received_at < i.received_at AND h.status = 'pending') OR (h.rank > i.rank AND h.received_at <= i.received_at)))
  ORDER BY i.next_attempt_at LIMIT $2::int FOR UPDATE SKIP LOCKED)
UPDATE ${t} AS i SET lease_owner = $1::text, lease_expires_at = now() + ${ms('$3')}, attempts = i.attempts + 1
FROM due WHERE i.exchange_number = due.exchange_number AND i.state = due.state
RETURNING i.exchange_number, i.state, i.source, i.order_number, i.fields, i.rendering, i.signer, i.attempts`,

    // finish: $1 exchange_number, $2 state, $3 owner; fail: the same, $4 dead, $5 delayMs, $6 error, $7 refund (0 or 1),
    // $8 the taken entry's attempts.
    finish: `DELETE FROM ${t} AS i WHERE i.exchange_number = $1::text AND i.state = $2::text AND i.lease_owner = $3::text RETURNING 1 AS done`,

    // Fewer attempts stored than taken: retry reset them, the result was delivered again during this attempt. Such a
    // row is not dead-lettered but given back pending and due now, as retry makes a row that is not leased: the
    // sender was answered 200 for a delivery that no attempt has started after, and a backoff (the inbox's to
    // choose, not the queue's) would only delay that one. A dead row's next_attempt_at is when it died.
    fail: `UPDATE ${t} AS i SET
  status = CASE WHEN $4::boolean AND i.attempts >= $8::int THEN 'dead' ELSE 'pending' END,
  next_attempt_at = CASE WHEN $4::boolean THEN now() ELSE now() + ${ms('$5')} END,
  attempts = greatest(i.attempts - $7::int, 0),
  last_error = $6::text, lease_owner = NULL, lease_expires_at = NULL
WHERE i.exchange_number = $1::text AND i.state = $2::text AND i.lease_owner = $3::text RETURNING i.status`,

    // $1 status or null, $2 order_number or null, $3 limit.
    list: `SELECT ${COLUMNS} FROM ${t} AS i
WHERE ($1::text IS NULL OR i.status = $1::text) AND ($2::text IS NULL OR i.order_number = $2::text)
ORDER BY i.received_at, i.exchange_number, i.rank LIMIT $3::int`,

    // $1 exchange_number.
    show: `SELECT ${COLUMNS}, i.fields FROM ${t} AS i WHERE i.exchange_number = $1::text ORDER BY i.rank`,

    // $1 exchange_number, $2 state or null. A leased row stays leased and is not counted (made_due false); only its
    // attempts go back to 0, as do those of a row taken by a worker that has not reported yet (lease_owner kept, its
    // lease run out), so that fail gives it back rather than dead-letter it (see InboxQueue.retry). One statement, so
    // that a row a worker fails meanwhile is read as it is after that (dead, then made due).
    retryOne: `UPDATE ${t} AS i SET
  status = 'pending',
  next_attempt_at = CASE WHEN ${free} THEN now() ELSE i.next_attempt_at END,
  attempts = CASE WHEN i.status = 'dead' OR i.lease_owner IS NOT NULL THEN 0 ELSE i.attempts END
WHERE i.exchange_number = $1::text AND ($2::text IS NULL OR i.state = $2::text) RETURNING ${free} AS made_due`,

    retryDead: `UPDATE ${t} AS i SET ${retried} WHERE i.status = 'dead' AND ${free} RETURNING 1 AS done`,

    hasten: `WITH moved AS (UPDATE ${t} AS i SET next_attempt_at = now()
  WHERE i.status = 'pending' AND i.next_attempt_at > now() AND i.attempts > 0 AND ${free} RETURNING 1)
SELECT count(*)::int AS count FROM moved`,

    counts: `SELECT i.status, count(*)::int AS count FROM ${t} AS i GROUP BY i.status`,
  }
}
