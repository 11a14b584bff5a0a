import { type FieldInput, type FieldValue, isNested, MAX_NESTING_DEPTH, type NestedFields, toFieldValue } from '../values.js'
import { quotedName, ReceiverError } from './errors.js'
import { rubyInspect } from './ruby-inspect.js'

/**
 * The signed string lists values sorted by field name in byte order. JavaScript's default sort compares UTF-16 code
 * units, which agrees with UTF-8 byte order except when a name holds a character at or above U+D800 (a
 * surrogate pair sorts below U+E000..U+FFFF in UTF-16, above them in UTF-8); only then do we pay for a
 * code point comparison.
 */
export function compareCodePoints(a: string, b: string): number {
  const length = Math.min(a.length, b.length)
  for (let i = 0; i < length; i++) {
    const x = a.codePointAt(i) as number
    const y = b.codePointAt(i) as number
    if (x !== y) return x - y
    if (x > 0xffff) i++
  }
  return a.length - b.length
}

function needsCodePointOrder(names: readonly string[]): boolean {
  for (const name of names) {
    for (let i = 0; i < name.length; i++) if (name.charCodeAt(i) >= 0xd800) return true
  }
  return false
}

/** Distinct names sorted in byte order (a copy). */
export function sortedInByteOrder(names: readonly string[]): string[] {
  return needsCodePointOrder(names) ? [...names].sort(compareCodePoints) : [...names].sort()
}

/**
 * How the signed string was built. `plain` is the only one for messages without nested fields; for nested ones
 * the service's exact rendering is not publicly pinned down, so each documented candidate is tried.
 */
export type Rendering = 'plain' | 'ruby' | 'ruby34' | 'flat'

export interface SignedText {
  readonly rendering: Rendering
  readonly data: string
}

/** The text a value stands for in the signed string: booleans as true/false, null as empty. */
export function scalarText(value: FieldValue): string {
  if (typeof value === 'string') return value
  if (value === null) return ''
  return String(value)
}

/**
 * The top-level fields of one result, in received order, with nested ones grouped (`params[a]=1` → `params: {a}`),
 * and the strings its checksum may be over.
 */
export class Message {
  private readonly index: Map<string, number>
  private order: number[] | undefined

  constructor(
    readonly names: readonly string[],
    readonly values: readonly FieldValue[],
    /** Nested messages only: the fields with bracket names, as the `flat` rendering signs them. */
    private readonly flat?: { readonly names: readonly string[]; readonly values: readonly string[] },
  ) {
    this.index = new Map(names.map((name, i) => [name, i]))
  }

  get nested(): boolean {
    return this.flat !== undefined
  }

  has(name: string): boolean {
    return this.index.has(name)
  }

  get(name: string): FieldValue | undefined {
    const at = this.index.get(name)
    return at === undefined ? undefined : this.values[at]
  }

  /** The field as text, or undefined when it is absent or nested. */
  text(name: string): string | undefined {
    const value = this.get(name)
    return value === undefined || isNested(value) ? undefined : scalarText(value)
  }

  /** The fields other than `names`, in received order (the same values, a message of its own). */
  without(names: ReadonlySet<string>): Message {
    const kept = this.names.flatMap((name, i) => (names.has(name) ? [] : [i]))
    return new Message(
      kept.map((i) => this.names[i] as string),
      kept.map((i) => this.values[i] as FieldValue),
      this.flat,
    )
  }

  /** Every string the checksum may be over: one for a flat message, one per rendering for a nested one. */
  signedTexts(): SignedText[] {
    if (this.flat === undefined) return [{ rendering: 'plain', data: this.join((value) => scalarText(value)) }]
    const flat = this.flat
    return [
      { rendering: 'ruby', data: this.join((value) => (isNested(value) ? rubyInspect(value, 'classic') : scalarText(value))) },
      { rendering: 'ruby34', data: this.join((value) => (isNested(value) ? rubyInspect(value, 'ruby34') : scalarText(value))) },
      { rendering: 'flat', data: flatOrder(flat.names).map((i) => flat.values[i]).join('|') },
    ]
  }

  /** The signed string of one rendering (the plain one when nothing is nested). */
  signedText(rendering: Rendering): string {
    const texts = this.signedTexts()
    return (texts.find((text) => text.rendering === rendering) ?? (texts[0] as SignedText)).data
  }

  /** The values in signed order, each as its signed text, with the name it stands under. */
  signedFields(rendering: Rendering): { name: string; text: string }[] {
    const flat = this.flat
    if (rendering === 'flat' && flat !== undefined) return flatOrder(flat.names).map((i) => ({ name: flat.names[i] as string, text: flat.values[i] as string }))
    const style = rendering === 'ruby34' ? 'ruby34' : 'classic'
    return this.signedOrder().map((i) => {
      const value = this.values[i] as FieldValue
      return { name: this.names[i] as string, text: isNested(value) ? rubyInspect(value, style) : scalarText(value) }
    })
  }

