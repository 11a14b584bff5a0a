/*
 * The PostgreSQL store's timeline: one row per entry in `<table>_timeline`, found by order_number or
 * exchange_number. The contract's limits (contract/timeline.ts): each write trims the payment's and the order's
 * rows to the latest MAX_TIMELINE_ENTRIES in the same statement, and the store's prune() deletes entries past
 * retention (counted from when each was written).
 */
import { MAX_TIMELINE_ENTRIES, type TimelineEntry, type TimelineQuery, timelineKey } from '../../contract/timeline.js'
import type { Query } from './client.js'

export interface TimelineTable {
  readonly sql: string
  readonly exchangeIndexSql: string
  readonly orderIndexSql: string
  readonly expiresIndexSql: string
}

/** `<table>_timeline` in the same schema, with short index suffixes that fit PostgreSQL's 63-byte names. */
export function timelineTable(table: { readonly schema: string | undefined; readonly name: string }): TimelineTable {
  const quote = (name: string) => (table.schema === undefined ? `"${name}"` : `"${table.schema}"."${name}"`)
  return {
    sql: quote(`${table.name}_timeline`),
    exchangeIndexSql: `"${table.name}_tl_ex_idx"`,
    orderIndexSql: `"${table.name}_tl_ord_idx"`,
    expiresIndexSql: `"${table.name}_tl_exp_idx"`,
  }
}

export function timelineSchemaStatements(t: TimelineTable): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${t.sql} (
  id bigserial PRIMARY KEY,
  at timestamptz NOT NULL,
  event text NOT NULL,
  exchange_number text,
  order_number text,
  state text,
  source text NOT NULL,
  attempt text NOT NULL,
  verified boolean NOT NULL,
  code text,
  status integer,
  message text,
  expires_at timestamptz NOT NULL
)`,
    `CREATE INDEX IF NOT EXISTS ${t.exchangeIndexSql} ON ${t.sql} (exchange_number, at)`,
    `CREATE INDEX IF NOT EXISTS ${t.orderIndexSql} ON ${t.sql} (order_number, at)`,
    `CREATE INDEX IF NOT EXISTS ${t.expiresIndexSql} ON ${t.sql} (expires_at)`,
  ]
}

const COLUMNS = 'at, event, exchange_number, order_number, state, source, attempt, verified, code, status, message'
/** The columns read, named as TimelineEntry names them. */
const ENTRY = 'at, event, exchange_number AS "exchangeNumber", order_number AS "orderNumber", state, source, attempt, verified, code, status, message'

/**
 * The rows of the keys just written beyond the latest `$3` (by id: the order they were written in), written before
 * this statement. The statement does not see its own inserted rows, so each key keeps `$3` minus as many as it
 * just got: a key with fewer rows than that scans them and deletes none.
 */
function beyondKept(t: string, column: string): string {
  return `SELECT old.id FROM (SELECT ${column} AS key, count(*)::int AS n FROM added WHERE ${column} IS NOT NULL GROUP BY 1) AS k
    CROSS JOIN LATERAL (SELECT id FROM ${t} WHERE ${t}.${column} = k.key ORDER BY id DESC OFFSET greatest($3::int - k.n, 0)) AS old`
}

export function timelineStatements(t: TimelineTable) {
  const read = (column: string) =>
    `SELECT ${ENTRY} FROM (SELECT id, ${COLUMNS} FROM ${t.sql} WHERE ${column} = $1::text AND expires_at > now()
  ORDER BY at DESC, id DESC LIMIT $2::int) AS latest ORDER BY at, id`
  return {
    // One statement for a whole batch: the entries travel as one JSON parameter ($1), and the keys they touched are
    // trimmed to the latest $3 (MAX_TIMELINE_ENTRIES) in the same round trip; $2 retentionMs.
    append: `WITH added AS (
  INSERT INTO ${t.sql} (${COLUMNS}, expires_at)
  SELECT to_timestamp((e->>'at')::float8 / 1000), e->>'event', e->>'exchangeNumber', e->>'orderNumber', e->>'state', e->>'source',
    e->>'attempt', (e->>'verified')::boolean, e->>'code', (e->>'status')::int, e->>'message', now() + $2::float8 * interval '1 millisecond'
  FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS x(e, n)
  ORDER BY x.n
  RETURNING exchange_number, order_number
), trimmed AS (
  DELETE FROM ${t.sql} WHERE id IN (${beyondKept(t.sql, 'exchange_number')}
    UNION ALL ${beyondKept(t.sql, 'order_number')})
  RETURNING 1
)
SELECT (SELECT count(*) FROM added)::int AS added, (SELECT count(*) FROM trimmed)::int AS trimmed`,
    // $1 the key, $2 the limit.
    byExchange: read('exchange_number'),
    byOrder: read('order_number'),
    // $1 the most rows to delete.
    prune: `WITH gone AS (
  DELETE FROM ${t.sql} WHERE id IN (SELECT id FROM ${t.sql} WHERE expires_at <= now() LIMIT $1::int)
  RETURNING 1)
SELECT count(*)::int AS deleted FROM gone`,
  }
}

export interface PostgresTimeline {
  append(entries: readonly TimelineEntry[]): Promise<void>
  read(query: TimelineQuery): Promise<TimelineEntry[]>
  /** The statement deleting entries past retention: $1 the most rows, answers { deleted }. Run by the store's prune(). */
  readonly pruneStatement: string
}

export function postgresTimeline(options: {
  query: Query
  table: TimelineTable
  retentionMs: number
  /** Resolves once the store's tables exist. */
  ready(): Promise<void>
}): PostgresTimeline {
  const { query, table, retentionMs, ready } = options
  const sql = timelineStatements(table)
  return {
    async append(entries) {
      if (entries.length === 0) return
      await ready()
      const rows = JSON.stringify(entries.map((entry) => ({ ...entry, at: entry.at.getTime() })))
      await query(sql.append, [rows, retentionMs, MAX_TIMELINE_ENTRIES])
    },

    async read(request) {
      const { kind, value, limit } = timelineKey(request)
      await ready()
      const rows = (await query(kind === 'order' ? sql.byOrder : sql.byExchange, [value, limit])) as (TimelineEntry & { at: Date | string })[]
      return rows.map((row) => ({ ...row, at: new Date(row.at) }))
    },

    pruneStatement: sql.prune,
  }
}
