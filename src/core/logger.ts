/** The subset of pino's (and console's) interface the package writes to: an object of details, then a message. */
export interface Logger {
  debug(details: object, message: string): void
  info(details: object, message: string): void
  warn(details: object, message: string): void
  error(details: object, message: string): void
}

const ignore = (): void => {}

export const silentLogger: Logger = { debug: ignore, info: ignore, warn: ignore, error: ignore }

/**
 * The merchant's logger, made unable to throw: a log line is never worth a delivery's answer (a logger that threw
 * on the way out of a refusal made handle() throw, and one that threw after the handlers ran turned a processed
 * payment into a 500). Without a logger, the silent one.
 */
export function safeLogger(logger: Logger | undefined): Logger {
  if (logger === undefined) return silentLogger
  const level =
    (name: keyof Logger) =>
    (details: object, message: string): void => {
      try {
        logger[name](details, message)
      } catch {
        // Nowhere left to report it.
      }
    }
  return { debug: level('debug'), info: level('info'), warn: level('warn'), error: level('error') }
}
