import { byteOrder } from './field-order.js'

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
}

export function computeShape(names: readonly string[]): Shape {
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
  return { names: names.slice(), signedOrder, index, repeatedName }
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
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
    const shape = computeShape(names)
    shapes.unshift(shape)
    if (shapes.length > this.capacity) shapes.pop()
    return shape
  }
}
