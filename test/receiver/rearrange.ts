/**
 * What a hostile buyer can do with one genuine signed result: give its values other names, keeping the sorted
 * sequence of values (and so the checksum) unchanged. Names are compared in byte order, as the service sorts them.
 */
export type Pairs = readonly (readonly [string, string])[]

const byteOrder = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b))

/** The signed fields of a form body in the order they are signed (checksum apart). */
export function signedPairs(body: string): { pairs: Pairs; checksum: string } {
  const all = [...new URLSearchParams(body)]
  const checksum = all.find(([name]) => name === 'checksum')?.[1] ?? ''
  const pairs = all.filter(([name]) => name !== 'checksum').sort(([a], [b]) => byteOrder(a, b))
  return { pairs, checksum }
}

/**
 * The same values under new names: `fixed` gives the name for some positions; every other position keeps its
 * own name when it still fits between its neighbours, or gets one made to fit. Undefined when no such naming
 * exists with these fixed names.
 */
export function renamed(pairs: Pairs, fixed: ReadonlyMap<number, string>): Pairs | undefined {
  const names: (string | undefined)[] = pairs.map((_, i) => fixed.get(i))
  const nextFixed = (i: number): string | undefined => {
    for (let j = i + 1; j < names.length; j++) if (fixed.has(j)) return fixed.get(j)
    return undefined
  }
  for (let i = 0; i < names.length; i++) {
    if (names[i] !== undefined) continue
    const previous = i === 0 ? '' : (names[i - 1] as string)
    const limit = nextFixed(i)
    const own = pairs[i]![0]
    const fits = (name: string): boolean => byteOrder(previous, name) < 0 && (limit === undefined || byteOrder(name, limit) < 0)
    names[i] = fits(own) ? own : fits(`${previous}0`) ? `${previous}0` : undefined
    if (names[i] === undefined) return undefined
  }
  for (let i = 1; i < names.length; i++) if (byteOrder(names[i - 1] as string, names[i] as string) >= 0) return undefined
  if (names.includes('checksum')) return undefined
  return pairs.map(([, value], i) => [names[i] as string, value] as const)
}

/** The value at one position moved under `target`, the names between pushed aside. */
export function moved(pairs: Pairs, from: number, target: string, keep: ReadonlyMap<number, string> = new Map()): Pairs | undefined {
  return renamed(pairs, new Map([...keep, [from, target]]))
}

export function formBody(pairs: Pairs, checksum: string): string {
  return new URLSearchParams([...pairs.map(([n, v]) => [n, v] as [string, string]), ['checksum', checksum]]).toString()
}

export const indexOf = (pairs: Pairs, name: string): number => pairs.findIndex(([n]) => n === name)
