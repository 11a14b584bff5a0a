import type { FieldValue } from '../values.js'

/**
 * The fields of one delivery in received order, however they arrived.
 * - `flat`: every value is text or a JSON scalar and no name has brackets (the common case).
 * - `nested`: some name has brackets (`params[reference1]`, as form bodies carry nested fields) or some value
 *   is an object or array (JSON bodies, caller-supplied objects); grouping happens when the message is built.
 */
export interface ReceivedFields {
  readonly names: readonly string[]
  readonly layout: 'flat' | 'nested'
  value(i: number): FieldValue
  /** The UTF-8 bytes of the values at `order` joined by `|`, when the source can write them directly. */
  signedBytes?(order: readonly number[]): Buffer | undefined
}

export function listedFields(
  names: readonly string[],
  values: readonly FieldValue[],
  layout: ReceivedFields['layout'],
): ReceivedFields {
  return { names, layout, value: (i) => values[i] as FieldValue }
}
