/*
 * The tables of the PostgreSQL store's payment book, next to the claims table:
 *
 * `<table>_book`, one row per order_number and credential set (uid) recorded at creation (order numbers are unique
 * per merchant only):
 *   amount_sen … attached   the payment as it was last asked (attached as json: kept as given, key order included);
 *   asked_sen               every amount asked for the order, oldest first, the latest last (at most 10);
 *   status, state           open until a final result (or the sweeper's abandon) closes it; the latest state handled;
 *   lookups, *_lookup_at    the sweeper's lookups so far, the last one, when the next is due (null once closed);
 *   expires_at              null while open; once closed, when the row is forgotten (retention after the close).
 * order_number and uid are collated "C", so that open payments created at the same instant list in byte order, as
 * the other stores list them, whatever the database's collation. The key leads with order_number: a find without
 * uid reads the order's rows through it.
 *
 * `<table>_locks`, one row per lock (the sweeper's, `sweep`): the fencing token of its latest holder, which only
 * grows, the holder, and until when its lease runs (-infinity once released).
 *
 * The book's times are the application's (createdAt, the sweeper's notes, dueBy), taken as epoch milliseconds;
 * retention and leases run on the database clock, like the claims'.
 */
import { STATE_LIST_SQL } from './state-list.js'

/** What bookTable needs of sql.ts's TableName (structural, so that neither module imports the other's). */
interface BaseTable {
  readonly schema: string | undefined
  readonly name: string
}

export interface BookTable {
  readonly sql: string
  readonly locksSql: string
  readonly openIndexSql: string
  readonly expiresIndexSql: string
  /** The two tables, for to_regclass(). */
  readonly lookups: readonly [string, string]
}

/** `<table>_book` and `<table>_locks` in the same schema; suffixes that fit tableName()'s room for them. */
export function bookTable(table: BaseTable): BookTable {
  const quote = (name: string) => (table.schema === undefined ? `"${name}"` : `"${table.schema}"."${name}"`)
  const [book, locks] = [quote(`${table.name}_book`), quote(`${table.name}_locks`)]
  return {
    sql: book,
    locksSql: locks,
    openIndexSql: `"${table.name}_book_open_idx"`,
    expiresIndexSql: `"${table.name}_book_exp_idx"`,
    lookups: [book, locks],
  }
}

export function bookSchemaStatements(t: BookTable): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${t.sql} (
  order_number text COLLATE "C" NOT NULL,
  amount_sen bigint NOT NULL,
  asked_sen bigint[] NOT NULL,
  uid text COLLATE "C" NOT NULL,
  kind text NOT NULL CHECK (kind IN ('form', 'payment', 'session')),
  created_at timestamptz NOT NULL,
  exchange_number text,
  attached json NOT NULL,
  status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'succeeded', 'failed', 'abandoned')),
  state text CHECK (state IN (${STATE_LIST_SQL})),
  lookups integer NOT NULL DEFAULT 0,
  last_lookup_at timestamptz,
  next_lookup_at timestamptz,
  expires_at timestamptz,
  PRIMARY KEY (order_number, uid)
)`,
    // The sweeper's questions: open payments oldest first, filtered by when they are due; the closed rows stay out.
    `CREATE INDEX IF NOT EXISTS ${t.openIndexSql} ON ${t.sql} (created_at, order_number, uid) WHERE status = 'open'`,
    `CREATE INDEX IF NOT EXISTS ${t.expiresIndexSql} ON ${t.sql} (expires_at)`,
    `CREATE TABLE IF NOT EXISTS ${t.locksSql} (
  name text PRIMARY KEY,
  token bigint NOT NULL,
  owner text,
  expires_at timestamptz NOT NULL
)`,
  ]
}

const ms = (param: string) => `${param}::float8 * interval '1 millisecond'`
const at = (param: string) => `to_timestamp(${param}::float8 / 1000)`
const LIVE = `(b.expires_at IS NULL OR b.expires_at > now())`
const rank = (state: string) => `array_position(ARRAY[${STATE_LIST_SQL}], ${state})`
const COLUMNS = `b.order_number, b.amount_sen, b.asked_sen, b.uid, b.kind, b.created_at, b.exchange_number, b.attached, b.status, b.state,
  b.lookups, b.last_lookup_at, b.next_lookup_at`
const SWEEP = `'sweep'`
/** The amounts asked, $2 moved (or added) last; the record keeps the last $8 of them. */
const ASKED = `array_remove(b.asked_sen, $2::bigint) || $2::bigint`

export interface BookStatements {
  /**
   * $1 order_number, $2 amountSen, $3 uid, $4 kind, $5 createdAt (ms), $6 exchange_number, $7 attached (JSON), $8 the
   * most amounts kept. Answers { outcome }: created, known or added (RecordOutcome).
   */
  record: string
  /** $1 order_number, $2 uid. */
  find: string
  /** $1 order_number: its payment created last, whichever uid made it. */
  findAny: string
  /** $1 order_number, $2 state, $3 exchange_number, $4 now (ms, the application's), $5 retentionMs, $6 uid. */
  settle: string
  /** $1 order_number, $2 uid: the state booked, for a settle that moved nothing. */
  stateOf: string
  /** $1 order_number, $2 token, $3 at (ms), $4 next (ms or null), $5 abandoned, $6 retentionMs, $7 uid. */
  noteLookup: string
  /** $1 limit. */
  listOpen: string
  /** $1 dueBy (ms), $2 limit. */
  listDue: string
  summary: string
  /** $1 owner, $2 ttlMs. */
  acquire: string
  /** $1 owner, $2 token, $3 ttlMs. */
  renew: string
  /** $1 owner, $2 token. */
  release: string
  /** $1 the most rows to delete. */
  prune: string
}

export function bookStatements(t: BookTable): BookStatements {
  const list = (due: string, limit: string) => `SELECT ${COLUMNS} FROM ${t.sql} AS b WHERE b.status = 'open'${due}
