/*
 * The PostgreSQL book's statements (its tables: payment-book-schema.ts), and the book's parts of a claim's completion
 * and release (claims.ts), so that a delivery writes the book in the statement it sends anyway.
 */
import type { BookTable } from './payment-book-schema.js'
import { STATE_LIST_SQL } from './state-list.js'

const ms = (param: string) => `${param}::float8 * interval '1 millisecond'`
const at = (param: string) => `to_timestamp(${param}::float8 / 1000)`
const LIVE = `(b.expires_at IS NULL OR b.expires_at > now())`
const rank = (state: string) => `array_position(ARRAY[${STATE_LIST_SQL}], ${state})`
/** The columns of a booked payment (BookRow), of the book as `b`. */
export const BOOK_COLUMNS = `b.order_number, b.amount_sen, b.asked_sen, b.uid, b.kind, b.created_at, b.exchange_number, b.attached, b.status, b.state,
  b.lookups, b.last_lookup_at, b.next_lookup_at, b.buyer_email, b.buyer_name, b.failures, b.last_failure_at, b.last_failure_state,
  b.last_failure_message, b.settled_at`
/** Every column but the key: what a row past retention takes from a record made afresh over it. */
const ALL_BUT_KEY = BOOK_COLUMNS.replace(/\s+/g, ' ')
  .split(', ')
  .map((column) => column.slice(2))
  .filter((column) => column !== 'order_number' && column !== 'uid')
const SWEEP = `'sweep'`
/** A settle that is not a completion's: no result to learn from. */
const NO_RESULT: OrderParams['seen'] = { given: 'false', uid: 'NULL', amount: 'NULL', email: 'NULL', name: 'NULL' }
/** The amounts asked, $2 moved (or added) last; the record keeps the last $8 of them. */
const ASKED = `array_remove(b.asked_sen, $2::bigint) || $2::bigint`

/**
 * The booked payment of an order: the one of credential set `uid`, or when `uid` is null the one created last,
 * whichever credential set made it (FindOptions). Parameters are given as SQL ($n).
 */
function findStatement(t: BookTable, order: string, uid: string): string {
  return `SELECT ${BOOK_COLUMNS} FROM ${t.sql} AS b
WHERE b.order_number = ${order}::text AND (${uid}::text IS NULL OR b.uid = ${uid}::text) AND ${LIVE}
ORDER BY b.created_at DESC, b.uid LIMIT 1`
}

/** The row findStatement finds, as a condition on `b` of an UPDATE. */
const foundBy = (t: BookTable, order: string, uid: string) =>
  `(b.order_number, b.uid) IN (SELECT found.order_number, found.uid FROM (${findStatement(t, order, uid)}) AS found)`

/** The booked payment (findStatement) as one json value, or null: what a claim reads with it. */
export function bookedJson(t: BookTable, order: string, uid: string): string {
  return `(SELECT row_to_json(found) FROM (${findStatement(t, order, uid)}) AS found)`
}

/** A statement's parameters, as SQL ($n), for the book's part of a completion or a release. */
export interface OrderParams {
  readonly order: string
  /** The completion's uid: null finds the order's payment created last. */
  readonly uid: string
  readonly state: string
  readonly exchange: string
  /** The application's clock, ms. */
  readonly now: string
  readonly retentionMs: string
  /** The result handled (SeenResult): whether one was given, its uid, amount (sen), buyer e-mail and name. */
  readonly seen: { readonly given: string; readonly uid: string; readonly amount: string; readonly email: string; readonly name: string }
}

/**
 * The UPDATE settling the booked payment (PaymentBook.settle; `uid` null: the order's payment created last), `now`
 * the application's clock (ms). The state moves only up the ranks; a 99 for a payment abandoned with no result
 * reopens it, due at once. Whether it moved or not, the failures of the state's rank or lower are over, and the
 * result tells the buyer the creation did not. A claim's completion runs it too, in the same statement.
 */
