/** What the memory store keeps of one delivery besides its payment's record (trail.ts packs five values in `kind`). */
export interface DeliveryFields {
  readonly orderNumber: string | null
  readonly receivedAfter: number
  readonly verifiedAfter: number
  readonly answeredAfter: number
  readonly kind: number
  readonly attemptTag: string
  readonly attemptNumber: number
  readonly code: string | null
  readonly message: string | null
}

/**
 * A payment's one delivery and its record, as one string: what the memory store keeps for most payments, for the
 * whole retention. An object and its order number were two things for the GC to visit for every payment kept, one
 * of them with pointers to follow; a flat string is one, with none, and a payment with its timeline keeps 174 bytes
 * where it kept 294 (docs/benchmarks.md, "the timeline in one string").
 *
 * The fields in decimal, each followed by '~', then the order number:
 * `record ~ receivedAfter ~ verifiedAfter ~ answeredAfter ~ kind·2 + hasOrderNumber ~ attemptNumber ~ attemptTag ~ orderNumber`
 * with an empty record while no state of the payment was handled. A delivery with an error code or message, a tag
 * holding '~' or a number that is no safe integer is not packed (the caller keeps the object).
 */
export type PackedDelivery = string

const SEP = '~'

const integer = (value: number): boolean => Number.isSafeInteger(value)

export function packDelivery(fields: DeliveryFields, record: number | undefined): PackedDelivery | undefined {
  const { receivedAfter, verifiedAfter, answeredAfter, kind, attemptNumber, attemptTag, orderNumber } = fields
  if (fields.code !== null || fields.message !== null || attemptTag.includes(SEP)) return undefined
  if (!(integer(receivedAfter) && integer(verifiedAfter) && integer(answeredAfter) && integer(kind) && integer(attemptNumber))) return undefined
  if (record !== undefined && !integer(record)) return undefined
  // join, not + or a template: it writes one flat string, where joined pieces would stay a tree of strings (the
  // pieces kept alive, more for the GC to visit) until first read whole. Decimal: V8 caches small numbers' strings.
  return [record ?? '', receivedAfter, verifiedAfter, answeredAfter, kind * 2 + (orderNumber === null ? 0 : 1), attemptNumber, attemptTag, orderNumber ?? ''].join(SEP)
}

const MINUS = 0x2d
const SEP_CODE = 0x7e

/** Where field `field` starts: just past the separator before it. */
function fieldStart(packed: PackedDelivery, field: number): number {
  let at = 0
  for (let skipped = 0; skipped < field; skipped++) at = packed.indexOf(SEP, at) + 1
  return at
}

/**
 * Field `field`'s number (NaN when the field is empty), read digit by digit where it stands: no string per field
 * and no array, since the record is read for every delivery of a payment seen before.
 */
function numberAt(packed: PackedDelivery, field: number): number {
  let at = fieldStart(packed, field)
  let code = packed.charCodeAt(at)
  const sign = code === MINUS ? -1 : 1
  if (sign === -1) code = packed.charCodeAt(++at)
  const first = at
  let value = 0
  for (; code !== SEP_CODE; code = packed.charCodeAt(++at)) value = value * 10 + (code - 0x30)
  return at === first ? Number.NaN : sign * value
}

// The fields' places, in the order packDelivery joins them.
const RECORD = 0
const RECEIVED = 1
const VERIFIED = 2
const ANSWERED = 3
const KIND = 4
const ATTEMPT = 5
const TAG = 6

/** The record a packed delivery holds, if any state of its payment was handled. */
export function packedRecord(packed: PackedDelivery): number | undefined {
  const record = numberAt(packed, RECORD)
  return Number.isNaN(record) ? undefined : record
}

/** The same delivery with `record` as its payment's record. */
export function withPackedRecord(packed: PackedDelivery, record: number | undefined): PackedDelivery {
  return [record ?? '', packed.slice(packed.indexOf(SEP) + 1)].join(SEP)
}

/** Its `kind` (trail.ts). */
export function packedKind(packed: PackedDelivery): number {
  return Math.floor(numberAt(packed, KIND) / 2)
}

/** When its answer was given, in milliseconds after the origin its times count from (receivedAfter + answeredAfter). */
export function packedAnsweredAfter(packed: PackedDelivery): number {
  return numberAt(packed, RECEIVED) + numberAt(packed, ANSWERED)
}

/** The delivery's fields and its payment's record. */
export function unpackDelivery(packed: PackedDelivery): DeliveryFields & { record: number | undefined } {
  const flagged = numberAt(packed, KIND)
  const tagAt = fieldStart(packed, TAG)
  const tagEnd = packed.indexOf(SEP, tagAt)
  return {
    record: packedRecord(packed),
    orderNumber: flagged % 2 === 1 ? packed.slice(tagEnd + 1) : null,
    receivedAfter: numberAt(packed, RECEIVED),
    verifiedAfter: numberAt(packed, VERIFIED),
    answeredAfter: numberAt(packed, ANSWERED),
    kind: Math.floor(flagged / 2),
    attemptTag: packed.slice(tagAt, tagEnd),
    attemptNumber: numberAt(packed, ATTEMPT),
    code: null,
    message: null,
  }
}