  private join(text: (value: FieldValue) => string): string {
    return this.signedOrder()
      .map((i) => text(this.values[i] as FieldValue))
      .join('|')
  }

  /** Positions of the signed fields, worked out once: every rendering and check reads them. */
  private signedOrder(): number[] {
    return (this.order ??= signedOrder(this.names, this.index))
  }
}

/** Positions of the signed fields (all but `checksum`) in byte order of their names, which `index` locates. */
function signedOrder(names: readonly string[], index: ReadonlyMap<string, number>): number[] {
  return sortedInByteOrder(names.filter((name) => name !== 'checksum')).map((name) => index.get(name) as number)
}

/** The flat rendering's positions: its bracket names are unique, as grouping them refused repeats. */
function flatOrder(names: readonly string[]): number[] {
  return signedOrder(names, new Map(names.map((name, i) => [name, i])))
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

export function repeatedField(name: string): ReceiverError {
  return new ReceiverError('duplicate_field', `field ${quotedName(name)} is given more than once or clashes with another field`, { fields: [name] })
}

/**
 * Groups `params[a]=1&params[b]=2` into `params: {a: 1, b: 2}` as Rack does, keeping received key order. A name
 * given twice, or used both as a value and as a container, is refused.
 */
function groupBrackets(names: readonly string[], values: readonly FieldValue[]): NestedFields {
  const top: NestedFields = new Map()
  names.forEach((name, i) => {
    const path = pathOf(name)
    let container: NestedFields | FieldValue[] = top
    path.forEach((key, depth) => {
      const last = depth === path.length - 1
      if (key === '') {
        if (!Array.isArray(container)) throw repeatedField(name)
        if (!last) throw new ReceiverError('invalid_field_name', `field ${quotedName(name)} nests inside an array, which is not supported`)
        container.push(values[i] as FieldValue)
        return
      }
      if (!(container instanceof Map)) throw repeatedField(name)
      const existing: FieldValue | undefined = container.get(key)
      if (last) {
        if (existing !== undefined) throw repeatedField(name)
        container.set(key, values[i] as FieldValue)
        return
      }
      const wantsArray = path[depth + 1] === ''
      if (existing === undefined) {
        const created: NestedFields | FieldValue[] = wantsArray ? [] : new Map()
        container.set(key, created)
        container = created
      } else if (wantsArray ? Array.isArray(existing) : existing instanceof Map) {
        container = existing as NestedFields | FieldValue[]
      } else {
        throw repeatedField(name)
      }
    })
  })
  return top
}

/** Nested values as bracket names with scalar values, the way a form body carries them. */
function flatten(name: string, value: FieldValue, names: string[], values: FieldValue[]): void {
  if (value instanceof Map) for (const [key, item] of value) flatten(`${name}[${key}]`, item, names, values)
  else if (Array.isArray(value)) for (const item of value) flatten(`${name}[]`, item, names, values)
  else {
    names.push(name)
    values.push(value)
  }
}

/** The message of received fields (names may repeat here, and carry brackets): repeats refused, nesting grouped. */
export function toMessage(names: readonly string[], values: readonly FieldValue[]): Message {
  if (!names.some((name) => name.includes('[')) && !values.some(isNested)) {
    const seen = new Set<string>()
    for (const name of names) {
      if (seen.has(name)) throw repeatedField(name)
      seen.add(name)
    }
    return new Message(names, values)
  }
  // Form bodies and JSON bodies meet here in one form: every nested value as bracket names.
  const flat = { names: [] as string[], values: [] as FieldValue[] }
  names.forEach((name, i) => flatten(name, values[i] as FieldValue, flat.names, flat.values))
  const grouped = groupBrackets(flat.names, flat.values)
  const topValues = [...grouped.values()]
  // A stray `[` in a name (`a[b`) groups into nothing: such a message has one signed string, like any flat one.
  if (!topValues.some(isNested)) return new Message([...grouped.keys()], topValues)
  return new Message([...grouped.keys()], topValues, { names: flat.names, values: flat.values.map(scalarText) })
}

/** Caller-supplied fields (plain objects or Maps, possibly nested) as a message; undefined values are left out. */
export function messageOf(fields: Readonly<Record<string, FieldInput>> | ReadonlyMap<string, FieldInput>): Message {
  const names: string[] = []
  const values: FieldValue[] = []
  for (const [name, input] of fields instanceof Map ? fields.entries() : Object.entries(fields)) {
    const value = toFieldValue(input as FieldInput)
    if (value === undefined) continue
    names.push(name)
    values.push(value)
  }
  return toMessage(names, values)
}
