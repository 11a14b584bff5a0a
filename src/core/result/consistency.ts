import { ReceiverError } from './errors.js'
import { signedValueStarts } from './form.js'
import type { Message } from './message.js'
import { PENDING_APPROVAL_CODE, type PaymentState } from '../payment.js'

/*
 * The service signs the values of a result in the order of their names, not the names (spec, Authentication 6).
 * Whoever holds one genuine signed result (every buyer: the redirect passes through their browser) can rename its
 * fields, and merge or split values at `|`, and the checksum still matches. What cannot change is the sequence of
 * values. So the checks here read values wherever they stand, never trusting the name a value came under,
 * and refuse a result whose values disagree with the names the receiver acts on. docs/security.md has the
 * threat model; every rule rests on the spec or on real messages, so a genuine result always passes.
 *
 * They read the signed string itself (the values joined by `|`, as the HMAC just took them), not the values one
 * by one: decoding every field would double what verification costs. A value split or merged at `|` reads the
 * same there, which is the point.
 */

/** Spec, "Addresses returned in responses": status_url and receipt_url name the payment's exchange_number. */
const SERVICE_ADDRESSES = [
  { name: 'status_url', path: '/v1/status/', suffix: '' },
  { name: 'receipt_url', path: '/v1/receipt/', suffix: '.pdf' },
] as const

const SUCCESS_CODE = '00'
/** Spec: retry_url is the address "to retry a failed payment"; only failed results carry one. */
const RETRY = '/v1/retry/'
/** A bank's debit authorisation code as the spec and real messages show it: two characters. */
const BANK_CODE = /^[0-9A-Z]{2}$/
const CORPORATE = 'B2B1'
/** payment_stage values that say the payment did not (yet) succeed. */
const NOT_PAID = ['payment_unsuccessful', 'payment_pending']
const PIPE = 0x7c

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

export interface Consistency {
  /** Whether a service address (status_url, receipt_url) pinned the exchange_number. */
  readonly anchored: boolean
  /**
   * Whether the signed names start as the minimal shape's (MINIMAL_START), nothing before or between. Then no
   * value was moved into them: one from before would stand first, one from between would stand between, and what
   * follows payment_status cannot move up. Without a service address, only this shape is pinned.
   */
  readonly minimalFirst: boolean
}

function inconsistent(detail: string): ReceiverError {
  return new ReceiverError('inconsistent_result', `the signed values disagree with their field names: ${detail}`)
}

/** Whether the signed names start as the minimal shape's. */
function startsMinimal(message: Message): boolean {
  const order = message.shape.signedOrder
  let at = 0
  for (const field of MINIMAL_START) {
    const position = order[at]
    const name = position === undefined ? undefined : message.names[position]
    const text = name === field.name ? message.text(field.name) : undefined
    if (text !== undefined && (field.optional === undefined || field.optional.test(text))) at++
    else if (field.optional === undefined) return false
  }
  return true
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
  if (!id.includes('%')) return id
  try {
    return decodeURIComponent(id)
  } catch {
    return id
  }
}

/**
 * Whether the segment starting at `start` begins the value of field `name`: by the value starts the signing
 * recorded, or else by reading the value. (A value that goes on past the segment, merged with what follows, only
 * takes later values: the checks below still hold.)
 */
function startsValueOf(message: Message, name: string, signedText: string | Buffer, start: number, end: number): boolean {
  const position = message.shape.index[name]
  if (position === undefined) return false
  const starts = typeof signedText === 'string' ? undefined : signedValueStarts(signedText)
  if (starts === undefined) return message.text(name)?.startsWith(utf8(signedText, start, end)) === true
  const rank = message.shape.signedOrder.indexOf(position)
  return rank >= 0 && starts[rank] === start
}

function utf8(signed: string | Buffer, start: number, end: number): string {
  return typeof signed === 'string' ? signed.slice(start, end) : signed.toString('utf8', start, end)
}

/** Whether some segment is exactly `segment`: a value, or a part of one merged with its neighbours. */
function hasSegment(signed: string, segment: string): boolean {
  for (let from = 0; ; ) {
    const at = signed.indexOf(segment, from)
    if (at === -1) return false
    const end = at + segment.length
    if ((at === 0 || signed.charCodeAt(at - 1) === PIPE) && (end === signed.length || signed.charCodeAt(end) === PIPE)) return true
    from = at + 1
  }
}

