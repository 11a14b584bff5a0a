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
  /**
   * The share of payments (0 to 1) whose redirect and callbacks are all lost: nothing reaches the merchant, who
   * learns of them only through the status API. Which payments is decided by their exchange_number, so the same
   * payments lose every result.
   */
  loseResults: number
  /** The share of B2B1 payments (0 to 1) whose later 00 callback, after the corporate approval, is lost. */
  loseApprovals: number
}

export const NO_FAULTS: Readonly<Faults> = Object.freeze({ duplicate: 0, outOfOrder: false, delayMs: 0, redirectLost: false, loseResults: 0, loseApprovals: 0 })

/**
 * Whether a payment is among `share` of them: a hash of its exchange_number (FNV-1a, mixed), so the choice is the same
 * each time it is asked, for every result of the payment, and spread evenly over payments.
 */
export function amongShare(exchangeNumber: string, share: number, salt: string): boolean {
  if (share <= 0) return false
  let hash = 0x811c9dc5
  for (const char of `${salt}:${exchangeNumber}`) hash = Math.imul(hash ^ (char.codePointAt(0) as number), 0x01000193)
  // MurmurHash3's finaliser: FNV alone leaves numbers that differ in their last digits close together.
  hash = Math.imul(hash ^ (hash >>> 16), 0x85ebca6b)
  hash = Math.imul(hash ^ (hash >>> 13), 0xc2b2ae35)
  return ((hash ^ (hash >>> 16)) >>> 0) / 2 ** 32 < share
}

const MAX_DUPLICATES = 10
const MAX_DELAY_MS = 10 * 60 * 1000

/** Which results the `loseResults` and `loseApprovals` faults drop. */
export class LostResults {
  /** B2B1 payments whose 99 callback went out: their later 00 is the one `loseApprovals` may lose. */
  private readonly approvalAwaited = new Set<string>()

  /** Whether every result of the payment is lost, the redirect included. */
  loses(faults: Faults, record: { readonly exchangeNumber: string }): boolean {
    return amongShare(record.exchangeNumber, faults.loseResults, 'results')
  }

  /** Whether this callback is lost; notes a 99 sent, whose 00 may be lost later. */
  sent(faults: Faults, record: { readonly exchangeNumber: string }, fields: Readonly<Record<string, unknown>>): boolean {
    if (this.loses(faults, record)) return true
    const code = fields.fpx_debit_auth_code
    if (code === '99') this.approvalAwaited.add(record.exchangeNumber)
    return code === '00' && this.approvalAwaited.has(record.exchangeNumber) && amongShare(record.exchangeNumber, faults.loseApprovals, 'approvals')
  }

  clear(): void {
    this.approvalAwaited.clear()
  }
}

/** The control API's view of the faults, in the snake_case of the rest of the API. */
export function faultsJson(faults: Faults): Record<string, unknown> {
  const json: Record<string, unknown> = { duplicate: faults.duplicate, out_of_order: faults.outOfOrder, delay_ms: faults.delayMs, redirect_lost: faults.redirectLost }
  // The shares are listed when set, so the answer for the faults that existed before them keeps its shape.
  if (faults.loseResults > 0) json.lose_results = faults.loseResults
  if (faults.loseApprovals > 0) json.lose_approvals = faults.loseApprovals
  return json
}

function share(value: unknown): number | undefined {
  return typeof value === 'number' && value >= 0 && value <= 1 ? value : undefined
}

function wholeNumber(value: unknown, max: number): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= max ? value : undefined
}

/**
 * Reads `{ duplicate?, out_of_order?, delay_ms?, redirect_lost?, lose_results?, lose_approvals? }`. Names left
 * out are off, so the body given is the whole set of faults and `{}` clears them; an unknown name is refused
 * rather than silently ignored.
 */
export function parseFaults(body: Record<string, unknown>): Faults {
  const problems: FieldErrors = {}
  const known = new Set(['duplicate', 'out_of_order', 'delay_ms', 'redirect_lost', 'lose_results', 'lose_approvals'])
  for (const name of Object.keys(body)) if (!known.has(name)) problems[name] = 'is not a fault'
  const duplicate = body.duplicate === undefined ? 0 : wholeNumber(body.duplicate, MAX_DUPLICATES)
  if (duplicate === undefined) problems.duplicate = `must be a whole number from 0 to ${MAX_DUPLICATES}`
  const delayMs = body.delay_ms === undefined ? 0 : wholeNumber(body.delay_ms, MAX_DELAY_MS)
  if (delayMs === undefined) problems.delay_ms = `must be a whole number of milliseconds up to ${MAX_DELAY_MS}`
  for (const name of ['out_of_order', 'redirect_lost'])
    if (body[name] !== undefined && typeof body[name] !== 'boolean') problems[name] = 'must be true or false'
  const loseResults = body.lose_results === undefined ? 0 : share(body.lose_results)
  const loseApprovals = body.lose_approvals === undefined ? 0 : share(body.lose_approvals)
  if (loseResults === undefined) problems.lose_results = 'must be a share from 0 to 1'
  if (loseApprovals === undefined) problems.lose_approvals = 'must be a share from 0 to 1'
  if (Object.keys(problems).length > 0) throw invalidParameters(problems)
  return {
    duplicate: duplicate ?? 0,
    outOfOrder: body.out_of_order === true,
    delayMs: delayMs ?? 0,
    redirectLost: body.redirect_lost === true,
    loseResults: loseResults ?? 0,
    loseApprovals: loseApprovals ?? 0,
  }
}
