/**
 * `fpx-collect console --store <url>`: the operator's console over the PostgreSQL database or Redis server a fleet
 * of receivers shares, served on 127.0.0.1 to the one browser that opens the printed one-time link.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { userInfo } from 'node:os'
import { consoleHandler } from '../console/console.js'
import { localSessions } from '../console/local-sessions.js'
import { consoleSettings } from '../console/options.js'
import { type StoreParts, storeSource } from '../console/source.js'
import { parseOffset } from '../core/time.js'
import { nodeListener } from '../http/node-fetch.js'
import { parseArgs, UsageError } from './args.js'
import { EXIT, helpRequested, type Io } from './common.js'
import { type OpenedStore, openStore, scrub, storeUrl, unreachable } from './store-url.js'

export const CONSOLE_HELP = `Usage: fpx-collect console --store <url> [options]

Serves the operator's console (overview, search, each payment's life, dead letters with retry) for the store your
receivers share, on 127.0.0.1 only, and prints a one-time link: opening it signs that browser in (a session
cookie); the link then stops working. Retries are noted on each payment's timeline with your name. Refused
deliveries and "look up now" need the receiving process: mount the console in your app for those
(fpxConsole in fpx-collect/express, /fastify, /koa, /web; docs/operations.md).

  --store URL        postgres://… or redis://… (rediss://…); better: set FPX_STORE_URL, a flag is visible in ps.
                     (--url is the same flag, as the other commands spell it.)
  --table NAME       PostgreSQL: the store's table option (default fpx_collect).
  --prefix P         Redis: the store's prefix option (default fpx-collect:).
  --port N           Port on 127.0.0.1 (default 0: a free one, printed).
  --utc-offset OFF   Show times at this offset (default +08:00, Malaysia time; UTC, -05:30, ...).
  --name NAME        Your name on the timeline of what you retry (default: your user name on this machine).

Exit codes: 0 stopped by a signal, 2 usage error, 3 the store could not be reached (or its driver, pg or ioredis,
is not installed) or the port could not be opened.
`

const URL_ENV = 'FPX_STORE_URL'

/** The user running the command, for the timeline; a container may have no name for its user. */
function localUser(): string {
  try {
    return userInfo().username
  } catch {
    return 'an operator'
  }
}

/** Resolves on SIGINT or SIGTERM. */
function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      process.off('SIGINT', stop)
      process.off('SIGTERM', stop)
      resolve(signal)
    }
    process.on('SIGINT', stop)
    process.on('SIGTERM', stop)
  })
}

/** What of the store the console may read: an operator's command never creates PostgreSQL tables, so it looks first. */
async function partsOf(opened: OpenedStore, url: URL): Promise<StoreParts> {
  const describe = (error: unknown) => scrub(error instanceof Error ? error.message : String(error), url)
  if (opened.table !== undefined) {
    const { bookTable } = await import('../stores/postgres/payment-book-schema.js')
    if (!(await opened.exists(bookTable(opened.table).sql)))
      return { book: undefined, inbox: undefined, sweepLock: undefined, timeline: {}, describe: () => 'there are no fpx-collect tables in this database yet (no receiver has used it)' }
  }
  const { store } = opened
  return { book: store.paymentBook(), inbox: store.openInbox(), sweepLock: store.sweepLock(), timeline: store, describe }
}

export async function consoleCommand(argv: readonly string[], io: Io, env: NodeJS.ProcessEnv): Promise<number> {
  const args = parseArgs(argv, {
    store: { type: 'string' },
    url: { type: 'string' },
    table: { type: 'string' },
    prefix: { type: 'string' },
    port: { type: 'string' },
    'utc-offset': { type: 'string' },
    name: { type: 'string' },
  })
  if (helpRequested(args, io, CONSOLE_HELP)) return EXIT.ok
  if (args.positionals.length > 0) throw new UsageError(`unexpected argument "${args.positionals[0]}"`)
  if (args.string('store') !== undefined && args.string('url') !== undefined) throw new UsageError('give --store or --url, not both')
  const port = Number(args.string('port') ?? '0')
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError('--port is a whole number from 0 to 65535')
  let offsetMinutes: number
  try {
    offsetMinutes = parseOffset(args.string('utc-offset') ?? '+08:00')
  } catch (error) {
    throw new UsageError(`--utc-offset: ${(error as Error).message}`)
  }
  const name = args.string('name') ?? `${localUser()} (fpx-collect console)`
  const url = storeUrl(args.string('store') ?? args.string('url'), URL_ENV, env)

  let opened: OpenedStore
  let parts: StoreParts
  try {
    opened = await openStore(url, args.string('table'), args.string('prefix'), 'the console', 'console')
    parts = await partsOf(opened, url).catch(async (error: unknown) => {
      await opened.close().catch(() => {})
      throw error
    })
  } catch (error) {
    if (error instanceof UsageError) throw error
    io.err(`fpx-collect console: ${unreachable(error, url)}\n`)
    return EXIT.failure
  }
  const sessions = localSessions(name)
  const handler = consoleHandler(storeSource(parts), consoleSettings({ authorize: sessions.authorize, utcOffset: offsetMinutes }))
  const server = createServer(nodeListener(async (request) => sessions.login(request) ?? handler(request)))
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, '127.0.0.1', () => resolve())
    })
  } catch (error) {
    io.err(`fpx-collect console: cannot listen on 127.0.0.1:${port}: ${(error as Error).message}\n`)
    await opened.close().catch(() => {})
    return EXIT.failure
  }
  const { port: bound } = server.address() as AddressInfo
  io.out(
    `fpx-collect console for ${url.protocol}//${url.host}\n` +
      `  open  http://127.0.0.1:${bound}${sessions.loginPath}\n` +
      '  (a one-time link: it signs the first browser that opens it in, then stops working)\n' +
      'Press Ctrl+C to stop.\n',
  )
  const signal = await untilSignal()
  await new Promise<void>((resolve) => {
    server.close(() => resolve())
    server.closeAllConnections()
  })
  await opened.close().catch(() => {})
  io.out(`stopped (${signal})\n`)
  return EXIT.ok
}
