/**
 * `fpx-collect payments list | show`: the payment book of the PostgreSQL database or Redis server the receivers use,
 * for an operator: every payment the store has seen, by status and time, what its handlers did, what the sweeper
 * did, and its timeline.
 */
import { isPaidFailing, LIST_STATUSES } from '../contract/book-query.js'
import type { BookedPayment, ListQuery, ListStatus, PaymentBook } from '../contract/payment-book.js'
import { MAX_TIMELINE_ENTRIES, type TimelineEntry } from '../contract/timeline.js'
import { creationFirst } from '../receiver/payments.js'
import { parseArgs, type ParsedArgs, UsageError } from './args.js'
import { bookOf, readTimeline, STORE_FLAGS, URL_ENV } from './book-store.js'
import { EXIT, flagTime, helpRequested, type Io, listedTime, listingPrinter, UTC_OFFSET_FLAG, utcOffset } from './common.js'
import { type OpenedStore, openStore, scrub, storeUrl, unreachable } from './store-url.js'

export const PAYMENTS_HELP = `Usage: fpx-collect payments <list | show> [options]

The payment book, in PostgreSQL or Redis: every payment the store has seen, recorded by the client at creation
(createClient({ book: receiver })) or first known from a verified result (kind result).

  fpx-collect payments list [--status S] [--from T] [--to T] [--search X] [--limit 50] [--cursor C]
      Payments newest first, a page at a time (the last line gives the next page's --cursor). --status is open,
      succeeded, failed, abandoned or paid_failing (a success whose handlers keep failing); --open is --status
      open, with how many are open in all. --from and --to bound the creation time: a date (2026-11-27), a date
      and time (2026-11-27 14:00; with Z or +08:00 to say its offset) or an age (30m, 24h, 7d ago). --search
      takes an exact order_number or exchange_number, or a buyer e-mail (any case). --limit is at most 100.
  fpx-collect payments show <order_number | exchange_number> [--uid UID]
      One payment as the book holds it, and its timeline (created, deliveries, handler failures, lookups); an
      order the book does not hold, by its timeline alone. When several credential sets recorded the order_number
      (a partner's merchants), --uid says whose; without it, the one created last.

Where:
  --url URL         postgres://… or redis://… (rediss://…); better: set FPX_STORE_URL, a flag is visible in ps.
  --table NAME      PostgreSQL: the store's table option (default fpx_collect).
  --prefix P        Redis: the store's prefix option (default fpx-collect:).
  --utc-offset O    The times' offset from UTC: +08:00 (Malaysia time) unless given (-05:00, UTC, …).
  --json            One JSON document instead of lines (times in UTC, ISO 8601).

Exit codes: 0 done, 1 nothing found, 2 usage error, 3 the store could not be reached (or its driver, pg or
ioredis, is not installed).
`

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

/** Its status as an operator must read it: a success whose handlers fail is not an open payment like the others. */
function statusText(payment: BookedPayment): string {
  const status = payment.status + (payment.state === null || payment.state === payment.status ? '' : ` (${payment.state})`)
  if (isPaidFailing(payment)) return `PAID, HANDLER FAILING (${status})`
  return payment.failures > 0 ? `${status}, handler failing` : status
}

function line(payment: BookedPayment, now: number, offset: number): string {
  return [
    payment.orderNumber,
    statusText(payment),
    `age ${age(now - payment.createdAt.getTime())}`,
    `amount ${payment.askedSen.length === 0 ? '-' : amount(payment.amountSen)}`,
    payment.kind,
    `exchange ${payment.exchangeNumber ?? '-'}`,
    `buyer ${payment.buyerEmail ?? '-'}`,
    ...(payment.failures > 0 ? [`failures ${payment.failures}`] : []),
    `lookups ${payment.lookups}`,
    `last lookup ${listedTime(payment.lastLookupAt, offset)}`,
    `next ${listedTime(payment.nextLookupAt, offset)}`,
  ].join('  ')
}

