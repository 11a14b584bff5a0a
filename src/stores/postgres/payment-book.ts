/**
 * The PostgreSQL store's payment book and sweep lock: rows in `<table>_book` and `<table>_locks` (see
 * payment-book-sql.ts). record, find, noteLookup, listOpen, summary and each lock operation are one statement;
 * settle is one, and a second only when it moved nothing (to tell "already there" from "a later state booked").
 */
import type { PaymentState } from '../../core/payment.js'
import {
  type AttachedData,
  type BookedPayment,
  type BookStatus,
  checkedUid,
  type CreationKind,
  MAX_ASKED_AMOUNTS,
  openQuery,
  type RecordOutcome,
  type PaymentBook,
  type SweepLock,
} from '../../contract/payment-book.js'
import { type BookTable, bookStatements } from './payment-book-sql.js'
import type { Query } from './upkeep.js'


export interface PostgresPaymentBookOptions {
  query: Query
  table: BookTable
  /** Resolves once the book's tables exist (the store creates them on first use when missing: upkeep.ts). */
  ready(): Promise<void>
  retentionMs: number
}

export interface PostgresPaymentBook {
  readonly book: PaymentBook
  readonly lock: SweepLock
  /** The statement deleting closed rows past retention: $1 the most rows, answers { deleted }. Run by the store's prune(). */
  readonly pruneStatement: string
}

interface Row {
  order_number: string
  amount_sen: string | number | bigint
  asked_sen: readonly (string | number | bigint)[]
  uid: string
  kind: CreationKind
  created_at: Date | string
  exchange_number: string | null
  attached: AttachedData | string
  status: BookStatus
  state: PaymentState | null
  lookups: number
  last_lookup_at: Date | string | null
  next_lookup_at: Date | string | null
}

const date = (value: Date | string | null) => (value === null ? null : new Date(value))

function booked(row: Row): BookedPayment {
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
  }
}

export function postgresPaymentBook(options: PostgresPaymentBookOptions): PostgresPaymentBook {
  const { query, table, retentionMs, ready } = options
  const sql = bookStatements(table)
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
      ]
      const [row] = (await run(sql.record, params)) as { outcome: RecordOutcome }[]
      return row?.outcome ?? 'created'
    },

    async find(orderNumber, options) {
      const uid = options?.uid
      const [row] = (await (uid === undefined ? run(sql.findAny, [orderNumber]) : run(sql.find, [orderNumber, uid]))) as Row[]
      return row === undefined ? undefined : booked(row)
    },

    async settle({ orderNumber, uid }, state, exchangeNumber) {
      if ((await run(sql.settle, [orderNumber, state, exchangeNumber, Date.now(), retentionMs, uid])).length > 0) return true
      const [row] = (await run(sql.stateOf, [orderNumber, uid])) as { state: PaymentState | null }[]
      return row?.state === state
    },

    async noteLookup({ orderNumber, uid }, note, token) {
      const abandoned = note.abandoned === true
      const next = abandoned || note.nextLookupAt === null ? null : note.nextLookupAt.getTime()
      return (await run(sql.noteLookup, [orderNumber, token, note.at.getTime(), next, abandoned, retentionMs, uid])).length > 0
    },

    async listOpen(request) {
      const { dueBy, limit } = openQuery(request)
      const rows = (await (dueBy === null ? run(sql.listOpen, [limit]) : run(sql.listDue, [dueBy, limit]))) as Row[]
      return rows.map(booked)
    },

    async summary() {
      const [row] = (await run(sql.summary)) as { open: number; oldest: Date | string | null }[]
      return { open: Number(row?.open ?? 0), oldestCreatedAt: date(row?.oldest ?? null) }
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
  }

  return { book, lock, pruneStatement: sql.prune }
}
