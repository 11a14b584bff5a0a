/*
 * The tables of the PostgreSQL store's payment book, next to the claims table:
 *
 * `<table>_book`, one row per order_number and credential set (uid) recorded at creation (order numbers are unique
 * per merchant only):
 *   amount_sen … attached   the payment as it was last asked (attached as json: kept as given, key order included);
 *   asked_sen               every amount asked for the order, oldest first, the latest last (at most 10);
 *   status, state           open until a final result (or the sweeper's abandon) closes it; the latest state handled;
 *   lookups, *_lookup_at    the sweeper's lookups so far, the last one, when the next is due (null once closed);
 *   expires_at              null while open; once closed, when the row is forgotten (retention after the close);
 *   buyer_email, buyer_name from the creation, else from the first result that carried them (e-mail collated "C",
 *                           so that lower() folds ASCII letters only, as the other stores do);
 *   failures, last_failure_* handler failures since a state of their rank was handled, and the latest one;
 *   settled_at              when the latest state was handled.
 * A row of kind `result` is an order first known from a verified result (contract/payment-book.ts). The columns
 * from buyer_email on came after the first version: migrate() adds them to its tables, and lets kind take `result`.
 * order_number and uid are collated "C", so that open payments created at the same instant list in byte order, as
 * the other stores list them, whatever the database's collation. The key leads with order_number: a find without
 * uid reads the order's rows through it.
 *
 * `<table>_locks`, one row per lock (the sweeper's, `sweep`): the fencing token of its latest holder, which only
 * grows, the holder, until when its lease runs (-infinity once released), and the sweeper's latest pass (JSON text).
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
  /** Index names, by what they serve (created in the table's schema). */
  readonly indexSql: Readonly<Record<'open' | 'expires' | 'created' | 'status' | 'failing' | 'exchange' | 'email' | 'settled', string>>
  /** The two tables and the index made last, for to_regclass(). */
  readonly lookups: readonly string[]
}

/** `<table>_book` and `<table>_locks` in the same schema; suffixes that fit tableName()'s room for them. */
export function bookTable(table: BaseTable): BookTable {
  const quote = (name: string) => (table.schema === undefined ? `"${name}"` : `"${table.schema}"."${name}"`)
  const [book, locks] = [quote(`${table.name}_book`), quote(`${table.name}_locks`)]
  const index = (suffix: string) => `"${table.name}_book_${suffix}_idx"`
  return {
    sql: book,
    locksSql: locks,
    indexSql: {
      open: index('open'),
      expires: index('exp'),
      created: index('new'),
      status: index('st'),
      failing: index('fail'),
      exchange: index('ex'),
      email: index('mail'),
      settled: index('set'),
    },
    lookups: [book, locks, quote(`${table.name}_book_set_idx`)],
  }
}

/** The columns added after the first version, as CREATE TABLE and the migration's ALTER TABLE both write them. */
const ADDED_COLUMNS = [
  'buyer_email text COLLATE "C"',
  'buyer_name text',
  'failures integer NOT NULL DEFAULT 0',
  'last_failure_at timestamptz',
  `last_failure_state text CHECK (last_failure_state IN (${STATE_LIST_SQL}))`,
  'last_failure_message text',
  'settled_at timestamptz',
]
const KINDS_SQL = `'form', 'payment', 'session', 'result'`

export function bookSchemaStatements(t: BookTable): string[] {
  const literal = (text: string) => `'${text.replace(/'/g, "''")}'`
  return [
    `CREATE TABLE IF NOT EXISTS ${t.sql} (
  order_number text COLLATE "C" NOT NULL,
  amount_sen bigint NOT NULL,
  asked_sen bigint[] NOT NULL,
  uid text COLLATE "C" NOT NULL,
  kind text NOT NULL CHECK (kind IN (${KINDS_SQL})),
  created_at timestamptz NOT NULL,
  exchange_number text,
  attached json NOT NULL,
  status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'succeeded', 'failed', 'abandoned')),
  state text CHECK (state IN (${STATE_LIST_SQL})),
  lookups integer NOT NULL DEFAULT 0,
  last_lookup_at timestamptz,
  next_lookup_at timestamptz,
  expires_at timestamptz,
${ADDED_COLUMNS.map((column) => `  ${column},`).join('\n')}
  PRIMARY KEY (order_number, uid)
)`,
    // The sweeper's questions: open payments oldest first, filtered by when they are due; the closed rows stay out.
    `CREATE INDEX IF NOT EXISTS ${t.indexSql.open} ON ${t.sql} (created_at, order_number, uid) WHERE status = 'open'`,
    `CREATE INDEX IF NOT EXISTS ${t.indexSql.expires} ON ${t.sql} (expires_at)`,
    // A book made by the first version: the columns it lacks, and a kind that takes `result` (its CHECK replaced,
    // under the name PostgreSQL gave it).
    `ALTER TABLE ${t.sql} ${ADDED_COLUMNS.map((column) => `ADD COLUMN IF NOT EXISTS ${column}`).join(', ')}`,
    `DO $$ DECLARE found text; BEGIN
  SELECT c.conname INTO found FROM pg_constraint AS c WHERE c.conrelid = ${literal(t.sql)}::regclass AND c.contype = 'c'
    AND pg_get_constraintdef(c.oid) LIKE '%kind%' AND pg_get_constraintdef(c.oid) NOT LIKE '%result%';
  IF found IS NOT NULL THEN
    EXECUTE format('ALTER TABLE ${t.sql.replace(/'/g, "''")} DROP CONSTRAINT %I, ADD CONSTRAINT %I CHECK (kind IN (${KINDS_SQL.replace(/'/g, "''")}))', found, found);
  END IF;
END $$`,
    `CREATE TABLE IF NOT EXISTS ${t.locksSql} (
  name text PRIMARY KEY,
  token bigint NOT NULL,
  owner text,
  expires_at timestamptz NOT NULL,
  last_pass text
)`,
    `ALTER TABLE ${t.locksSql} ADD COLUMN IF NOT EXISTS last_pass text`,
    // The operator's questions (book-query-sql.ts): pages newest first, of every payment or of one status, of the
    // successes whose handlers fail; a search by exchange_number or e-mail (order_number leads the key); the hours.
    `CREATE INDEX IF NOT EXISTS ${t.indexSql.created} ON ${t.sql} (created_at, order_number, uid)`,
    `CREATE INDEX IF NOT EXISTS ${t.indexSql.status} ON ${t.sql} (status, created_at, order_number, uid)`,
    `CREATE INDEX IF NOT EXISTS ${t.indexSql.failing} ON ${t.sql} (created_at, order_number, uid) WHERE failures > 0`,
    `CREATE INDEX IF NOT EXISTS ${t.indexSql.exchange} ON ${t.sql} (exchange_number)`,
    `CREATE INDEX IF NOT EXISTS ${t.indexSql.email} ON ${t.sql} (lower(buyer_email))`,
    // Made last: READY looks for it.
    `CREATE INDEX IF NOT EXISTS ${t.indexSql.settled} ON ${t.sql} (settled_at)`,
  ]
}
