/**
 * A walk over JSON text before it is parsed (valid or not: it only counts and compares keys). It counts the
 * members and elements, so that a body of thousands is refused before JSON.parse builds them, and it finds the
 * first key that repeats inside one object: JSON.parse keeps the last of two equal keys without a word, and a
 * signed message with a repeated name is refused in form bodies, so JSON bodies get the same rule.
 */
export interface JsonScan {
  /** Members and elements, counted up to `most` + 1 (the walk stops there). */
  readonly members: number
  readonly repeated: string | undefined
}

export function scanJson(text: string, most: number): JsonScan {
  const keySets: Array<Set<string> | null> = []
  let expectKey = false
  let members = 0
  let repeated: string | undefined
  for (let i = 0; i < text.length && members <= most; i++) {
    const code = text.charCodeAt(i)
    if (code === 0x22) {
      const end = endOfString(text, i)
      if (expectKey) {
        const keys = keySets[keySets.length - 1] as Set<string>
        const key = keyText(text.slice(i, end + 1))
        if (repeated === undefined && keys.has(key)) repeated = key
        keys.add(key)
        expectKey = false
      }
      i = end
    } else if (code === 0x7b) {
      keySets.push(new Set())
      expectKey = true
      members++
    } else if (code === 0x5b) {
      keySets.push(null)
      members++
    } else if (code === 0x7d || code === 0x5d) {
      keySets.pop()
    } else if (code === 0x2c) {
      expectKey = keySets[keySets.length - 1] instanceof Set
      members++
    }
  }
  return { members, repeated }
}

function keyText(quoted: string): string {
  try {
    return JSON.parse(quoted) as string
  } catch {
    return quoted
  }
}

function endOfString(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === 0x5c) i++
    else if (code === 0x22) return i
  }
  return text.length - 1
}
