import { fieldsFromInput } from './checksum.js'
import { toMessage } from './message.js'
import type { ShapeCache } from './shape.js'
import type { FieldInput } from '../values.js'
import { type VerifiedPayment, validateAndClassify } from './verify.js'

/**
 * A payment record read over the authenticated API (reconciliation): checked and classified exactly like a
 * delivery, but with no checksum, because it is trusted for where it came from, not for a signature. Never
 * use it for anything a browser or another server sent.
 */
export function trustedPayment(fields: Readonly<Record<string, FieldInput>>, shapes: ShapeCache): VerifiedPayment {
  return validateAndClassify(toMessage(fieldsFromInput(fields), shapes), 'plain', 'the API record')
}
