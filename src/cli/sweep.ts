/**
 * `fpx-collect sweep --receiver ./receiver.mjs`: one sweep on the operator's schedule (cron, a job runner), with
 * the merchant's own receiver: its store, its API client and, above all, its handlers, which run for what the
 * sweep finds. The module exports the receiver (default or `receiver`), or a function that makes it, and may
 * export `close()` to end its connections; the command exits when the sweep is done.
 */
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Receiver, SweepReport } from '../receiver/receiver.js'
import { parseArgs, UsageError } from './args.js'
import { EXIT, helpRequested, type Io, oneLine } from './common.js'

export const SWEEP_HELP = `Usage: fpx-collect sweep --receiver <module> [--json]

One pass of the sweeper, with your receiver's handlers: reads the service's recent successes (the transactions
list) and hands over those of open payments, then looks up the open payments that are due through the status
API: payments whose redirect and callback were both lost, and B2B1 payments still at 99. Closes payments past
their horizon as abandoned. Prints what it did and names each failing order with its message. Does nothing
while another process sweeps the same store.

  --receiver FILE   A module (.mjs/.js; .ts under tsx) exporting your receiver as default or as \`receiver\`
                    (createReceiver with its store, client and handlers), or a function returning it; it may
                    export close() to end its store connections. Give the receiver sweep: { inProcess: false }
                    when this command is how you sweep.
  --json            The report as JSON.

Exit codes: 0 swept, 1 another process is sweeping (nothing done), 2 usage error, 3 the sweep could not run or
some lookups failed.
`

type SweepingReceiver = Pick<Receiver<unknown>, 'sweep' | 'close'>

const isReceiver = (value: unknown): value is SweepingReceiver =>
  typeof (value as SweepingReceiver | null)?.sweep === 'function' && typeof (value as SweepingReceiver | null)?.close === 'function'

async function load(path: string): Promise<{ receiver: SweepingReceiver; close?: () => unknown }> {
  // A wrong path is the command line's fault; a module that throws while it loads (its database down, a package
  // missing) could not run, as when its factory throws.
  if (!existsSync(resolve(path))) throw new UsageError(`no file at ${path}`)
  let module: Record<string, unknown>
  try {
    module = (await import(pathToFileURL(resolve(path)).href)) as Record<string, unknown>
  } catch (error) {
    throw new Error(`cannot load ${path}: ${(error as Error)?.message ?? String(error)}`, { cause: error })
  }
  let found = module.receiver ?? module.default
  if (typeof found === 'function' && !isReceiver(found)) {
    try {
      found = await (found as () => unknown)()
    } catch (error) {
      throw new Error(`the function ${path} exports failed to make the receiver: ${(error as Error)?.message ?? String(error)}`, { cause: error })
    }
  }
  if (!isReceiver(found)) throw new UsageError(`${path} exports no receiver: export it as default or as receiver (or a function returning it)`)
  return { receiver: found, ...(typeof module.close === 'function' ? { close: module.close as () => unknown } : {}) }
}

function text(report: SweepReport): string {
  if (!report.swept) return 'another process is sweeping this store: nothing done\n'
  const lines = [
    `due ${report.due}, list pages ${report.listed} (found paid ${report.found}), lookups ${report.lookups}: processed ${report.processed}, ` +
      `closed ${report.closed}, abandoned ${report.abandoned}, still open ${report.open}, skipped ${report.skipped}, failures ${report.failures}`,
  ]
  // Older receivers' reports (a module built against an earlier version) carry no `failing`.
  for (const { orderNumber, message } of report.failing ?? [])
    lines.push(`  failing: ${orderNumber === null ? 'the transactions list' : `order ${oneLine(orderNumber)}`}: ${oneLine(message)}`)
  return `${lines.join('\n')}\n`
}

export async function sweep(argv: readonly string[], io: Io): Promise<number> {
  const args = parseArgs(argv, { receiver: { type: 'string' }, json: { type: 'boolean' } })
  if (helpRequested(args, io, SWEEP_HELP)) return EXIT.ok
  if (args.positionals.length > 0) throw new UsageError(`unexpected argument "${args.positionals[0]}"`)
  const path = args.string('receiver')
  if (path === undefined) throw new UsageError('say which module exports your receiver: --receiver ./receiver.mjs')
  const failed = (error: unknown) => {
    io.err(`fpx-collect sweep: ${error instanceof Error ? error.message : String(error)}\n`)
    return EXIT.failure
  }
  let code: number = EXIT.failure
  try {
    const { receiver, close } = await load(path)
    try {
      const report = await receiver.sweep()
      io.out(args.boolean('json') ? `${JSON.stringify(report, null, 2)}\n` : text(report))
      code = !report.swept ? EXIT.negative : report.failures > 0 ? EXIT.failure : EXIT.ok
    } catch (error) {
      code = failed(error)
    }
    // Each closed on its own: one that throws must not leave the other's connections open.
    for (const closing of [() => receiver.close(), () => close?.()]) {
      try {
        await closing()
      } catch (error) {
        code = failed(error)
      }
    }
  } catch (error) {
    // A usage error opened nothing: the command line reports it with its own exit code.
    if (error instanceof UsageError) throw error
    code = failed(error)
  }
  // The module's clients (a pg pool, a Redis connection) may keep the process up: a scheduled job must end.
  setTimeout(() => process.exit(code), 100).unref()
  return code
}
