import { byteOrder } from '../field-order.js'
import type { FieldCheck } from './fields.js'
import type { ExpectedNames } from './form.js'

/**
 * What a message's list of field names implies, independent of values: the signing order, where each field
 * sits, and whether a name repeats. The service posts the same names in the same order message after message,
 * so a receiver computes this once per shape instead of sorting ~35 names per delivery.
 */
export interface Shape {
  readonly names: readonly string[]
  /** Positions of the signed fields (all but `checksum`) in byte order of their names. */
  readonly signedOrder: readonly number[]
  /** Position of each name; prototype-free, so `__proto__` and friends are ordinary names. */
  readonly index: Readonly<Record<string, number>>
  /** The first name that occurs twice, if any. */
  readonly repeatedName: string | undefined
  /** The names as a form scan can recognise them in raw bytes; undefined when some name could not be. */
  readonly expected: ExpectedNames | undefined
  /** The field rules placed for this shape (fields.ts flatChecks), made when a flat message of it is first checked. */
  flatChecks?: readonly FieldCheck[]
  /** The shapes of its fields without the first few (unsigned-query.ts), by how many are left out: made once each. */
  suffixes?: Map<number, SuffixShape>
}

/** The shape of a message's fields from some position on, and its signed order in the whole message's positions. */
export interface SuffixShape extends Shape {
  readonly wholeSignedOrder: readonly number[]
}

/**
 * Each name followed by `=`, when every name is plain ASCII that a form body carries as is. A name holding `=`,
 * `&`, `%`, `+` or `[` (only possible through escapes) could line up with other raw names, so such a shape has none.
 */
function expectedNames(names: readonly string[]): ExpectedNames | undefined {
  const bytes: number[] = []
  const ends = new Int32Array(names.length)
  for (const [at, name] of names.entries()) {
    for (let i = 0; i < name.length; i++) {
      const code = name.charCodeAt(i)
      if (code >= 0x80 || code < 0x20 || '=&%+['.includes(name[i] as string)) return undefined
      bytes.push(code)
    }
    bytes.push(0x3d)
    ends[at] = bytes.length
  }
  const run = Uint8Array.from(bytes)
  return { names, ends, view: new DataView(run.buffer) }
}

/** @param recognisable also prepare the names for a form scan to expect (only a cached shape is ever expected) */
export function computeShape(names: readonly string[], recognisable = false): Shape {
  const order = byteOrder(names)
  const index: Record<string, number> = Object.create(null)
  const signedOrder: number[] = []
  let repeatedName: string | undefined
  let previous: string | undefined
  for (const position of order) {
    const name = names[position] as string
    if (name === previous && repeatedName === undefined) repeatedName = name
    previous = name
    index[name] = position
    if (name !== 'checksum') signedOrder.push(position)
  }
  const own = names.slice()
  return { names: own, signedOrder, index, repeatedName, expected: recognisable ? expectedNames(own) : undefined }
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  // A form scan that recognised the expected names hands back the shape's own array.
  if (a === b) return true
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/**
 * A few recent shapes, most recent first. Bounded, because forged messages reach this point before any
 * checksum has been checked and must not grow memory.
 */
export class ShapeCache {
  private readonly shapes: Shape[] = []
  constructor(private readonly capacity = 16) {}

  /** The names of the most recent shape, for the next form scan to expect. */
  get expected(): ExpectedNames | undefined {
    return this.shapes[0]?.expected
  }

  get(names: readonly string[]): Shape {
    const shapes = this.shapes
    for (let i = 0; i < shapes.length; i++) {
      const shape = shapes[i] as Shape
      if (sameNames(shape.names, names)) {
        if (i > 0) {
          shapes.splice(i, 1)
          shapes.unshift(shape)
        }
        return shape
      }
    }
    const shape = computeShape(names, true)
    shapes.unshift(shape)
    if (shapes.length > this.capacity) shapes.pop()
    return shape
  }
}
