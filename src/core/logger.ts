/** The subset of pino's (and console's) interface the package writes to: an object of details, then a message. */
export interface Logger {
  debug(details: object, message: string): void
  info(details: object, message: string): void
  warn(details: object, message: string): void
  error(details: object, message: string): void
}

/** What a `logger` option takes: a logger, or `false` for silence. Left out: warnings and errors on the console. */
export type LoggerOption = Logger | false

const ignore = (): void => {}

/**
 * Whether a level of a logger from safeLogger drops everything (info and debug without a logger given, all of them
 * with `false`): then a caller need not make the details object for a line nobody sees.
 */
export const dropped = (level: Logger[keyof Logger]): boolean => level === ignore

export const silentLogger: Logger = { debug: ignore, info: ignore, warn: ignore, error: ignore }

/**
 * Where warnings and errors go when no logger was given: the console, as BullMQ's and the Redis store's do. A
 * refused result, a failed store or a state no handler listens to must never pass unseen; info and debug (every
 * handled payment) stay quiet. The details follow the message, with no secrets in them (none are ever logged).
 */
export const consoleLogger: Logger = {
  debug: ignore,
  info: ignore,
  warn: (details, message) => console.warn(`fpx-collect: ${message}`, details),
  error: (details, message) => console.error(`fpx-collect: ${message}`, details),
}

/**
 * The merchant's logger, made unable to throw: a log line is never worth a delivery's answer (a logger that threw
 * on the way out of a refusal made handle() throw, and one that threw after the handlers ran turned a processed
 * payment into a 500), nor reject (an async logger's rejection, unhandled, ends a Node process). Without a logger,
 * warnings and errors go to the console; `false` silences everything.
 */
export function safeLogger(logger: LoggerOption | undefined): Logger {
  if (logger === false) return silentLogger
  // Checked here: a logger without warn or error (console.log, a string) would make every warning vanish in logSafely.
  if (logger != null && (typeof logger !== 'object' || typeof logger.warn !== 'function' || typeof logger.error !== 'function'))
    throw new TypeError('logger must be an object with warn and error methods, and debug and info to see those levels (pino, console), or false')
  const chosen = logger ?? consoleLogger
  const level = (name: keyof Logger) =>
    // The console's quiet levels are this module's own and never change: nothing to wrap.
    chosen === consoleLogger && consoleLogger[name] === ignore
      ? ignore
      : (details: object, message: string): void => logSafely(() => chosen[name](details, message))
  return { debug: level('debug'), info: level('info'), warn: level('warn'), error: level('error') }
}

/**
 * Writes one line through a merchant's logger, which may throw or, async, reject: neither reaches the caller. An
 * async logger's rejection left alone is unhandled, and Node ends the process for it; it is not awaited either, as
 * a line is never worth holding an answer.
 */
export function logSafely(write: () => unknown): void {
  try {
    const written = write()
    if (typeof (written as { then?: unknown } | null)?.then === 'function') (written as PromiseLike<unknown>).then(undefined, ignore)
  } catch {
    // Nowhere left to report it.
  }
}

/**
 * Where a receiver keeps its logger (the merchant's, made safe) for the adapters' shared code (http/answers.ts),
 * which logs the app's own faults around the receiver, such as an onResult that threw. A symbol-keyed property
 * rather than a public one: a receiver spread into a wrapper (`{ ...receiver, handle }`) keeps it.
 */
export const RECEIVER_LOGGER: unique symbol = Symbol.for('fpx-collect.receiverLogger')