/** A payment's details under its line, for show. */
function details(payment: BookedPayment, offset: number): string[] {
  const failure = payment.lastFailure
  return [
    `  created ${listedTime(payment.createdAt, offset)}${payment.kind === 'result' ? ' (first seen in a verified result: not recorded by the client)' : ''}`,
    `  uid ${payment.uid === '' ? '- (the receiver could not tell which credential set)' : payment.uid}`,
    `  buyer ${payment.buyerName ?? '-'} <${payment.buyerEmail ?? '-'}>`,
    `  amounts asked ${payment.askedSen.length === 0 ? '-' : payment.askedSen.map(amount).join(', ')}`,
    `  settled ${listedTime(payment.settledAt, offset)}`,
    ...(failure === null ? [] : [`  handler failures ${payment.failures}; the last at ${listedTime(failure.at, offset)} handling ${failure.state}: ${failure.message}`]),
    ...Object.entries(payment.attached).map(([name, value]) => `  attached ${name}: ${String(value)}`),
  ]
}

/** A timeline entry on one line. */
export function entryLine(entry: TimelineEntry, offset: number): string {
  const where = [entry.orderNumber === null ? null : `order ${entry.orderNumber}`, entry.exchangeNumber === null ? null : `exchange ${entry.exchangeNumber}`]
  const answered = entry.status === null ? null : `answered ${entry.status}`
  return `  ${[listedTime(entry.at, offset), entry.event, entry.source, entry.state ?? '-', entry.code, entry.message, answered, ...where].filter((part) => part != null).join('  ')}`
}

/** What list asks of the book, from its flags. */
function listQuery(args: ParsedArgs, offset: number, now: number): ListQuery {
  const status = args.boolean('open') ? 'open' : args.string('status')
  if (args.boolean('open') && args.string('status') !== undefined) throw new UsageError('--open is --status open: give one of them')
  if (status !== undefined && !LIST_STATUSES.includes(status as ListStatus)) throw new UsageError(`--status must be one of ${LIST_STATUSES.join(', ')}`)
  const limit = args.string('limit')
  if (limit !== undefined && !/^(100|[1-9]\d?)$/.test(limit)) throw new UsageError('--limit must be an integer from 1 to 100')
  const [from, to, search, cursor] = [args.string('from'), args.string('to'), args.string('search'), args.string('cursor')]
  if (search !== undefined && search.trim() === '') throw new UsageError('--search needs an order_number, exchange_number or e-mail')
  return {
    ...(status === undefined ? {} : { status: status as ListStatus }),
    ...(from === undefined ? {} : { from: flagTime('--from', from, offset, now) }),
    ...(to === undefined ? {} : { to: flagTime('--to', to, offset, now) }),
    ...(search === undefined ? {} : { search: search.trim() }),
    ...(limit === undefined ? {} : { limit: Number(limit) }),
    ...(cursor === undefined ? {} : { cursor }),
  }
}

async function list(book: PaymentBook, query: ListQuery, open: boolean, io: Io, json: boolean, offset: number): Promise<number> {
  const now = Date.now()
  const page = await book.list(query)
  const summary = open ? await book.summary() : undefined
  const oldest = summary?.oldestCreatedAt == null ? null : Math.floor((now - summary.oldestCreatedAt.getTime()) / 1000)
  const lines = page.payments.map((payment) => line(payment, now, offset))
  if (summary !== undefined) lines.push(`${page.payments.length} shown; open: ${summary.open}${oldest === null ? '' : `, the oldest ${age(oldest * 1000)} old`}`)
  else lines.push(`${page.payments.length} shown`)
  if (page.next !== null) lines.push(`more: --cursor ${page.next}`)
  listingPrinter(io, json)({ ...(summary === undefined ? {} : { summary: { ...summary, oldestOpenAgeSeconds: oldest } }), payments: page.payments, next: page.next }, lines)
  return page.payments.length > 0 ? EXIT.ok : EXIT.negative
}