export function settleStatement(t: BookTable, p: OrderParams): string {
  const state = `${p.state}::text`
  const moves = `(b.state IS NULL OR ${rank('b.state')} < ${rank(state)})`
  // A failure settled while a success of the order is failing its handlers (a race with a claim taken before that
  // success came) leaves it open as a 99 does: closed, nothing would bring the success again.
  const paidFailing = `(b.failures > 0 AND b.last_failure_state = 'succeeded')`
  const final = `(${state} <> 'pending' AND NOT (${state} = 'failed' AND ${paidFailing}))`
  return `UPDATE ${t.sql} AS b SET
  state = CASE WHEN ${moves} THEN ${state} ELSE b.state END,
  status = CASE WHEN NOT ${moves} THEN b.status WHEN ${final} THEN ${state} ELSE 'open' END,
  exchange_number = CASE WHEN ${moves} THEN COALESCE(b.exchange_number, ${p.exchange}::text) ELSE b.exchange_number END,
  next_lookup_at = CASE WHEN NOT ${moves} THEN b.next_lookup_at WHEN ${final} THEN NULL WHEN b.status = 'open' THEN b.next_lookup_at ELSE ${at(p.now)} END,
  expires_at = CASE WHEN NOT ${moves} THEN b.expires_at WHEN ${final} THEN now() + ${ms(p.retentionMs)} END,
  settled_at = CASE WHEN ${moves} THEN ${at(p.now)} ELSE b.settled_at END,
  failures = CASE WHEN b.last_failure_state IS NULL OR ${rank(state)} >= ${rank('b.last_failure_state')} THEN 0 ELSE b.failures END,
  buyer_email = COALESCE(b.buyer_email, ${p.seen.email}::text),
  buyer_name = COALESCE(b.buyer_name, ${p.seen.name}::text)
WHERE ${foundBy(t, p.order, p.uid)}`
}

/**
 * The INSERT of a `result` record (an order the book does not hold, first known from the result handled), with
 * `values` by column, when `when` holds and the order has no live row. A row past retention and not pruned yet
 * is taken afresh. Two results of one unknown order completing at the same instant: the one that inserts second
 * finds the other's row live and leaves it as it is (its state shows at the order's next result or lookup).
 */
function resultRecord(t: BookTable, p: OrderParams, values: Readonly<Record<string, string>>, when: string): string {
  const amount = `${p.seen.amount}::bigint`
  const all: Record<string, string> = {
    order_number: `${p.order}::text`,
    amount_sen: `coalesce(${amount}, 0)`,
    asked_sen: `CASE WHEN ${amount} IS NULL THEN '{}'::bigint[] ELSE ARRAY[${amount}] END`,
    uid: `coalesce(${p.seen.uid}::text, '')`,
    kind: `'result'`,
    created_at: at(p.now),
    exchange_number: `${p.exchange}::text`,
    attached: `'{}'::json`,
    next_lookup_at: at(p.now),
    buyer_email: `${p.seen.email}::text`,
    buyer_name: `${p.seen.name}::text`,
    ...values,
  }
  return `INSERT INTO ${t.sql} AS b (${Object.keys(all).join(', ')})
  SELECT ${Object.values(all).join(', ')}
  WHERE ${p.seen.given}::boolean AND ${p.order}::text IS NOT NULL AND ${when} AND NOT EXISTS (${findStatement(t, p.order, p.uid)})
  ON CONFLICT (order_number, uid) DO UPDATE SET ${ALL_BUT_KEY.map((column) => `${column} = excluded.${column}`).join(', ')}
  WHERE NOT ${LIVE}`
}

/** A completion's book part (`when`: the claim was completed): the order settled, or recorded from its result in its state. */
export function completionStatements(t: BookTable, p: OrderParams, when: string): { settle: string; record: string } {
  const state = `${p.state}::text`
  const final = `${state} <> 'pending'`
  return {
    settle: `${settleStatement(t, p)} AND ${when}`,
    record: resultRecord(
      t,
      p,
      {
        status: `CASE WHEN ${final} THEN ${state} ELSE 'open' END`,
        state,
        next_lookup_at: `CASE WHEN ${final} THEN NULL ELSE ${at(p.now)} END`,
        expires_at: `CASE WHEN ${final} THEN now() + ${ms(p.retentionMs)} END`,
        settled_at: at(p.now),
      },
      when,
    ),
  }
}

