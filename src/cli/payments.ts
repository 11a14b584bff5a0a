/**
 * `fpx-collect payments list --open | show`: the payment book of the PostgreSQL database or Redis server the
 * receivers use, for an operator: which payments are still open, how old, and what the sweeper last did.
 */
import type { BookedPayment, PaymentBook } from '../contract/payment-book.js'
import { timelineKey } from '../contract/timeline.js'
import { creationFirst } from '../receiver/payments.js'
import { parseArgs, UsageError } from './args.js'
import { EXIT, helpRequested, type Io, listedTime, listingPrinter, listLimit } from './common.js'
import { type OpenedStore, openStore, scrub, storeUrl, StoreUnreachable, unreachable } from './store-url.js'

export const PAYMENTS_HELP = `Usage: fpx-collect payments <list --open | show> [options]

The payment book: payments the client recorded at creation (createClient({ book: receiver })), in PostgreSQL or
Redis.

  fpx-collect payments list --open [--limit 100]
      Open payments (no final result yet, or pending approval), oldest first, with their age and last lookup,
      and how many are open in all.
  fpx-collect payments show <order_number> [--uid UID]
      One payment as recorded, and its timeline (created, deliveries, lookups). When several credential sets
      recorded the order_number (a partner's merchants), --uid says whose; without it, the one created last.

Where:
  --url URL         postgres://… or redis://… (rediss://…); better: set FPX_STORE_URL, a flag is visible in ps.
  --table NAME      PostgreSQL: the store's table option (default fpx_collect).
  --prefix P        Redis: the store's prefix option (default fpx-collect:).
  --json            One JSON document instead of lines.

Exit codes: 0 done, 1 nothing open (or no such payment), 2 usage error, 3 the store could not be reached (or its
driver, pg or ioredis, is not installed).
`

const URL_ENV = 'FPX_STORE_URL'

/** An age as an operator reads it: 45s, 12m, 2h05m, 3d04h. */
export function age(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000))
  if (seconds < 60) return `${seconds}s`
  const minutes = Math.floor(seconds / 60)
  if (minutes < 60) return `${minutes}m`
  const hours = Math.floor(minutes / 60)
  if (hours < 24) return `${hours}h${String(minutes % 60).padStart(2, '0')}m`
  return `${Math.floor(hours / 24)}d${String(hours % 24).padStart(2, '0')}h`
}

const amount = (sen: number) => `${Math.floor(sen / 100)}.${String(sen % 100).padStart(2, '0')}`

function line(payment: BookedPayment, now: number): string {
  return [
    payment.orderNumber,
    payment.status + (payment.state === null ? '' : ` (${payment.state})`),
    `age ${age(now - payment.createdAt.getTime())}`,
    `amount ${amount(payment.amountSen)}`,
    payment.kind,
    `exchange ${payment.exchangeNumber ?? '-'}`,
    `lookups ${payment.lookups}`,
    `last lookup ${listedTime(payment.lastLookupAt)}`,
    `next ${listedTime(payment.nextLookupAt)}`,
  ].join('  ')
}

async function bookOf(opened: OpenedStore): Promise<PaymentBook> {
  if (opened.table !== undefined) {
    // The store would create a missing table; an operator's command must not, so it looks first.
    const { bookTable } = await import('../stores/postgres/payment-book-sql.js')
    const name = bookTable(opened.table).sql
    if (!(await opened.exists(name))) throw new StoreUnreachable(`there is no payment book table ${name} in this database (no client has recorded a payment in it yet)`)
  }
  const book = typeof opened.store.paymentBook === 'function' ? opened.store.paymentBook() : undefined
  if (book === undefined) throw new StoreUnreachable('this store keeps no payment book')
  return book
}

export async function payments(argv: readonly string[], io: Io, env: NodeJS.ProcessEnv): Promise<number> {
  const args = parseArgs(argv, {
    url: { type: 'string' },
    table: { type: 'string' },
    prefix: { type: 'string' },
    open: { type: 'boolean' },
    limit: { type: 'string' },
    json: { type: 'boolean' },
    uid: { type: 'string' },
  })
  if (helpRequested(args, io, PAYMENTS_HELP)) return EXIT.ok
  const [action, target, ...extra] = args.positionals
  if (action === undefined) throw new UsageError('say list --open or show')
  if (action !== 'list' && action !== 'show') throw new UsageError(`unknown payments action "${action}"; use list --open or show`)
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`)
  if (action === 'list' && !args.boolean('open')) throw new UsageError('list takes --open: the book lists the payments still open')
  if (action === 'list' && target !== undefined) throw new UsageError('list takes no order_number; use show')
  if (action === 'show' && target === undefined) throw new UsageError('show needs an order_number')
  const uid = args.string('uid')
  if (uid !== undefined && action !== 'show') throw new UsageError('--uid goes with show')
  const limit = listLimit(args.string('limit'))
  const url = storeUrl(args.string('url'), URL_ENV, env)
  const json = args.boolean('json')
  const print = listingPrinter(io, json)

  let opened: OpenedStore
  let book: PaymentBook
  try {
    opened = await openStore(url, args.string('table'), args.string('prefix'), 'reading the payment book', 'payments')
    book = await bookOf(opened).catch(async (error: unknown) => {
      await opened.close().catch(() => {})
      throw error
    })
  } catch (error) {
    if (error instanceof UsageError) throw error
    io.err(`fpx-collect payments: ${unreachable(error, url)}\n`)
    return EXIT.failure
  }
  try {
    const now = Date.now()
    if (action === 'list') {
      const [open, summary] = await Promise.all([book.listOpen({ limit }), book.summary()])
      const oldest = summary.oldestCreatedAt === null ? null : Math.floor((now - summary.oldestCreatedAt.getTime()) / 1000)
      print(
        { summary: { ...summary, oldestOpenAgeSeconds: oldest }, payments: open },
        [...open.map((payment) => line(payment, now)), `${open.length} shown; open: ${summary.open}${oldest === null ? '' : `, the oldest ${age(oldest * 1000)} old`}`],
      )
      return open.length > 0 ? EXIT.ok : EXIT.negative
    }
    const payment = await book.find(target as string, uid === undefined ? undefined : { uid })
    if (payment === undefined) {
      const whose = uid === undefined ? '' : ` for uid ${uid}`
      print({ payment: null }, [`${target} is not in the payment book${whose} (created elsewhere, or never recorded)`])
      return EXIT.negative
    }
    // The payment found (under --uid, that merchant's) begins the timeline: not the order's latest record.
    const query = { orderNumber: payment.orderNumber }
    const stored = typeof opened.store.readTimeline === 'function' ? await opened.store.readTimeline(query) : []
    const timeline = creationFirst(stored, payment, timelineKey(query).limit)
    print({ payment, timeline }, [
      line(payment, now),
      ...Object.entries(payment.attached).map(([name, value]) => `  attached ${name}: ${String(value)}`),
      ...timeline.map((entry) => `  ${[entry.at.toISOString(), entry.event, entry.source, entry.state ?? '-', entry.code, entry.message].filter((part) => part != null).join('  ')}`),
    ])
    return EXIT.ok
  } catch (error) {
    io.err(`fpx-collect payments: ${scrub((error as Error).message ?? String(error), url)}\n`)
    return EXIT.failure
  } finally {
    await opened.close().catch(() => {})
  }
}