async function show(opened: OpenedStore, book: PaymentBook, target: string, uid: string | undefined, io: Io, json: boolean, offset: number): Promise<number> {
  const print = listingPrinter(io, json)
  // By order_number or exchange_number: the book's search, without the e-mail matches it also gives.
  const found = (await book.list({ search: target, limit: 100 })).payments.filter(
    (payment) => (payment.orderNumber === target || payment.exchangeNumber === target) && (uid === undefined || payment.uid === uid),
  )
  const payment = found.find((one) => one.orderNumber === target) ?? found[0]
  if (payment === undefined) {
    const entries = uid === undefined ? (await readTimeline(opened, target)).entries : []
    if (entries.length === 0) {
      const whose = uid === undefined ? ' nor on any timeline' : ` for uid ${uid}`
      print({ payment: null, timeline: [] }, [`${target} is not in the payment book${whose} (created elsewhere and never delivered here, or forgotten after the retention)`])
      return EXIT.negative
    }
    print({ payment: null, timeline: entries }, [`${target} is not in the payment book; its timeline:`, ...entries.map((entry) => entryLine(entry, offset))])
    return EXIT.ok
  }
  // The payment found (under --uid, that merchant's) begins the timeline: not the order's latest record.
  const { entries } = await readTimeline(opened, payment.orderNumber, true)
  const timeline = creationFirst(entries, payment, MAX_TIMELINE_ENTRIES)
  print({ payment, timeline }, [line(payment, Date.now(), offset), ...details(payment, offset), '  timeline:', ...timeline.map((entry) => entryLine(entry, offset))])
  return EXIT.ok
}

export async function payments(argv: readonly string[], io: Io, env: NodeJS.ProcessEnv): Promise<number> {
  const args = parseArgs(argv, {
    ...STORE_FLAGS,
    ...UTC_OFFSET_FLAG,
    open: { type: 'boolean' },
    status: { type: 'string' },
    from: { type: 'string' },
    to: { type: 'string' },
    search: { type: 'string' },
    limit: { type: 'string' },
    cursor: { type: 'string' },
    json: { type: 'boolean' },
    uid: { type: 'string' },
  })
  if (helpRequested(args, io, PAYMENTS_HELP)) return EXIT.ok
  const [action, target, ...extra] = args.positionals
  if (action === undefined) throw new UsageError('say list or show')
  if (action !== 'list' && action !== 'show') throw new UsageError(`unknown payments action "${action}"; use list or show`)
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`)
  if (action === 'list' && target !== undefined) throw new UsageError('list takes no order_number; use show, or list --search')
  if (action === 'show' && target === undefined) throw new UsageError('show needs an order_number or exchange_number')
  const listFlags = ['open', 'status', 'from', 'to', 'search', 'limit', 'cursor'].filter((flag) => args.string(flag) !== undefined)
  if (action === 'show' && listFlags.length > 0) throw new UsageError(`--${listFlags[0]} goes with list`)
  const uid = args.string('uid')
  if (uid !== undefined && action !== 'show') throw new UsageError('--uid goes with show')
  const offset = utcOffset(args)
  const query = action === 'list' ? listQuery(args, offset, Date.now()) : undefined
  const url = storeUrl(args.string('url'), URL_ENV, env)
  const json = args.boolean('json')

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
    if (query !== undefined) return await list(book, query, args.boolean('open'), io, json, offset)
    return await show(opened, book, target as string, uid, io, json, offset)
  } catch (error) {
    // A cursor from another query or store: the book's TypeError says so.
    if (error instanceof TypeError) throw new UsageError(error.message)
    io.err(`fpx-collect payments: ${scrub((error as Error).message ?? String(error), url)}\n`)
    return EXIT.failure
  } finally {
    await opened.close().catch(() => {})
  }
}
