/** What every store's options share: how long handled states (and the timeline) are kept, and the checks of durations. */

/**
 * How long a store remembers handled states, and the timeline with them, unless told otherwise: 30 days. The
 * service's redelivery window is not stated, and a state forgotten too early runs its handlers again.
 */
export const DEFAULT_RETENTION_MS = 30 * 24 * 60 * 60 * 1000

/** Throws a TypeError naming `name` unless `value` is undefined or a positive integer (or 0, when allowed). */
export function checkPositiveInteger(name: string, value: number | undefined, zeroAllowed = false): void {
  if (value !== undefined && !(Number.isInteger(value) && (value > 0 || (zeroAllowed && value === 0))))
    throw new TypeError(`${name} must be a ${zeroAllowed ? 'non-negative' : 'positive'} integer`)
}
