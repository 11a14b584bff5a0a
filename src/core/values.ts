/**
 * Field values as they arrive: text from form bodies, any JSON value from JSON bodies. Nested objects are kept
 * as Maps internally because the signed Ruby rendering follows received key order, which plain objects lose
 * for integer-like keys.
 */
export type FieldValue = string | number | boolean | null | FieldValue[] | NestedFields
export type NestedFields = Map<string, FieldValue>

/** What a caller may pass where fields are expected: plain objects (any prototype-free JSON shape) or Maps. */
export type FieldInput =
  | string
  | number
  | boolean
  | null
  | undefined
  | readonly FieldInput[]
  | ReadonlyMap<string, FieldInput>
  | { readonly [name: string]: FieldInput }

export const MAX_NESTING_DEPTH = 8

/**
 * The most fields a delivery may carry, nested ones counted one by one. A result has about 45 and the merchant's
 * own params; anyone can send thousands of empty ones in one body, and each costs work before the checksum can be compared.
 */
export const MAX_FIELDS = 256

export function isNested(value: FieldValue): value is NestedFields | FieldValue[] {
  return typeof value === 'object' && value !== null
}

/** Turns caller-supplied plain objects into the internal ordered form; undefined values are dropped. */
export function toFieldValue(input: FieldInput, depth = 0): FieldValue | undefined {
  if (input === undefined) return undefined
  if (input === null || typeof input !== 'object') return input
  if (depth >= MAX_NESTING_DEPTH) throw new RangeError(`fields are nested more than ${MAX_NESTING_DEPTH} levels deep`)
  if (Array.isArray(input)) {
    const items: FieldValue[] = []
    for (const item of input as readonly FieldInput[]) {
      const value = toFieldValue(item, depth + 1)
      if (value !== undefined) items.push(value)
    }
    return items
  }
  const entries = input instanceof Map ? input.entries() : Object.entries(input)
  const map: NestedFields = new Map()
  for (const [key, item] of entries as Iterable<[string, FieldInput]>) {
    const value = toFieldValue(item, depth + 1)
    if (value !== undefined) map.set(key, value)
  }
  return map
}

/** The public, prototype-free object view of a value (what handlers see in `event.fields`). */
export function toPlain(value: FieldValue): unknown {
  if (value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) return value.map(toPlain)
  const out: Record<string, unknown> = Object.create(null)
  for (const [key, item] of value) out[key] = toPlain(item)
  return out
}

/**
 * The same text in a string of its own. A string cut from a larger one (a field value cut from a delivery's body)
 * may keep the larger one in memory for as long as it is kept: what a store keeps for days is copied first.
 */
export function ownCopy(text: string): string {
  return JSON.parse(JSON.stringify(text)) as string
}
