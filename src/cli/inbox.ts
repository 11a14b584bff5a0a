/**
 * `fpx-collect inbox list | show | retry`: what an operator needs of inbox mode, against the PostgreSQL database
 * or the Redis server the receivers use. Opens one connection, never creates tables, never prints the URL's
 * password (or anything else of it but the host) or the messages' checksums.
 */
import type { InboxItem, InboxQueue, InboxStatus } from '../contract/inbox-queue.js'
import { INBOX_STATES } from '../contract/inbox-queue.js'
import type { PaymentState } from '../core/payment.js'
import { parseArgs, UsageError } from './args.js'
import { EXIT, helpRequested, type Io, listedTime, listingPrinter, listLimit } from './common.js'
import { openStore, scrub, storeUrl, StoreUnreachable, unreachable } from './store-url.js'

export const INBOX_HELP = `Usage: fpx-collect inbox <list | show | retry> [options]

Looks into the inbox of receivers in inbox mode (createReceiver({ store, inbox })), in PostgreSQL or Redis.

  fpx-collect inbox list [--status pending|dead] [--order-number N] [--limit 100]
      Entries waiting for their handlers or dead-lettered, oldest first.
  fpx-collect inbox show <exchange_number>
      Every entry of one payment, with its attempts, last error and fields (the checksum left out).
  fpx-collect inbox retry <exchange_number> [--state succeeded|failed|pending]
  fpx-collect inbox retry --all-dead
      Makes entries due now; dead-lettered ones start again from 0 attempts. Entries a worker holds are left alone.

Where:
  --url URL         postgres://… or redis://… (rediss://…); better: set FPX_INBOX_URL, a flag is visible in ps.
  --table NAME      PostgreSQL: the store's table option (default fpx_collect; the inbox is NAME_inbox).
  --prefix P        Redis: the store's prefix option (default fpx-collect:).
  --json            One JSON document instead of lines.

Exit codes: 0 done, 1 nothing found (or nothing to retry), 2 usage error, 3 the store could not be reached (or its
driver, pg or ioredis, is not installed).
`

const URL_ENV = 'FPX_INBOX_URL'
const STATUSES: readonly InboxStatus[] = ['pending', 'dead']

interface Opened {
  queue: InboxQueue
  close(): Promise<void>
}

async function open(url: URL, table: string | undefined, prefix: string | undefined): Promise<Opened> {
  const opened = await openStore(url, table, prefix, 'reading an inbox', 'inbox')
  if (opened.table !== undefined) {
    // The store would create a missing table; an operator's command must not, so it looks first.
    const { inboxTable } = await import('../stores/postgres/inbox-sql.js')
    const name = inboxTable(opened.table).lookup
    let found: boolean
    try {
      found = await opened.exists(name)
    } catch (error) {
      await opened.close().catch(() => {})
      throw error
    }
    if (!found) {
      await opened.close()
      throw new StoreUnreachable(`there is no inbox table ${name} in this database (no receiver in inbox mode has used it yet)`)
    }
  }
  return { queue: opened.store.openInbox(), close: () => opened.close() }
}

function line(item: InboxItem): string {
  const next = item.status === 'dead' ? `dead since ${listedTime(item.nextAttemptAt)}` : item.leasedUntil !== null ? `running until ${listedTime(item.leasedUntil)}` : `next ${listedTime(item.nextAttemptAt)}`
  return [item.id, item.status, `attempts ${item.attempts}`, item.source, `order ${item.orderNumber ?? '-'}`, `received ${listedTime(item.receivedAt)}`, next, item.lastError ?? ''].join('  ').trimEnd()
}

export async function inbox(argv: readonly string[], io: Io, env: NodeJS.ProcessEnv): Promise<number> {
  const args = parseArgs(argv, {
    url: { type: 'string' },
    table: { type: 'string' },
    prefix: { type: 'string' },
    status: { type: 'string' },
    'order-number': { type: 'string' },
    limit: { type: 'string' },
    state: { type: 'string' },
    'all-dead': { type: 'boolean' },
    json: { type: 'boolean' },
  })
  if (helpRequested(args, io, INBOX_HELP)) return EXIT.ok
  const [action, target, ...extra] = args.positionals
  if (action === undefined) throw new UsageError('say list, show or retry')
  if (!['list', 'show', 'retry'].includes(action)) throw new UsageError(`unknown inbox action "${action}"; use list, show or retry`)
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`)
  const status = args.string('status')
  if (status !== undefined && !STATUSES.includes(status as InboxStatus)) throw new UsageError('--status must be pending or dead')
  const state = args.string('state')
  if (state !== undefined && !INBOX_STATES.includes(state as PaymentState)) throw new UsageError('--state must be succeeded, failed or pending')
  if (action === 'list' && target !== undefined) throw new UsageError('list takes no exchange_number; use show')
  if (action === 'show' && target === undefined) throw new UsageError('show needs an exchange_number')
  if (action === 'retry' && (target === undefined) === !args.boolean('all-dead')) throw new UsageError('retry needs an exchange_number or --all-dead (not both)')
  const limit = listLimit(args.string('limit'))

  const url = storeUrl(args.string('url'), URL_ENV, env)
  const json = args.boolean('json')
  const print = listingPrinter(io, json)

  let opened: Opened
  try {
    opened = await open(url, args.string('table'), args.string('prefix'))
  } catch (error) {
    if (error instanceof UsageError) throw error
    io.err(`fpx-collect inbox: ${unreachable(error, url)}\n`)
    return EXIT.failure
  }
  const { queue } = opened
  try {
    if (action === 'list') {
      const items = await queue.list({ ...(status === undefined ? {} : { status: status as InboxStatus }), ...(args.string('order-number') === undefined ? {} : { orderNumber: args.string('order-number') as string }), limit })
      const counts = await queue.counts()
      print({ counts, items }, [...items.map(line), `${items.length} shown; in the inbox: ${counts.pending} pending, ${counts.dead} dead`])
      return items.length > 0 ? EXIT.ok : EXIT.negative
    }
    if (action === 'show') {
      const items = (await queue.show(target as string)).map(({ fields, ...item }) => {
        const { checksum: _checksum, ...shown } = fields
        return { ...item, fields: shown }
      })
      if (items.length === 0) {
        print({ items }, [`${target} is not in the inbox (handled already, or never received)`])
        return EXIT.negative
      }
      print({ items }, items.flatMap((item) => [line(item), ...Object.entries(item.fields).map(([name, value]) => `  ${name}: ${typeof value === 'string' ? value : JSON.stringify(value)}`)]))
      return EXIT.ok
    }
    const retried = await queue.retry(target === undefined ? { allDead: true } : { exchangeNumber: target, ...(state === undefined ? {} : { state: state as PaymentState }) })
    print({ retried }, [`${retried} ${retried === 1 ? 'entry' : 'entries'} due now`])
    return retried > 0 ? EXIT.ok : EXIT.negative
  } catch (error) {
    io.err(`fpx-collect inbox: ${scrub((error as Error).message ?? String(error), url)}\n`)
    return EXIT.failure
  } finally {
    await opened.close().catch(() => {})
  }
}
