import { quotedName, ReceiverError } from './errors.js'
import { byteOrder } from '../field-order.js'
import { listedFields, type ReceivedFields } from './received-fields.js'
import { rubyInspect } from './ruby-inspect.js'
import { computeShape, type Shape, type ShapeCache } from './shape.js'
import { type FieldValue, isNested, MAX_NESTING_DEPTH, type NestedFields } from '../values.js'

/**
 * How the signed string was built. `plain` is the only one for messages without nested fields; for nested ones
 * the service's exact rendering is not publicly pinned down, so each documented candidate is tried.
 */
export type Rendering = 'plain' | 'ruby' | 'ruby34' | 'flat'

export interface SignedText {
  readonly rendering: Rendering
  /** The signed string, as text or already as its UTF-8 bytes. */
  readonly data: string | Buffer
}

/** The text a value stands for in the signed string: booleans as true/false, null as empty. */
export function scalarText(value: FieldValue): string {
  if (typeof value === 'string') return value
  if (value === null) return ''
  return String(value)
}

function signedValueText(value: FieldValue, rendering: Rendering): string {
  if (!isNested(value)) return scalarText(value)
  return rubyInspect(value, rendering === 'ruby34' ? 'ruby34' : 'classic')
}

/** Top-level fields of one delivery, with nested ones grouped, and the strings its checksum may be over. */
export class Message {
  constructor(
    /** Top-level fields; names are unique. */
    readonly fields: ReceivedFields,
    readonly shape: Shape,
    /** Nested messages only: the fields with bracket names, as the `flat` rendering signs them. */
    private readonly flatFields?: { names: readonly string[]; values: readonly string[] },
  ) {}

  get names(): readonly string[] {
    return this.fields.names
  }

  get hasNestedValues(): boolean {
    return this.flatFields !== undefined
  }

  get(name: string): FieldValue | undefined {
    const position = this.shape.index[name]
    return position === undefined ? undefined : this.fields.value(position)
  }

  /** The field as text, or undefined when it is absent or nested. */
  text(name: string): string | undefined {
    const value = this.get(name)
    return value === undefined || isNested(value) ? undefined : scalarText(value)
  }

  /** The text of the field at `position`; only for a message without nested values. */
  textAt(position: number): string {
    return scalarText(this.fields.value(position))
  }

  signedTexts(): SignedText[] {
    if (this.flatFields === undefined) {
      const bytes = this.fields.signedBytes?.(this.shape.signedOrder)
      return [{ rendering: 'plain', data: bytes ?? this.joinSigned('plain') }]
    }
    const candidates: SignedText[] = [
      { rendering: 'ruby', data: this.joinSigned('ruby') },
      { rendering: 'ruby34', data: this.joinSigned('ruby34') },
    ]
    const { names, values } = this.flatFields
    const order = byteOrder(names).filter((position) => names[position] !== 'checksum')
    candidates.push({ rendering: 'flat', data: order.map((position) => values[position]).join('|') })
    return candidates
  }

  private joinSigned(rendering: Rendering): string {
    const order = this.shape.signedOrder
    // join() yields one flat string; `+=` would build a rope the HMAC has to flatten again.
    const parts = new Array<string>(order.length)
    for (let i = 0; i < order.length; i++) parts[i] = signedValueText(this.fields.value(order[i] as number), rendering)
    return parts.join('|')
  }
}

const BRACKET_NAME = /^([^[\]]+)((?:\[[^[\]]*\])+)$/

function pathOf(name: string): string[] {
  const match = BRACKET_NAME.exec(name)
  if (match === null) return [name]
  const keys = (match[2] as string).slice(1, -1).split('][')
  if (keys.length >= MAX_NESTING_DEPTH)
    throw new ReceiverError('invalid_field_name', `field ${quotedName(name)} is nested more than ${MAX_NESTING_DEPTH} levels deep`)
  return [match[1] as string, ...keys]
}

function repeated(name: string): ReceiverError {
  return new ReceiverError('duplicate_field', `field ${quotedName(name)} is given more than once or clashes with another field`, {
    fields: [name],
  })
}

/**
 * Groups `params[a]=1&params[b]=2` into `params: {a: 1, b: 2}` as Rack does, keeping received key order. A name
 * that is given twice, or used both as a value and as a container, is refused.
 */
function groupBrackets(names: readonly string[], values: readonly FieldValue[]): NestedFields {
  const top: NestedFields = new Map()
  for (let i = 0; i < names.length; i++) {
    const name = names[i] as string
    const value = values[i] as FieldValue
    const path = pathOf(name)
    let container: NestedFields | FieldValue[] = top
    for (let depth = 0; depth < path.length; depth++) {
      const key = path[depth] as string
      const last = depth === path.length - 1
      if (key === '') {
        if (!Array.isArray(container)) throw repeated(name)
        if (!last) throw new ReceiverError('invalid_field_name', `field ${quotedName(name)} nests inside an array, which is not supported`)
        container.push(value)
        continue
      }
      if (!(container instanceof Map)) throw repeated(name)
      const existing: FieldValue | undefined = container.get(key)
      if (last) {
        if (existing !== undefined) throw repeated(name)
        container.set(key, value)
        continue
      }
      const wantsArray = path[depth + 1] === ''
      if (existing === undefined) {
        const created: NestedFields | FieldValue[] = wantsArray ? [] : new Map()
        container.set(key, created)
        container = created
      } else if (wantsArray ? Array.isArray(existing) : existing instanceof Map) {
        container = existing as NestedFields | FieldValue[]
      } else {
        throw repeated(name)
      }
    }
  }
  return top
}

/** Nested objects as bracket names with scalar values, the way a form body carries them. */
function flatten(name: string, value: FieldValue, names: string[], values: FieldValue[]): void {
  if (value instanceof Map) for (const [key, item] of value) flatten(`${name}[${key}]`, item, names, values)
  else if (Array.isArray(value)) for (const item of value) flatten(`${name}[]`, item, names, values)
  else {
    names.push(name)
    values.push(value)
  }
}

/** Builds the message of a delivery; `shapes` makes the common flat case skip sorting. */
export function toMessage(fields: ReceivedFields, shapes: ShapeCache): Message {
  if (fields.layout === 'flat') {
    const shape = shapes.get(fields.names)
    if (shape.repeatedName !== undefined) throw repeated(shape.repeatedName)
    return new Message(fields, shape)
  }
  // Form bodies and JSON bodies meet here in one form: every nested value as bracket names.
  const flat = { names: [] as string[], values: [] as FieldValue[] }
  fields.names.forEach((name, i) => flatten(name, fields.value(i), flat.names, flat.values))
  const grouped = groupBrackets(flat.names, flat.values)
  const names = [...grouped.keys()]
  const values = [...grouped.values()]
  const shape = computeShape(names)
  const top = listedFields(names, values, 'flat')
  // A stray `[` in a name (`a[b`) groups into nothing: such a message has one signed string, like any flat one.
  if (!values.some(isNested)) return new Message(top, shape)
  return new Message(top, shape, { names: flat.names, values: flat.values.map(scalarText) })
}