ORDER BY b.created_at, b.order_number, b.uid LIMIT ${limit}::int`
  return {
    // One statement. A row past retention (closed, not pruned yet) is forgotten, so taken afresh; a live one shows
    // the latest creation, its amount moved last among those asked, status, state and lookups kept. `prior` reads the
    // row as the statement began, only to tell known from added: a record racing in between can at worst say the
    // other of the two (a log line's level), never lose an amount (the update reads the row it locked).
    record: `WITH prior AS (SELECT b.asked_sen, ${LIVE} AS live FROM ${t.sql} AS b WHERE b.order_number = $1::text AND b.uid = $3::text),
written AS (
INSERT INTO ${t.sql} AS b (order_number, amount_sen, asked_sen, uid, kind, created_at, exchange_number, attached, next_lookup_at)
VALUES ($1::text, $2::bigint, ARRAY[$2::bigint], $3::text, $4::text, ${at('$5')}, $6::text, $7::json, ${at('$5')})
ON CONFLICT (order_number, uid) DO UPDATE SET
  amount_sen = excluded.amount_sen, kind = excluded.kind, created_at = excluded.created_at,
  attached = excluded.attached,
  asked_sen = CASE WHEN ${LIVE} THEN (${ASKED})[greatest(1, cardinality(${ASKED}) + 1 - $8::int):] ELSE excluded.asked_sen END,
  exchange_number = CASE WHEN ${LIVE} THEN coalesce(excluded.exchange_number, b.exchange_number) ELSE excluded.exchange_number END,
  status = CASE WHEN ${LIVE} THEN b.status ELSE 'open' END,
  state = CASE WHEN ${LIVE} THEN b.state END,
  lookups = CASE WHEN ${LIVE} THEN b.lookups ELSE 0 END,
  last_lookup_at = CASE WHEN ${LIVE} THEN b.last_lookup_at END,
  next_lookup_at = CASE WHEN ${LIVE} THEN b.next_lookup_at ELSE excluded.next_lookup_at END,
  expires_at = CASE WHEN ${LIVE} THEN b.expires_at END
RETURNING b.xmax = 0 AS inserted)
SELECT CASE WHEN w.inserted OR p.live = false THEN 'created' WHEN $2::bigint = ANY(p.asked_sen) THEN 'known' ELSE 'added' END AS outcome
FROM written AS w LEFT JOIN prior AS p ON true`,

    find: `SELECT ${COLUMNS} FROM ${t.sql} AS b WHERE b.order_number = $1::text AND b.uid = $2::text AND ${LIVE}`,

    findAny: `SELECT ${COLUMNS} FROM ${t.sql} AS b WHERE b.order_number = $1::text AND ${LIVE} ORDER BY b.created_at DESC, b.uid LIMIT 1`,

    // Moves only up the ranks. A 99 for a payment abandoned with no result reopens it, due at once.
    settle: `UPDATE ${t.sql} AS b SET
  state = $2::text,
  status = CASE WHEN $2::text = 'pending' THEN 'open' ELSE $2::text END,
  exchange_number = COALESCE(b.exchange_number, $3::text),
  next_lookup_at = CASE WHEN $2::text <> 'pending' THEN NULL WHEN b.status = 'open' THEN b.next_lookup_at ELSE ${at('$4')} END,
  expires_at = CASE WHEN $2::text <> 'pending' THEN now() + ${ms('$5')} END
