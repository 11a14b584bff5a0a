/** How long an inbox entry waits after a failed attempt. */
export interface BackoffOptions {
  /** The wait after the first failure; it doubles with each further one. Default 1000 ms. */
  baseMs?: number
  /** The longest wait: once reached, entries are retried this often. Default 10 minutes. */
  maxMs?: number
}

export const DEFAULT_BACKOFF = { baseMs: 1000, maxMs: 10 * 60_000 } as const

/**
 * The delay before attempt `failures + 1`: base·2^(failures−1), capped at maxMs, with "equal jitter" (a random
 * point in its upper half) so that entries failing together do not all come back in the same instant, while no
 * wait exceeds maxMs: once the cause is fixed, everything is retried within one maxMs.
 */
export function backoffDelay(failures: number, options: Required<BackoffOptions>, random: () => number = Math.random): number {
  const exponent = Math.min(Math.max(failures - 1, 0), 40)
  const ceiling = Math.min(options.maxMs, options.baseMs * 2 ** exponent)
  return Math.round(ceiling / 2 + random() * (ceiling / 2))
}

export function checkBackoff(options: BackoffOptions | undefined): Required<BackoffOptions> {
  const baseMs = options?.baseMs ?? DEFAULT_BACKOFF.baseMs
  const maxMs = options?.maxMs ?? Math.max(DEFAULT_BACKOFF.maxMs, baseMs)
  if (!(Number.isInteger(baseMs) && baseMs > 0)) throw new TypeError('inbox.backoff.baseMs must be a positive integer')
  if (!(Number.isInteger(maxMs) && maxMs >= baseMs)) throw new TypeError('inbox.backoff.maxMs must be an integer ≥ baseMs')
  return { baseMs, maxMs }
}
