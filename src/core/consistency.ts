import { ReceiverError } from './errors.js'
import type { Message } from './message.js'
import { PENDING_APPROVAL_CODE, type PaymentState } from './payment.js'
import { type FieldValue, isNested } from './values.js'

/*
 * The service signs the values of a result in the order of their names, not the names (spec, Authentication 6).
 * Whoever holds one genuine signed result (every buyer: the redirect passes through their browser) can rename its
 * fields, and merge or split values at `|`, and the checksum still matches. What cannot change is the sequence of
 * values. So the checks here read values wherever they stand, never trusting the name a value came under,
 * and refuse a result whose values disagree with the names the receiver acts on. docs/security.md has the
 * threat model; every rule rests on the spec or on real messages, so a genuine result always passes.
 */

/** Spec, "Addresses returned in responses": status_url and receipt_url name the payment's exchange_number. */
const SERVICE_ADDRESSES = [
  { name: 'status_url', path: '/v1/status/', suffix: '' },
  { name: 'receipt_url', path: '/v1/receipt/', suffix: '.pdf' },
] as const

const CORPORATE_MODEL = 'B2B1'

export interface Consistency {
  /**
   * Whether a service address pinned the exchange_number. A result without one (the minimal shape) cannot be
   * pinned, so the receiver also deduplicates it by its signed value sequence.
   */
  readonly anchored: boolean
}

function inconsistent(detail: string): ReceiverError {
  return new ReceiverError('inconsistent_result', `the signed values disagree with their field names: ${detail}`)
}

/** The id an address names: the text after `path` up to `?`, `#`, `/` or the end, without `suffix`. */
function addressedId(value: string, at: number, path: string, suffix: string): string | undefined {
  let end = at + path.length
  while (end < value.length) {
    const c = value.charCodeAt(end)
    if (c === 0x3f || c === 0x23 || c === 0x2f) break
    end++
  }
  let id = value.slice(at + path.length, end)
  if (suffix !== '') {
    if (!id.endsWith(suffix)) return undefined
    id = id.slice(0, -suffix.length)
  }
  try {
    return decodeURIComponent(id)
  } catch {
    return id
  }
}

/** The segments a value could be split into: a '99' merged with a neighbour still stands for pending. */
function hasSegment(value: string, segment: string): boolean {
  if (value === segment) return true
  if (value.length <= segment.length || !value.includes('|')) return false
  return value.split('|').includes(segment)
}

function leaves(value: FieldValue, visit: (text: string) => void): void {
  if (typeof value === 'string') visit(value)
  else if (value instanceof Map) for (const item of value.values()) leaves(item, visit)
  else if (Array.isArray(value)) for (const item of value) leaves(item, visit)
  else if (!isNested(value)) visit(value === null ? '' : String(value))
}

/**
 * Checks a verified result's values against the names the receiver acts on. Throws ReceiverError
 * `inconsistent_result` naming what did not agree (never a value: a value may be the buyer's data).
 */
export function checkConsistency(message: Message, exchangeNumber: string, state: PaymentState): Consistency {
  const code = message.text('fpx_debit_auth_code')
  if (code !== undefined && code.includes('|')) throw inconsistent('fpx_debit_auth_code holds more than one value')
  let anchored = false
  let corporate = false
  let approvalPending = false
  let problem: string | undefined
  const names = message.names
  for (let i = 0; i < names.length && problem === undefined; i++) {
    const name = names[i] as string
    if (name === 'checksum') continue
    leaves(message.fields.value(i), (text) => {
      if (problem !== undefined) return
      if (state === 'failed') {
        corporate ||= hasSegment(text, CORPORATE_MODEL)
        approvalPending ||= hasSegment(text, PENDING_APPROVAL_CODE)
      }
      if (!text.includes('/v1/')) return
      for (const address of SERVICE_ADDRESSES) {
        const at = text.indexOf(address.path)
        if (at === -1) continue
        // A genuine address is one URL under its own name; elsewhere, or merged with other values, it was moved.
        if (name !== address.name || text.includes('|')) {
          problem = `a service ${address.name} value stands under another name`
          return
        }
        if (addressedId(text, at, address.path, address.suffix) !== exchangeNumber) {
          problem = `${address.name} names another payment than exchange_number`
          return
        }
        anchored = true
      }
    })
  }
  // Attack C: a B2B1 99 whose code was renamed away reads as failed. Only B2B1 has 99, and a genuine failure
  // carries its own code, so a failed B2B1 result holding a 99 anywhere is not proven failed.
  if (problem === undefined && corporate && approvalPending)
    problem = 'a B2B1 result reads as failed but carries a pending approval code (99) under another name than fpx_debit_auth_code'
  if (problem !== undefined) throw inconsistent(problem)
  return { anchored }
}
