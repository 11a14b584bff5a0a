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
const SUCCESS_CODE = '00'
/** Spec: retry_url is the address "to retry a failed payment"; only failed results carry one. */
const RETRY_PATH = '/v1/retry/'
/** A bank's debit authorisation code as the spec and real messages show it: two characters. */
const BANK_CODE = /^[0-9A-Z]{2}$/
/**
 * The fields the minimal shape starts with, in name order, and the values an optional one may hold: the
 * required three, with the bank's code and the model between them (a minimal B2B1 99), whose values cannot be
 * an exchange or order number.
 */
const MINIMAL_START: readonly { name: string; optional?: RegExp }[] = [
  { name: 'exchange_number' },
  { name: 'fpx_debit_auth_code', optional: BANK_CODE },
  { name: 'fpx_model', optional: /^(B2C|B2B1)$/ },
  { name: 'order_number' },
  { name: 'payment_status' },
]

/** Whether the signed names start as the minimal shape's, nothing before or between (see Consistency). */
function startsMinimal(message: Message): boolean {
  const order = message.shape.signedOrder
  let at = 0
  for (const field of MINIMAL_START) {
    const position = order[at]
    const name = position === undefined ? undefined : message.names[position]
    if (name === field.name && (field.optional === undefined || field.optional.test(message.textAt(position as number)))) at++
    else if (field.optional === undefined) return false
  }
  return true
}
/** payment_stage values that say the payment did not (yet) succeed. */
const NOT_PAID_STAGES = new Set(['payment_unsuccessful', 'payment_pending'])

export interface Consistency {
  /** Whether a service address (status_url, receipt_url) pinned the exchange_number. */
  readonly anchored: boolean
  /**
   * Whether the first three signed names are exchange_number, order_number and payment_status, as in the minimal
   * shape. Then no value was moved into them: a value from before would stand first, one from between would stand
   * between, and what follows payment_status cannot move up. Without a service address, only this shape is pinned.
   */
  readonly minimalFirst: boolean
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
  const code = message.text('fpx_debit_auth_code') ?? ''
  if (code.includes('|')) throw inconsistent('fpx_debit_auth_code holds more than one value')
  // Attack C and its mirror: a code renamed away, or another value given its name, changes the state.
  if (state === 'succeeded' && code !== '' && code !== SUCCESS_CODE)
    throw inconsistent('payment_status says succeeded but fpx_debit_auth_code is not 00')
  const codeStands = BANK_CODE.test(code)
  let anchored = false
  let corporate = false
  let approvalPending = false
  let notPaid = false
  let nestedAddress = false
  let problem: string | undefined
  const names = message.names
  for (let i = 0; i < names.length && problem === undefined; i++) {
    const name = names[i] as string
    if (name === 'checksum') continue
    const value = message.fields.value(i)
    const nested = isNested(value)
    leaves(value, (text) => {
      if (problem !== undefined) return
      if (!codeStands) {
        corporate ||= hasSegment(text, CORPORATE_MODEL)
        approvalPending ||= hasSegment(text, PENDING_APPROVAL_CODE)
      }
      if (state === 'succeeded') notPaid ||= NOT_PAID_STAGES.has(text)
      if (!text.includes('/v1/') || !(text.startsWith('https://') || text.startsWith('http://'))) return
      if (state === 'succeeded' && text.includes(RETRY_PATH)) {
        problem = 'payment_status says succeeded but the result carries a retry address, which only failed payments have'
        return
      }
      for (const address of SERVICE_ADDRESSES) {
        const at = text.indexOf(address.path)
        if (at === -1) continue
        // Inside a nested field it may be a link of the shop's own (params): not checked, but then it cannot be
        // told from a genuine address hidden under a bracket name, so the result does not count as pinned by
        // its first value either.
        if (nested) {
          nestedAddress = true
          continue
        }
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
  if (problem === undefined && !codeStands && approvalPending) {
    // With no code standing under its own name, a 99 elsewhere may be the pending approval's code, moved.
    if (state === 'failed' && (code === '' || corporate))
      problem = 'the result reads as failed but a pending approval code (99) stands under another name than fpx_debit_auth_code'
    else if (state === 'succeeded' && corporate)
      problem = 'the result reads as succeeded but a pending approval code (99) stands under another name than fpx_debit_auth_code'
  }
  if (problem === undefined && notPaid) problem = 'payment_status says succeeded but a payment_stage value says the payment did not succeed'
  if (problem !== undefined) throw inconsistent(problem)
  return { anchored, minimalFirst: !nestedAddress && startsMinimal(message) }
}
