import { invalidParameters } from './errors.js'
import type { FieldErrors } from './errors.js'

/**
 * Faults a tester switches on through the control API to see how a merchant app copes with what the real
 * service may do on a bad day. They apply to every payment until cleared (or until reset).
 */
export interface Faults {
  /** Each callback is posted this many extra times, at once, beside the original: concurrent duplicates. */
  duplicate: number
  /** B2B1: the 99 callback is held back and sent only after the 00 callback, so 00 arrives first. */
  outOfOrder: boolean
  /** Every callback waits this long before its first attempt. */
  delayMs: number
  /** The buyer's browser never reaches redirect_url (a closed tab, a lost connection): only the callback arrives. */
  redirectLost: boolean
}

export const NO_FAULTS: Readonly<Faults> = Object.freeze({ duplicate: 0, outOfOrder: false, delayMs: 0, redirectLost: false })

const MAX_DUPLICATES = 10
const MAX_DELAY_MS = 10 * 60 * 1000

/** The control API's view of the faults, in the snake_case of the rest of the API. */
export function faultsJson(faults: Faults): Record<string, unknown> {
  return { duplicate: faults.duplicate, out_of_order: faults.outOfOrder, delay_ms: faults.delayMs, redirect_lost: faults.redirectLost }
}

function wholeNumber(value: unknown, max: number): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= max ? value : undefined
}

/**
 * Reads `{ duplicate?, out_of_order?, delay_ms?, redirect_lost? }`. Names left out are off, so the body given is
 * the whole set of faults and `{}` clears them; an unknown name is refused rather than silently ignored.
 */
export function parseFaults(body: Record<string, unknown>): Faults {
  const problems: FieldErrors = {}
  const known = new Set(['duplicate', 'out_of_order', 'delay_ms', 'redirect_lost'])
  for (const name of Object.keys(body)) if (!known.has(name)) problems[name] = 'is not a fault'
  const duplicate = body.duplicate === undefined ? 0 : wholeNumber(body.duplicate, MAX_DUPLICATES)
  if (duplicate === undefined) problems.duplicate = `must be a whole number from 0 to ${MAX_DUPLICATES}`
  const delayMs = body.delay_ms === undefined ? 0 : wholeNumber(body.delay_ms, MAX_DELAY_MS)
  if (delayMs === undefined) problems.delay_ms = `must be a whole number of milliseconds up to ${MAX_DELAY_MS}`
  for (const name of ['out_of_order', 'redirect_lost'])
    if (body[name] !== undefined && typeof body[name] !== 'boolean') problems[name] = 'must be true or false'
  if (Object.keys(problems).length > 0) throw invalidParameters(problems)
  return {
    duplicate: duplicate ?? 0,
    outOfOrder: body.out_of_order === true,
    delayMs: delayMs ?? 0,
    redirectLost: body.redirect_lost === true,
  }
}