WHERE b.order_number = $1::text AND b.uid = $6::text AND ${LIVE} AND (b.state IS NULL OR ${rank('b.state')} < ${rank('$2::text')})
RETURNING 1 AS settled`,

    stateOf: `SELECT b.state FROM ${t.sql} AS b WHERE b.order_number = $1::text AND b.uid = $2::text AND ${LIVE}`,

    // The fence is read under FOR SHARE: a new holder's acquire (an UPDATE of that row) waits for this statement
    // to commit, and one that committed first is what this statement reads, so no lookup is written under an old
    // token once a newer one was handed out. No lock row yet: no token handed out, nothing to fence.
    noteLookup: `WITH fence AS (SELECT l.token FROM ${t.locksSql} AS l WHERE l.name = ${SWEEP} FOR SHARE)
UPDATE ${t.sql} AS b SET
  lookups = b.lookups + 1,
  last_lookup_at = ${at('$3')},
  next_lookup_at = CASE WHEN $5::boolean THEN NULL ELSE ${at('$4')} END,
  status = CASE WHEN $5::boolean THEN 'abandoned' ELSE 'open' END,
  expires_at = CASE WHEN $5::boolean THEN now() + ${ms('$6')} END
WHERE b.order_number = $1::text AND b.uid = $7::text AND b.status = 'open' AND $2::bigint >= COALESCE((SELECT fence.token FROM fence), 0)
RETURNING 1 AS noted`,

    listOpen: list('', '$1'),
    listDue: list(` AND b.next_lookup_at <= ${at('$1')}`, '$2'),

    summary: `SELECT count(*)::int AS open, min(b.created_at) AS oldest FROM ${t.sql} AS b WHERE b.status = 'open'`,

    // ON CONFLICT locks the row, so concurrent acquires queue here and only the first sees the lease free.
    acquire: `INSERT INTO ${t.locksSql} AS l (name, token, owner, expires_at) VALUES (${SWEEP}, 1, $1::text, now() + ${ms('$2')})
ON CONFLICT (name) DO UPDATE SET token = l.token + 1, owner = excluded.owner, expires_at = excluded.expires_at
WHERE l.expires_at <= now()
RETURNING l.token`,

    renew: `UPDATE ${t.locksSql} AS l SET expires_at = now() + ${ms('$3')}
WHERE l.name = ${SWEEP} AND l.owner = $1::text AND l.token = $2::bigint AND l.expires_at > now()
RETURNING 1 AS renewed`,

    release: `UPDATE ${t.locksSql} AS l SET owner = NULL, expires_at = '-infinity'
WHERE l.name = ${SWEEP} AND l.owner = $1::text AND l.token = $2::bigint`,

    prune: `WITH gone AS (
  DELETE FROM ${t.sql} WHERE (order_number, uid) IN (
    SELECT b.order_number, b.uid FROM ${t.sql} AS b WHERE b.expires_at <= now() LIMIT $1::int FOR UPDATE SKIP LOCKED)
  RETURNING 1)
SELECT count(*)::int AS deleted FROM gone`,
  }
}