/**
 * A handler failure's book part (`when`: the claim was released): counted on the order's booked payment, or on a
 * `result` record made for it, open (nothing handled yet).
 */
export function failureStatements(t: BookTable, p: OrderParams, message: string, when: string): { count: string; record: string } {
  // Abandoned (or failed, and now a success), and a result came whose handlers failed: open again and due.
  const reopens = `(b.status = 'abandoned' OR (b.status = 'failed' AND ${p.state}::text = 'succeeded'))`
  return {
    count: `UPDATE ${t.sql} AS b SET
  failures = b.failures + 1, last_failure_at = ${at(p.now)}, last_failure_state = ${p.state}::text, last_failure_message = ${message}::text,
  status = CASE WHEN ${reopens} THEN 'open' ELSE b.status END,
  next_lookup_at = CASE WHEN ${reopens} THEN ${at(p.now)} ELSE b.next_lookup_at END,
  expires_at = CASE WHEN ${reopens} THEN NULL ELSE b.expires_at END,
  buyer_email = COALESCE(b.buyer_email, ${p.seen.email}::text), buyer_name = COALESCE(b.buyer_name, ${p.seen.name}::text)
WHERE ${foundBy(t, p.order, p.uid)} AND ${when}`,
    record: resultRecord(
      t,
      p,
      { failures: '1', last_failure_at: at(p.now), last_failure_state: `${p.state}::text`, last_failure_message: `${message}::text` },
      when,
    ),
  }
}

/**
 * A failure noted on its own: a transactional store's release is the rollback of the claim's transaction, which
 * would take the count with it, so it is written after. $1 order_number, $2 uid, $3 state, $4 exchange_number,
 * $5 now (ms), $6 seen given, $7 seen uid, $8 amount, $9 e-mail, $10 name, $11 message.
 */
export function noteFailureStatement(t: BookTable): string {
  const p: OrderParams = {
    order: '$1',
    uid: '$2',
    state: '$3',
    exchange: '$4',
    now: '$5',
    retentionMs: 'NULL',
    seen: { given: '$6', uid: '$7', amount: '$8', email: '$9', name: '$10' },
  }
  const { count, record } = failureStatements(t, p, '$11', 'true')
  return `WITH counted AS (${count} RETURNING 1), recorded AS (${record} RETURNING 1)
SELECT (SELECT count(*) FROM counted)::int + (SELECT count(*) FROM recorded)::int AS noted`
}

