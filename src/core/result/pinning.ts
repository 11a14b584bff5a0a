/*
 * Signature only: may a result's names be believed? The checksum signs the values joined by `|` in name order, not
 * the names, so a buyer holding a genuine result can rename its fields, and split or merge values at a `|`, while
 * the checksum still matches. Without the API to ask, the receiver acts on a result only when every value it acts
 * on (exchange_number, order_number, payment_status, fpx_debit_auth_code, transaction_amount) reads the same in
 * EVERY way of naming the signed string with fields the service sends, each value of the kind its field holds.
 * Then any renamed copy the receiver accepts reads those values exactly as the genuine result does.
 *
 * The ways of naming are paths through a table: the values from j on can take the names from k on, when the next
 * name is skipped (it is optional) or takes the next run of values. A result with a name the service does not
 * send, or a value holding `|`, is not acted on (docs/security.md, "Signature only").
 */
import { quotedName } from './errors.js'
import { compareCodePoints } from './message.js'

interface Kind {
  readonly holds: (text: string) => boolean
  /** Whether a genuine value of this field may contain `|` (free text): it may then span several signed parts. */
  readonly text?: boolean
  /** Whether any text will do (no need to look at it). */
  readonly any?: boolean
  /** For text that may span parts: whether a value can start with this part. */
  readonly opens?: (part: string) => boolean
}

/** Text the buyer types (their details): it may hold `|`. */
const TYPED: Kind = { holds: () => true, text: true, any: true }
/** Text the service, the bank or the merchant writes: taken to hold no `|` (docs/security.md). */
const WRITTEN: Kind = { holds: (text) => !text.includes('|') }
const pattern = (shape: RegExp): Kind => ({ holds: (text) => text === '' || shape.test(text) })
const oneOf = (...values: string[]): Kind => ({ holds: (text) => text === '' || values.includes(text) })

const DECIMAL = pattern(/^\d{1,13}(\.\d{1,2})?$/)
const DIGITS = pattern(/^\d+$/)
const WEB_URL = pattern(/^https?:\/\/[^\s|]+$/)
// A nested field (params, addresses) signs as Ruby's Hash#inspect text: one hash, whose strings may hold `|`.
const NESTED: Kind = {
  holds: (text) => text === '' || /^\{"(?:[^"\\]|\\.)*"(?: ?=> ?)(?:.*)\}$/s.test(text),
  text: true,
  opens: (part) => part.startsWith('{"'),
}

/**
 * The fields the service sends in results: the spec's list ("Events"). Names seen only now and then in real
 * messages (id, name, bank, interface_name, ...) are left out on purpose: each name that may be present or absent
 * is room for a renamed value, and a result carrying one is refused rather than guessed at.
 */
const KNOWN_FIELDS: Readonly<Record<string, Kind>> = {
  amount: DECIMAL,
  billing_address: NESTED,
  buyer_email: TYPED,
  buyer_name: TYPED,
  buyer_phone: TYPED,
  client_ip: pattern(/^[0-9A-Fa-f.:]+$/),
  created_at: pattern(/^\d{4}-\d\d-\d\d[T ][^|]*$/),
  created_at_unixtime: DIGITS,
  currency: pattern(/^[A-Z]{3}$/),
  exchange_number: { holds: (text) => /^[A-Za-z0-9_-]+$/.test(text) },
  fpx_bank: WRITTEN,
  fpx_debit_auth_code: pattern(/^[0-9A-Z]{2}$/),
  fpx_model: oneOf('B2C', 'B2B1'),
  fpx_name: WRITTEN,
  fpx_status: oneOf('true', 'false'),
  fpx_status_message: WRITTEN,
  fpx_transaction_id: WRITTEN,
  fpx_transaction_time: DIGITS,
  merchant_co_number: WRITTEN,
  merchant_name: WRITTEN,
  merchant_reference_number: WRITTEN,
  order_number: { holds: (text) => text !== '' && !text.includes('|') },
  params: NESTED,
  payment_id: DIGITS,
  payment_method: oneOf('fpx_online_banking', 'card'),
  payment_mode: oneOf('merchant', 'customer', 'buyer', 'merchant_credit'),
  payment_stage: pattern(/^payment_[a-z_]+$/),
  payment_status: { holds: (text) => text === 'true' || text === 'false' },
  receipt_url: WEB_URL,
  retry_url: WEB_URL,
  shipping_address: NESTED,
  source: pattern(/^[A-Za-z][A-Za-z ]*$/),
  status_url: WEB_URL,
  // The Auth Token: 20 alphanumeric characters (spec, Credentials).
  token: pattern(/^[A-Za-z0-9]{20}$/),
  transaction_amount: DECIMAL,
  transaction_amount_received: DECIMAL,
  transaction_fee: DECIMAL,
  uid: WRITTEN,
}

const NAMES = Object.keys(KNOWN_FIELDS).sort(compareCodePoints)
const REQUIRED: ReadonlySet<string> = new Set(['exchange_number', 'order_number', 'payment_status'])
const SKIPPABLE: readonly boolean[] = NAMES.map((name) => !REQUIRED.has(name))
/** What the receiver acts on: which payment, which order, which state, which amount. */
export const ACTED_ON = ['exchange_number', 'order_number', 'payment_status', 'fpx_debit_auth_code', 'transaction_amount'] as const

