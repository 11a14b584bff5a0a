/*
 * The PostgreSQL store's timeline: one row per entry in `<table>_timeline`, found by order_number or
 * exchange_number, deleted by prune() once past retention (counted from when the entry was written).
 */
import { MAX_TIMELINE_ENTRIES, type TimelineEntry, type TimelineQuery, timelineKey } from '../../contract/timeline.js'

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

export interface TimelineStatements {
  /** $1 the entries as a JSON array, $2 retentionMs. */
  append: string
  /** $1 the key, $2 the limit. */
  byExchange: string
  byOrder: string
  /** $1 the most rows to delete. */
  prune: string
}

export function timelineStatements(t: TimelineTable): TimelineStatements {
  const read = (column: string) =>
    `SELECT * FROM (SELECT id, ${COLUMNS} FROM ${t.sql} WHERE ${column} = $1::text AND expires_at > now()
  ORDER BY at DESC, id DESC LIMIT $2::int) AS latest ORDER BY at, id`
  return {
    // One statement for a whole batch: the entries travel as one JSON parameter.
    append: `INSERT INTO ${t.sql} (${COLUMNS}, expires_at)
SELECT to_timestamp((e->>'at')::float8 / 1000), e->>'event', e->>'exchange_number', e->>'order_number', e->>'state', e->>'source',
  e->>'attempt', (e->>'verified')::boolean, e->>'code', (e->>'status')::int, e->>'message', now() + $2::float8 * interval '1 millisecond'
FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS x(e, n)
ORDER BY x.n`,
    byExchange: read('exchange_number'),
    byOrder: read('order_number'),
    prune: `WITH gone AS (
  DELETE FROM ${t.sql} WHERE id IN (SELECT id FROM ${t.sql} WHERE expires_at <= now() LIMIT $1::int)
  RETURNING 1)
SELECT count(*)::int AS deleted FROM gone`,
  }
}

interface Row {
  at: Date | string
  event: TimelineEntry['event']
  exchange_number: string | null
  order_number: string | null
  state: TimelineEntry['state']
  source: TimelineEntry['source']
  attempt: string
  verified: boolean
  code: string | null
  status: number | null
  message: string | null
}

export function timelineParams(entries: readonly TimelineEntry[], retentionMs: number): unknown[] {
  const rows = entries.map((entry) => ({
    at: entry.at.getTime(),
    event: entry.event,
    exchange_number: entry.exchangeNumber,
    order_number: entry.orderNumber,
    state: entry.state,
    source: entry.source,
    attempt: entry.attempt,
    verified: entry.verified,
    code: entry.code,
    status: entry.status,
    message: entry.message,
  }))
  return [JSON.stringify(rows), retentionMs]
}

export function timelineQuery(statements: TimelineStatements, query: TimelineQuery): { text: string; params: unknown[] } {
  const { kind, value, limit } = timelineKey(query)
  return { text: kind === 'order' ? statements.byOrder : statements.byExchange, params: [value, Math.min(limit, MAX_TIMELINE_ENTRIES * 10)] }
}

export function toEntry(row: unknown): TimelineEntry {
  const r = row as Row
  return {
    at: r.at instanceof Date ? r.at : new Date(r.at),
    event: r.event,
    exchangeNumber: r.exchange_number,
    orderNumber: r.order_number,
    state: r.state,
    source: r.source,
    attempt: r.attempt,
    verified: r.verified,
    code: r.code,
    status: r.status === null ? null : Number(r.status),
    message: r.message,
  }
}
