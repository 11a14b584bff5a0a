/**
 * The PostgreSQL store's payment book and sweep lock: rows in `<table>_book` and `<table>_locks` (see
 * payment-book-sql.ts and book-query-sql.ts). Every operation is one statement.
 */
import type { PaymentState } from '../../core/payment.js'
import { ageBounds, listQuery, noStatuses, overviewWindow, pageOf, perHour, type SettledCount } from '../../contract/book-query.js'
import {
  type AttachedData,
  type BookedPayment,
  type BookOverview,
  type BookStatus,
  checkedUid,
  MAX_ASKED_AMOUNTS,
  openQuery,
  type RecordOutcome,
  type PaymentBook,
  type SeenKind,
  type SweepLock,
} from '../../contract/payment-book.js'
import { passFromJson, passToJson } from '../../contract/sweep-pass.js'
import { listStatement, overviewStatement } from './book-query-sql.js'
import type { BookTable } from './payment-book-schema.js'
import { bookStatements } from './payment-book-sql.js'
import type { Query } from './client.js'

export interface PostgresPaymentBookOptions {
  query: Query
  table: BookTable
  /** Resolves once the store's tables exist. */
  ready(): Promise<void>
  retentionMs: number
}

export interface PostgresPaymentBook {
  readonly book: PaymentBook
  readonly lock: SweepLock
  /**
   * A handler failure noted on its own statement (after a transactional release rolled back): $1 order_number, $2
   * uid, $3 state, $4 exchange_number, $5 now (ms), $6 to $10 the result seen, $11 the message.
   */
  readonly noteFailureStatement: string
  /** The statement deleting closed rows past retention: $1 the most rows, answers { deleted }. Run by the store's prune(). */
  readonly pruneStatement: string
}

/** A row of the book as the driver gives it (or as row_to_json writes it: dates as text). */
export interface BookRow {
  order_number: string
  amount_sen: string | number | bigint
  asked_sen: readonly (string | number | bigint)[]
  uid: string
  kind: SeenKind
  created_at: Date | string
  exchange_number: string | null
  attached: AttachedData | string
  status: BookStatus
  state: PaymentState | null
  lookups: number
  last_lookup_at: Date | string | null
  next_lookup_at: Date | string | null
  // Null in a row read before the migration added them (a claim racing a first-version process's table).
  buyer_email?: string | null
  buyer_name?: string | null
  failures?: number | null
  last_failure_at?: Date | string | null
  last_failure_state?: PaymentState | null
  last_failure_message?: string | null
  settled_at?: Date | string | null
}

const date = (value: Date | string | null | undefined) => (value === null || value === undefined ? null : new Date(value))

export function bookedPayment(row: BookRow): BookedPayment {
  return {
    orderNumber: row.order_number,
    amountSen: Number(row.amount_sen),
    askedSen: row.asked_sen.map(Number),
    uid: row.uid,
    kind: row.kind,
    createdAt: new Date(row.created_at),
    exchangeNumber: row.exchange_number,
    // json arrives parsed from pg and PGlite; text only from a client told not to parse it.
    attached: typeof row.attached === 'string' ? (JSON.parse(row.attached) as AttachedData) : row.attached,
    status: row.status,
    state: row.state,
    lookups: Number(row.lookups),
    lastLookupAt: date(row.last_lookup_at),
    nextLookupAt: date(row.next_lookup_at),
    buyerEmail: row.buyer_email ?? null,
    buyerName: row.buyer_name ?? null,
    failures: Number(row.failures ?? 0),
    lastFailure:
      row.last_failure_at == null || row.last_failure_state == null
        ? null
        : { at: new Date(row.last_failure_at), state: row.last_failure_state, message: row.last_failure_message ?? '' },
    settledAt: date(row.settled_at),
  }
}

interface OverviewRow {
  by_status: Partial<Record<BookStatus, number>> | string
  paid_failing: number
  failing: number
  open_by_age: BookOverview['openByAge'] | string
  per_hour: SettledCount[] | string
}

// json arrives parsed from pg and PGlite; text only from a client told not to parse it.
const json = <T>(value: T | string): T => (typeof value === 'string' ? (JSON.parse(value) as T) : value)

