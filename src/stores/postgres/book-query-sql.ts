/*
 * The operator's questions to the PostgreSQL book (PaymentBook.list and overview), each one statement answered from
 * the book's indexes (payment-book-schema.ts): a page is a backward walk of the index of its status (or of every
 * payment, or of the failing ones) from the cursor on; a search reads the key, the exchange_number index and the
 * e-mail index. A list's statement names only the filters it was given, so that each shape is planned for itself.
 */
import type { CheckedList } from '../../contract/book-query.js'
import type { BookTable } from './payment-book-schema.js'
import { BOOK_COLUMNS } from './payment-book-sql.js'

const at = (param: string) => `to_timestamp(${param}::float8 / 1000)`
const LIVE = `(b.expires_at IS NULL OR b.expires_at > now())`

/** The statement of a page of `query`, and its parameters. */
export function listStatement(t: BookTable, query: CheckedList): { text: string; params: unknown[] } {
  const params: unknown[] = []
  const param = (value: unknown, type: string) => `$${params.push(value)}::${type}`
  const where = [LIVE]
  if (query.status === 'paid_failing') where.push(`b.failures > 0 AND b.last_failure_state = 'succeeded'`)
  else if (query.status !== undefined) where.push(`b.status = ${param(query.status, 'text')}`)
  if (query.from !== undefined) where.push(`b.created_at >= ${at(param(query.from, 'float8'))}`)
  if (query.to !== undefined) where.push(`b.created_at < ${at(param(query.to, 'float8'))}`)
  if (query.search !== undefined) {
    const term = param(query.search, 'text')
    where.push(`(b.order_number = ${term} OR b.exchange_number = ${term} OR lower(b.buyer_email) = ${param(query.searchEmail, 'text')})`)
  }
  if (query.after !== undefined) {
    const { createdAt, orderNumber, uid } = query.after
    where.push(`(b.created_at, b.order_number, b.uid) < (${at(param(createdAt, 'float8'))}, ${param(orderNumber, 'text')}, ${param(uid, 'text')})`)
  }
  const text = `SELECT ${BOOK_COLUMNS} FROM ${t.sql} AS b
WHERE ${where.join('\n  AND ')}
ORDER BY b.created_at DESC, b.order_number DESC, b.uid DESC LIMIT ${param(query.limit + 1, 'int')}`
  return { text, params }
}

/**
 * The overview, one row: $1 from, $2 to, then the creation times that part the open payments' ages (ageBounds): $3
 * an hour ago, $4 a day ago, $5 a week ago (ms). by_status (json object), paid_failing, failing, open_by_age (json
 * object), per_hour (json array of { hour (ms), state, count }).
 */
export function overviewStatement(t: BookTable): string {
  const window = (column: string) => `b.${column} >= ${at('$1')} AND b.${column} < ${at('$2')}`
  const [hour, day, week] = [at('$3'), at('$4'), at('$5')]
  return `SELECT
  (SELECT coalesce(json_object_agg(s.status, s.n), '{}') FROM (
    SELECT b.status, count(*)::int AS n FROM ${t.sql} AS b WHERE ${window('created_at')} AND ${LIVE} GROUP BY b.status) AS s) AS by_status,
  (SELECT count(*)::int FROM ${t.sql} AS b WHERE b.failures > 0 AND b.last_failure_state = 'succeeded' AND ${LIVE}) AS paid_failing,
  (SELECT count(*)::int FROM ${t.sql} AS b WHERE b.failures > 0 AND ${LIVE}) AS failing,
  (SELECT json_build_object(
    'underHour', count(*) FILTER (WHERE b.created_at > ${hour}),
    'underDay', count(*) FILTER (WHERE b.created_at <= ${hour} AND b.created_at > ${day}),
    'underWeek', count(*) FILTER (WHERE b.created_at <= ${day} AND b.created_at > ${week}),
    'older', count(*) FILTER (WHERE b.created_at <= ${week}))
    FROM ${t.sql} AS b WHERE b.status = 'open') AS open_by_age,
  (SELECT coalesce(json_agg(json_build_object('hour', extract(epoch FROM h.hour)::float8 * 1000, 'state', h.state, 'count', h.count)), '[]') FROM (
    SELECT date_trunc('hour', b.settled_at AT TIME ZONE 'UTC') AS hour, b.state, count(*)::int AS count
    FROM ${t.sql} AS b WHERE ${window('settled_at')} AND b.state IS NOT NULL AND ${LIVE} GROUP BY 1, 2) AS h) AS per_hour`
}
