/** One attempt of a callback: the address it is posted to, how a failure is named, the wait before the next. */
export type CallbackTransport = 'body' | 'query' | 'both'

/** Why an attempt had no answer, in a word a merchant can look up: ECONNREFUSED, timeout, ... */
export function reasonOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  if (error.name === 'TimeoutError') return 'timeout'
  const code = (error.cause as { code?: unknown } | undefined)?.code
  return typeof code === 'string' ? code : (error.cause instanceof Error ? error.cause.message : error.message)
}

/**
 * The address posted to: callback_url itself, or with the encoded fields appended to its query, after the
 * merchant's own parameters (kept exactly as given) and before any fragment.
 */
export function callbackRequestUrl(url: string, transport: CallbackTransport, encoded: string): string {
  if (transport === 'body' || encoded === '') return url
  const hash = url.indexOf('#')
  const [base, fragment] = hash < 0 ? [url, ''] : [url.slice(0, hash), url.slice(hash)]
  const separator = !base.includes('?') ? '?' : base.endsWith('?') || base.endsWith('&') ? '' : '&'
  return `${base}${separator}${encoded}${fragment}`
}

/** Where a redirect points, without its query or fragment: a log-in page's `?next=` may quote the callback's fields. */
export function redirectTarget(location: string | null, base: string): string {
  if (location === null) return 'no Location'
  try {
    const target = new URL(location, base)
    return target.origin === new URL(base).origin ? target.pathname : `${target.origin}${target.pathname}`
  } catch {
    return 'an unreadable Location'
  }
}

/**
 * A callback is a server-to-server POST: a shop that handled it answers 2xx, or (WordPress plugins) redirects
 * after handling it. A redirect just as often means the route never ran: it sits behind a log-in page or a
 * middleware that sends every request elsewhere. The warning says both, so the merchant checks.
 */
export function redirectWarning(status: number, target: string): string {
  return (
    `callback_url answered ${status} (a redirect to ${target}); counted as delivered only because a 3xx ` +
    'is tolerated outside strict mode (delivery.redirectCountsAsDelivered). A callback route should answer 2xx: a 3xx may ' +
    'mean the route sits behind a log-in redirect and never handled the result'
  )
}

/** The wait after failed attempt `number` (1-based): initial, then doubling, capped. */
export function retryDelayMs(number: number, initialDelayMs: number, maxDelayMs: number): number {
  return Math.min(maxDelayMs, initialDelayMs * 2 ** (number - 1))
}
