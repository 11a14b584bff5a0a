/** The subset of pino's (and console's) interface the package writes to: an object of details, then a message. */
export interface Logger {
  debug(details: object, message: string): void
  info(details: object, message: string): void
  warn(details: object, message: string): void
  error(details: object, message: string): void
}

const ignore = (): void => {}

export const silentLogger: Logger = { debug: ignore, info: ignore, warn: ignore, error: ignore }
