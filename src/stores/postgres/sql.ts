/*
 * The PostgreSQL store's tables and schema. The claims table, `<table>`, has one row per exchange_number:
 *   handled            the payment states whose handlers completed;
 *   lease_*            the delivery working on it now (a random owner token, the state it handles, until when);
 *   expires_at         when the row may be forgotten (retention after the last completion or release), unless a
 *                      live lease still holds it;
 *   paid_order_number  set when its success was handled: the order it paid, under the merchant's API UID when the
 *   paid_uid           result named one, so that a later result of another payment of that order is told so.
 * Next to it: the inbox (inbox-sql.ts), the timeline (timeline.ts), the payment book and its lock (payment-book-schema.ts).
 */
import { inboxSchemaStatements, inboxTable } from './inbox-sql.js'
import { bookSchemaStatements, bookTable } from './payment-book-schema.js'
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

/** The index that finds the payments that paid an order, schema-qualified for to_regclass. */
const paidIndex = (table: TableName) => (table.schema === undefined ? '' : `"${table.schema}".`) + `"${table.name}_paid_idx"`

/**
 * The schema, one statement per entry. sql/fpx-collect.sql is this for the default table name (a test keeps them
 * equal). migrate() runs none once READY says the schema is complete: a new statement goes before the book's set
 * index (made last, and looked for by READY), and a column added to an existing table needs its own check there.
 */
export function schemaStatements(table: TableName): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${table.sql} (
  exchange_number text PRIMARY KEY,
  handled text[] NOT NULL DEFAULT '{}' CHECK (handled <@ ARRAY[${STATE_LIST_SQL}]),
  lease_owner text,
  lease_state text CHECK (lease_state IN (${STATE_LIST_SQL})),
  lease_expires_at timestamptz,
  expires_at timestamptz NOT NULL,
  paid_order_number text,
  paid_uid text
)`,
    `CREATE INDEX IF NOT EXISTS ${table.indexSql} ON ${table.sql} (expires_at)`,
    // A table made by a version before paid orders were kept gets the columns (null in its rows: orders paid before
    // the upgrade are not known as paid, which is what that version knew of them).
    `ALTER TABLE ${table.sql} ADD COLUMN IF NOT EXISTS paid_order_number text, ADD COLUMN IF NOT EXISTS paid_uid text`,
    `CREATE INDEX IF NOT EXISTS "${table.name}_paid_idx" ON ${table.sql} (paid_order_number) WHERE paid_order_number IS NOT NULL`,
    ...inboxSchemaStatements(inboxTable(table)),
    ...timelineSchemaStatements(timelineTable(table)),
    ...bookSchemaStatements(bookTable(table)),
  ]
}

/**
 * Whether everything schemaStatements makes is there, in one statement: $1 the relations (tables and the index
 * added last, as to_regclass takes them), $2 the claims table and $3 the inbox, which must have the columns added
 * to them last.
 */
export const READY = `SELECT bool_and(to_regclass(name) IS NOT NULL)
  AND EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($2::text) AND attname = 'paid_uid' AND NOT attisdropped)
  AND EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($3::text) AND attname = 'signer' AND NOT attisdropped) AS ready
FROM unnest($1::text[]) AS name`

/** What READY takes for `table`. */
export function readyParams(table: TableName): [string[], string, string] {
  const book = bookTable(table)
  const inbox = inboxTable(table).lookup
  return [[table.sql, paidIndex(table), inbox, timelineTable(table).sql, ...book.lookups], table.sql, inbox]
}