/** The book's statements, their parameters ($n) named beside each. */
export function bookStatements(t: BookTable) {
  const list = (due: string, limit: string) => `SELECT ${BOOK_COLUMNS} FROM ${t.sql} AS b WHERE b.status = 'open'${due}
ORDER BY b.created_at, b.order_number, b.uid LIMIT ${limit}::int`
  return {
    // $1 order_number, $2 amountSen, $3 uid, $4 kind, $5 createdAt (ms), $6 exchange_number, $7 attached (JSON), $8 the
    // most amounts kept, $9 buyer e-mail, $10 buyer name; answers { outcome } (RecordOutcome). A row past retention (closed, not pruned yet) is forgotten, so taken afresh; a live one shows
    // the latest creation, its amount moved last among those asked, status, state and lookups kept. `prior` reads the
    // row as the statement began, only to tell known from added: a record racing in between can at worst say the
    // other of the two (a log line's level), never lose an amount (the update reads the row it locked).
    record: `WITH prior AS (SELECT b.asked_sen, ${LIVE} AS live FROM ${t.sql} AS b WHERE b.order_number = $1::text AND b.uid = $3::text),
written AS (
INSERT INTO ${t.sql} AS b (order_number, amount_sen, asked_sen, uid, kind, created_at, exchange_number, attached, next_lookup_at, buyer_email, buyer_name)
VALUES ($1::text, $2::bigint, ARRAY[$2::bigint], $3::text, $4::text, ${at('$5')}, $6::text, $7::json, ${at('$5')}, $9::text, $10::text)
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
  expires_at = CASE WHEN ${LIVE} THEN b.expires_at END,
  buyer_email = CASE WHEN ${LIVE} THEN coalesce(excluded.buyer_email, b.buyer_email) ELSE excluded.buyer_email END,
  buyer_name = CASE WHEN ${LIVE} THEN coalesce(excluded.buyer_name, b.buyer_name) ELSE excluded.buyer_name END,
  failures = CASE WHEN ${LIVE} THEN b.failures ELSE 0 END,
  last_failure_at = CASE WHEN ${LIVE} THEN b.last_failure_at END,
  last_failure_state = CASE WHEN ${LIVE} THEN b.last_failure_state END,
  last_failure_message = CASE WHEN ${LIVE} THEN b.last_failure_message END,
  settled_at = CASE WHEN ${LIVE} THEN b.settled_at END
RETURNING b.xmax = 0 AS inserted)
SELECT CASE WHEN w.inserted OR p.live = false THEN 'created' WHEN $2::bigint = ANY(p.asked_sen) THEN 'known' ELSE 'added' END AS outcome
FROM written AS w LEFT JOIN prior AS p ON true`,

    // $1 order_number, $2 uid or null.
    find: findStatement(t, '$1', '$2'),

    // $1 order_number, $2 state, $3 exchange_number, $4 now (ms), $5 retentionMs, $6 uid. Answers { at }: whether
    // the book stands at the state afterwards (moved now, or there already); no row for an order it does not hold.
    settle: `${settleStatement(t, { order: '$1', uid: '$6', state: '$2', exchange: '$3', now: '$4', retentionMs: '$5', seen: NO_RESULT })}
RETURNING b.state = $2::text AS at`,

    // $1 order_number, $2 token, $3 at (ms), $4 next (ms or null), $5 abandoned, $6 retentionMs, $7 uid.
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

    // $1 limit; listDue: $1 dueBy (ms), $2 limit.
    listOpen: list('', '$1'),
    listDue: list(` AND b.next_lookup_at <= ${at('$1')}`, '$2'),

    summary: `SELECT count(*)::int AS open, min(b.created_at) AS oldest FROM ${t.sql} AS b WHERE b.status = 'open'`,

    // acquire: $1 owner, $2 ttlMs; renew: $1 owner, $2 token, $3 ttlMs; release: $1 owner, $2 token.
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

    // $1 the pass as JSON text (contract/sweep-pass.ts). A lock never taken gets its row, token 0: the first
    // acquire then hands out 1, as it does without the row.
    notePass: `INSERT INTO ${t.locksSql} AS l (name, token, owner, expires_at, last_pass) VALUES (${SWEEP}, 0, NULL, '-infinity', $1::text)
ON CONFLICT (name) DO UPDATE SET last_pass = excluded.last_pass`,

    lockStatus: `SELECT CASE WHEN l.expires_at > now() THEN l.owner END AS holder, CASE WHEN l.expires_at > now() THEN l.expires_at END AS held_until,
  l.last_pass FROM ${t.locksSql} AS l WHERE l.name = ${SWEEP}`,

    noteFailure: noteFailureStatement(t),

    // $1 the most rows to delete.
    prune: `WITH gone AS (
  DELETE FROM ${t.sql} WHERE (order_number, uid) IN (
    SELECT b.order_number, b.uid FROM ${t.sql} AS b WHERE b.expires_at <= now() LIMIT $1::int FOR UPDATE SKIP LOCKED)
  RETURNING 1)
SELECT count(*)::int AS deleted FROM gone`,
  }
}