export function postgresPaymentBook(options: PostgresPaymentBookOptions): PostgresPaymentBook {
  const { query, table, retentionMs, ready } = options
  const sql = bookStatements(table)
  const overview = overviewStatement(table)
  const run = async (text: string, params: unknown[] = []) => {
    await ready()
    return query(text, params)
  }

  const book: PaymentBook = {
    async record(payment) {
      const params = [
        payment.orderNumber,
        payment.amountSen,
        checkedUid(payment.uid),
        payment.kind,
        payment.createdAt.getTime(),
        payment.exchangeNumber,
        JSON.stringify(payment.attached),
        MAX_ASKED_AMOUNTS,
        payment.buyerEmail ?? null,
        payment.buyerName ?? null,
      ]
      const [row] = (await run(sql.record, params)) as { outcome: RecordOutcome }[]
      return row?.outcome ?? 'created'
    },

    async find(orderNumber, options) {
      const [row] = (await run(sql.find, [orderNumber, options?.uid ?? null])) as BookRow[]
      return row === undefined ? undefined : bookedPayment(row)
    },

    async settle({ orderNumber, uid }, state, exchangeNumber) {
      const [row] = (await run(sql.settle, [orderNumber, state, exchangeNumber, Date.now(), retentionMs, uid])) as { at: boolean }[]
      return row?.at === true
    },

    async noteLookup({ orderNumber, uid }, note, token) {
      const abandoned = note.abandoned === true
      const next = abandoned || note.nextLookupAt === null ? null : note.nextLookupAt.getTime()
      return (await run(sql.noteLookup, [orderNumber, token, note.at.getTime(), next, abandoned, retentionMs, uid])).length > 0
    },

    async listOpen(request) {
      const { dueBy, limit } = openQuery(request)
      const rows = (await (dueBy === null ? run(sql.listOpen, [limit]) : run(sql.listDue, [dueBy, limit]))) as BookRow[]
      return rows.map(bookedPayment)
    },

    async summary() {
      const [row] = (await run(sql.summary)) as { open: number; oldest: Date | string | null }[]
      return { open: Number(row?.open ?? 0), oldestCreatedAt: date(row?.oldest ?? null) }
    },

    async list(request) {
      const checked = listQuery(request)
      const { text, params } = listStatement(table, checked)
      return pageOf(((await run(text, params)) as BookRow[]).map(bookedPayment), checked.limit)
    },

    async overview(request) {
      const window = overviewWindow(request)
      const bounds = ageBounds(Date.now())
      const [row] = (await run(overview, [window.from, window.to, bounds.hour, bounds.day, bounds.week])) as OverviewRow[]
      if (row === undefined) throw new Error('the overview statement returned no row')
      const counted = json(row.per_hour).map((count) => ({ ...count, hour: Number(count.hour) }))
      return {
        byStatus: { ...noStatuses(), ...json(row.by_status) },
        paidFailing: row.paid_failing,
        failing: row.failing,
        openByAge: json(row.open_by_age),
        perHour: perHour(window, counted),
      }
    },
  }

  const lock: SweepLock = {
    async acquire(owner, ttlMs) {
      const [row] = (await run(sql.acquire, [owner, ttlMs])) as { token: string | number }[]
      return row === undefined ? undefined : { token: Number(row.token) }
    },
    async renew(owner, token, ttlMs) {
      return (await run(sql.renew, [owner, token, ttlMs])).length > 0
    },
    async release(owner, token) {
      await run(sql.release, [owner, token])
    },
    async notePass(note) {
      await run(sql.notePass, [passToJson(note)])
    },
    async status() {
      const [row] = (await run(sql.lockStatus)) as { holder: string | null; held_until: Date | string | null; last_pass: string | null }[]
      return { holder: row?.holder ?? null, heldUntil: date(row?.held_until), lastPass: row?.last_pass == null ? null : passFromJson(row.last_pass) }
    },
  }

  return { book, lock, pruneStatement: sql.prune, noteFailureStatement: sql.noteFailure }
}
