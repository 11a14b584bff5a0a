/**
 * The PostgreSQL store's inbox (inbox mode): rows in `<table>_inbox`, taken with FOR UPDATE SKIP LOCKED under a
 * lease on the database clock. See inbox-sql.ts for the table.
 */
import type { Rendering } from '../../core/result/message.js'
import { type PaymentState, STATE_RANK } from '../../core/payment.js'
import {
  type InboxEntry,
  type InboxItem,
  type InboxQueue,
  type InboxStatus,
  parseFields,
  type TakenEntry,
} from '../../contract/inbox-queue.js'
import type { ResultSource } from '../../contract/delivery-result.js'
import { type InboxTable, inboxStatements } from './inbox-sql.js'
import type { Query } from './client.js'

export interface PostgresInboxOptions {
  query: Query
  table: InboxTable
  /** Resolves once the store's tables exist. */
  ready(): Promise<void>
}

interface ItemRow {
  exchange_number: string
  state: PaymentState
  source: ResultSource
  order_number: string | null
  status: InboxStatus
  attempts: number
  next_attempt_at: Date | string
  received_at: Date | string
  leased_until: Date | string | null
  last_error: string | null
  fields?: string
}

interface TakenRow {
  exchange_number: string
  state: PaymentState
  source: ResultSource
  order_number: string | null
  fields: string
  rendering: Rendering
  signer: string | null
  attempts: number
}

const date = (value: Date | string | null): Date | null => (value === null ? null : new Date(value))

function item(row: ItemRow): InboxItem {
  return {
    id: `${row.exchange_number}:${row.state}`,
    exchangeNumber: row.exchange_number,
    state: row.state,
    source: row.source,
    orderNumber: row.order_number,
    status: row.status,
    attempts: Number(row.attempts),
    receivedAt: date(row.received_at) as Date,
    nextAttemptAt: date(row.next_attempt_at),
    leasedUntil: date(row.leased_until),
    lastError: row.last_error,
  }
}

export function postgresInbox(options: PostgresInboxOptions): InboxQueue {
  const { query, table, ready } = options
  const sql = inboxStatements(table)

  const run = async (text: string, params: unknown[]) => {
    await ready()
    return query(text, params)
  }
  const lease = (entry: TakenEntry) => [entry.exchangeNumber, entry.state, entry.owner]

  return {
    ready,

    async enqueue(entry: InboxEntry) {
      const params = [entry.exchangeNumber, entry.state, STATE_RANK[entry.state], entry.source, entry.orderNumber, entry.fields, entry.rendering, entry.signer ?? null]
      return (await run(sql.enqueue, params)).length > 0 ? 'queued' : 'present'
    },

    async take(owner, limit, leaseMs) {
      const rows = (await run(sql.take, [owner, limit, leaseMs])) as TakenRow[]
      return rows.map((row) => ({
        exchangeNumber: row.exchange_number,
        state: row.state,
        source: row.source,
        orderNumber: row.order_number,
        fields: row.fields,
        rendering: row.rendering,
        ...(row.signer === null ? {} : { signer: row.signer }),
        attempts: Number(row.attempts),
        owner,
      }))
    },

    async finish(entry) {
      return (await run(sql.finish, lease(entry))).length > 0
    },

    async fail(entry, outcome) {
      const params = [...lease(entry), outcome.dead, outcome.delayMs, outcome.error, outcome.refund === true ? 1 : 0, entry.attempts]
      const [row] = (await run(sql.fail, params)) as { status: InboxStatus }[]
      if (row === undefined) return false
      // Asked to dead-letter it, and it is pending: it was delivered again during the attempt (see sql.fail).
      return outcome.dead && row.status === 'pending' ? 'revived' : true
    },

    async list(request = {}) {
      const rows = (await run(sql.list, [request.status ?? null, request.orderNumber ?? null, request.limit ?? 100])) as ItemRow[]
      return rows.map(item)
    },

    async show(exchangeNumber) {
      const rows = (await run(sql.show, [exchangeNumber])) as ItemRow[]
      return rows.map((row) => ({ ...item(row), fields: parseFields(row.fields ?? '{}') }))
    },

    async retry(target) {
      if ('allDead' in target) return (await run(sql.retryDead, [])).length
      const rows = (await run(sql.retryOne, [target.exchangeNumber, target.state ?? null])) as { made_due: boolean }[]
      return rows.filter((row) => row.made_due).length
    },

    async hasten() {
      const [row] = (await run(sql.hasten, [])) as { count: number }[]
      return Number(row?.count ?? 0)
    },

    async counts() {
      const rows = (await run(sql.counts, [])) as { status: InboxStatus; count: number }[]
      const counts = { pending: 0, dead: 0 }
      for (const row of rows) counts[row.status] = Number(row.count)
      return counts
    },
  }
}