/** Every `|`-separated segment holding `path`, as [start, end) bounds. */
function segmentsHolding(signed: string, path: string): [number, number][] {
  const found: [number, number][] = []
  for (let from = 0; ; ) {
    const at = signed.indexOf(path, from)
    if (at === -1) return found
    const end = signed.indexOf('|', at)
    found.push([signed.lastIndexOf('|', at) + 1, end === -1 ? signed.length : end])
    from = end === -1 ? signed.length : end
  }
}

/** A whole URL: the segment starts with http:// or https://. */
function isUrl(signed: string, start: number): boolean {
  return signed.startsWith('https://', start) || signed.startsWith('http://', start)
}

/** Spec: "00 success, 99 pending approval, other codes unsuccessful"; a result must not say otherwise anywhere. */
function checkState(signed: string, code: string, paymentStatus: string | undefined, state: PaymentState): void {
  if (code.includes('|')) throw inconsistent('fpx_debit_auth_code holds more than one value')
  if (state === 'succeeded') {
    if (code !== '' && code !== SUCCESS_CODE) throw inconsistent('payment_status says succeeded but fpx_debit_auth_code is not 00')
    if (NOT_PAID.some((stage) => hasSegment(signed, stage)))
      throw inconsistent('payment_status says succeeded but a payment_stage value says the payment did not succeed')
    if (segmentsHolding(signed, RETRY).some(([start]) => isUrl(signed, start)))
      throw inconsistent('payment_status says succeeded but the result carries a retry address, which only failed payments have')
  }
  if (state === 'pending') {
    // A success's 00 pushed aside and a 99 moved under the code's name would read a paid payment as pending.
    if (paymentStatus === 'true') throw inconsistent('fpx_debit_auth_code says pending approval (99) but payment_status says succeeded')
    if (hasSegment(signed, SUCCESS_CODE)) throw inconsistent('fpx_debit_auth_code says pending approval (99) but a success code (00) stands under another name')
    return
  }
  // With no code standing under its own name, a 99 elsewhere may be the pending approval's code, moved (attack C
  // and its mirror). Only B2B1 has 99; a genuine B2B1 failure carries its own code.
  if ( BANK_CODE.test(code) || !hasSegment(signed, PENDING_APPROVAL_CODE)) return
  const corporate = hasSegment(signed, CORPORATE)
  if (state === 'failed' && (code === '' || corporate))
    throw inconsistent('the result reads as failed but a pending approval code (99) stands under another name than fpx_debit_auth_code')
  if (state === 'succeeded' && corporate)
    throw inconsistent('the result reads as succeeded but a pending approval code (99) stands under another name than fpx_debit_auth_code')
}

/**
 * Checks a verified result's values against the names the receiver acts on, given the signed string its checksum
 * matched. Throws ReceiverError `inconsistent_result` naming what did not agree (never a value: a value may be
 * the buyer's data).
 */
export function checkConsistency(message: Message, signedText: string | Buffer, exchangeNumber: string, state: PaymentState): Consistency {
  // One byte a character: searching ASCII in a string is cheaper than in a Buffer, and the view may be reused.
  const signed = typeof signedText === 'string' ? signedText : signedText.toString('latin1')
  checkState(signed, message.text('fpx_debit_auth_code') ?? '', message.text('payment_status'), state)
  let anchored = false
  // An address inside other text (a nested field's rendering, a shop's own link) is not checked, but then the
  // result cannot count as pinned by its first fields: a genuine address may be hidden there.
  let embedded = false
  for (const address of SERVICE_ADDRESSES) {
    for (let at = signed.indexOf(address.path); at !== -1; ) {
      const start = signed.lastIndexOf('|', at) + 1
      const stop = signed.indexOf('|', at)
      const end = stop === -1 ? signed.length : stop
      at = stop === -1 ? -1 : signed.indexOf(address.path, stop)
      if (!isUrl(signed, start)) {
        embedded = true
        continue
      }
      // A genuine address is one URL under its own name; elsewhere, or merged with other values, it was moved.
      if (!startsValueOf(message, address.name, signedText, start, end)) throw inconsistent(`a service ${address.name} value stands under another name`)
      // Service ids are ASCII: read as one byte a character, as the string is.
      const url = signed.slice(start, end)
      if (addressedId(url, url.indexOf(address.path), address.path, address.suffix) !== exchangeNumber)
        throw inconsistent(`${address.name} names another payment than exchange_number`)
      anchored = true
    }
  }
  return { anchored, minimalFirst: !anchored && !embedded && startsMinimal(message) }
}
