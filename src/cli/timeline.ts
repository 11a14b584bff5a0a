/**
 * `fpx-collect timeline <order_number | exchange_number>`: what happened to a payment, oldest first, from the store
 * the receivers share: created (when the client recorded it), each delivery and its answer, each handler failure,
 * the sweeper's lookups, in the operator's local time.
 */
import type { PaymentBook } from '../contract/payment-book.js'
import { withCreation } from '../receiver/payments.js'
import { parseArgs, UsageError } from './args.js'
import { bookOf, readTimeline, STORE_FLAGS, URL_ENV } from './book-store.js'
import { EXIT, helpRequested, type Io, listingPrinter, UTC_OFFSET_FLAG, utcOffset } from './common.js'
import { entryLine } from './payments.js'
import { type OpenedStore, openStore, scrub, storeUrl, StoreUnreachable, unreachable } from './store-url.js'

export const TIMELINE_HELP = `Usage: fpx-collect timeline <order_number | exchange_number> [options]

A payment's life, oldest first: created (what the client recorded), each delivery (callback, redirect, an inbox
retry or a sweeper's hand-over) with its verification and the answer given, handler failures, the sweeper's
lookups. Read by order_number, else by exchange_number. Refused deliveries are kept only in the receiving
process (receiver.refusals()), never in the store.

  --url URL         postgres://… or redis://… (rediss://…); better: set FPX_STORE_URL, a flag is visible in ps.
  --table NAME      PostgreSQL: the store's table option (default fpx_collect).
  --prefix P        Redis: the store's prefix option (default fpx-collect:).
  --utc-offset O    The times' offset from UTC: +08:00 (Malaysia time) unless given (-05:00, UTC, …).
  --json            The entries as JSON (times in UTC, ISO 8601).

Exit codes: 0 done, 1 nothing kept for it, 2 usage error, 3 the store could not be reached.
`

export async function timeline(argv: readonly string[], io: Io, env: NodeJS.ProcessEnv): Promise<number> {
  const args = parseArgs(argv, { ...STORE_FLAGS, ...UTC_OFFSET_FLAG, json: { type: 'boolean' } })
  if (helpRequested(args, io, TIMELINE_HELP)) return EXIT.ok
  const [target, ...extra] = args.positionals
  if (target === undefined || target === '') throw new UsageError('say which payment: an order_number or an exchange_number')
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`)
  const offset = utcOffset(args)
  const url = storeUrl(args.string('url'), URL_ENV, env)

  let opened: OpenedStore
  try {
    opened = await openStore(url, args.string('table'), args.string('prefix'), 'reading the timeline', 'timeline')
  } catch (error) {
    if (error instanceof UsageError) throw error
    io.err(`fpx-collect timeline: ${unreachable(error, url)}\n`)
    return EXIT.failure
  }
  try {
    const { query, entries } = await readTimeline(opened, target)
    // The book gives the `created` entry; a store without one (or a database where none was made) has none to give.
    const book = await bookOf(opened).catch((error: unknown): PaymentBook | undefined => {
      if (error instanceof StoreUnreachable) return undefined
      throw error
    })
    const life = await withCreation(entries, query, book)
    const lines = life.length === 0 ? [`nothing is kept for ${target}: no delivery of it reached a receiver of this store, and the book does not hold it`] : life.map((entry) => entryLine(entry, offset).trimStart())
    listingPrinter(io, args.boolean('json'))({ timeline: life }, lines)
    return life.length > 0 ? EXIT.ok : EXIT.negative
  } catch (error) {
    io.err(`fpx-collect timeline: ${scrub((error as Error).message ?? String(error), url)}\n`)
    return EXIT.failure
  } finally {
    await opened.close().catch(() => {})
  }
}