/** A service status or receipt address, and the exchange_number it names (spec, "Addresses returned"). */
const SERVICE_ADDRESS = /\/v1\/(?:status\/([^/?#|]+)|receipt\/([^/?#|]+?)\.pdf)/g

/**
 * Why the values acted on could read otherwise, naming fields and never values; undefined when they could not.
 * `signed`: the signed values in order, with the names they came under.
 */
export function whyUnpinned(signed: readonly { name: string; text: string }[]): string | undefined {
  const split = signed.find((field) => field.text.includes('|'))
  if (split !== undefined) return `the value of ${quotedName(split.name)} contains |, so the signed values could be split at other places`
  const unknown = signed.find((field) => KNOWN_FIELDS[field.name] === undefined)
  if (unknown !== undefined) return `the result carries ${quotedName(unknown.name)}, a field this mode cannot place`
  const odd = signed.find((field) => !(KNOWN_FIELDS[field.name] as Kind).holds(field.text))
  if (odd !== undefined) return `${odd.name} holds a value of a kind the service does not send under it`
  const parts = signed.map((field) => field.text)
  // The service's addresses name the exchange_number: the values holding one must all name the same, and only
  // that value can be the exchange_number.
  const named = new Set(parts.flatMap((text) => [...text.matchAll(SERVICE_ADDRESS)].map((match) => (match[1] ?? match[2]) as string)))
  if (named.size > 1) return 'the result holds service addresses naming different exchange numbers'
  return ambiguity(parts, named.values().next().value)
}

/**
 * The first value acted on that reads differently in some naming of `parts`, as a reason; undefined when none.
 * `exchange`: the exchange_number the service's addresses name, when the result carries one.
 */
function ambiguity(parts: readonly string[], exchange: string | undefined): string | undefined {
  const n = parts.length
  const m = NAMES.length
  const pinned: Kind = { holds: (text) => text === exchange }
  const kinds = NAMES.map((name) => (name === 'exchange_number' && exchange !== undefined ? pinned : (KNOWN_FIELDS[name] as Kind)))
  const skippable = (k: number) => SKIPPABLE[k] === true
  const found = new Map<number, number[]>()
  const joined = (from: number, to: number) => parts.slice(from, to).join('|')
  /** Where the runs of parts from `from` that name k could hold end (exclusive). */
  const runs = (k: number, from: number): number[] => {
    const key = k * (n + 1) + from
    let ends = found.get(key)
    if (ends === undefined) {
      const kind = kinds[k] as Kind
      ends = []
      let text = ''
      const spans = from < n && kind.text === true && (kind.opens?.(parts[from] as string) ?? true)
      for (let to = from + 1; to <= n && (to === from + 1 || spans); to++) {
        // Free text was written before the payment existed (the buyer's details, the merchant's params): it cannot
        // hold this payment's exchange_number, which the service made afterwards.
        if (kind.text === true && parts[to - 1] === exchange) break
        if (kind.any === true) {
          ends.push(to)
          continue
        }
        text = to === from + 1 ? (parts[from] as string) : `${text}|${parts[to - 1] as string}`
        if (kind.holds(text)) ends.push(to)
      }
      found.set(key, ends)
    }
    return ends
  }
  // Tables of (n + 1) × (m + 1) cells, (j, k) at j * (m + 1) + k.
  const cell = (j: number, k: number) => j * (m + 1) + k
  // behind(j, k): the parts before j can take names before k.
  const behind = new Uint8Array((n + 1) * (m + 1))
  behind[cell(0, 0)] = 1
  for (let k = 0; k < m; k++)
    for (let j = 0; j <= n; j++) {
      if (!behind[cell(j, k)]) continue
      if (skippable(k)) behind[cell(j, k + 1)] = 1
      for (const to of runs(k, j)) behind[cell(to, k + 1)] = 1
    }
  // ahead(j, k): the parts from j on can take names from k on, every required one among those used. Asked only of
  // cells behind() reaches (a few hundred of the table's thousand or more), each answer kept: 1 yes, 2 no.
  const known = new Uint8Array((n + 1) * (m + 1))
  const ahead = (j: number, k: number): boolean => {
    if (k === m) return j === n
    const at = cell(j, k)
    if (known[at] === 0) known[at] = (skippable(k) && ahead(j, k + 1)) || runs(k, j).some((to) => ahead(to, k + 1)) ? 1 : 2
    return known[at] === 1
  }
  for (const name of ACTED_ON) {
    const k = NAMES.indexOf(name)
    // An absent field reads as empty, as the receiver reads it.
    const readings = new Set<string>()
    for (let j = 0; j <= n; j++) {
      if (!behind[cell(j, k)]) continue
      if (skippable(k) && ahead(j, k + 1)) readings.add('')
      for (const to of runs(k, j)) if (ahead(to, k + 1)) readings.add(joined(j, to))
    }
    if (readings.size > 1) return `${name} could be another signed value under a renamed field`
  }
  return undefined
}
