import type { AddressInfo } from 'node:net'
import type { Express } from 'express'
import type { Logger } from '../src/index.js'
import type { WorkerMessage } from './protocol.js'

/** What every soak worker does the same way: its error log, and serving until the driver stops it. */

const SHOWN = 3

/**
 * A logger that prints errors only, each message a few times (a database refusing connections says so once per
 * delivery), and counts the rest until `summary()`. `ignored` drops the errors the soak causes on purpose.
 */
export function soakLogger(label: string, ignored: (err: Error) => boolean = () => false): Logger & { summary(): void } {
  const errors = new Map<string, number>()
  return {
    debug: () => {},
    info: () => {},
    warn: () => {},
    error(details, message) {
      const err = (details as { err?: unknown }).err
      if (err instanceof Error && ignored(err)) return
      const text = err instanceof Error ? `${message}: ${err.message}` : message
      const count = (errors.get(text) ?? 0) + 1
      errors.set(text, count)
      if (count <= SHOWN) console.error(`[${label} ${process.pid}] ${text}${count === SHOWN ? ' (repeats counted until exit)' : ''}`)
    },
    summary() {
      for (const [text, count] of errors) if (count > SHOWN) console.error(`[${label} ${process.pid}] ${text}: ${count} times in all`)
    },
  }
}

/**
 * Listens on a port of its own on 127.0.0.1, tells the driver which over IPC, and on SIGTERM, SIGINT or the
 * driver's going away closes the server, runs `shutdown` and exits.
 */
export function serveWorker(app: Express, shutdown: () => Promise<void>): void {
  const tell = (message: WorkerMessage) => process.send?.(message)
  const server = app.listen(0, '127.0.0.1', (error?: Error) => {
    if (error !== undefined) {
      tell({ type: 'failed', message: error.message })
      process.exit(1)
    }
    tell({ type: 'ready', port: (server.address() as AddressInfo).port })
  })
  let stopping = false
  const stop = async () => {
    if (stopping) return
    stopping = true
    server.close()
    server.closeAllConnections()
    await shutdown()
    process.exit(0)
  }
  process.on('SIGTERM', () => void stop())
  process.on('SIGINT', () => void stop())
  // The driver went away (crashed or killed): do not outlive it.
  process.on('disconnect', () => void stop())
}
