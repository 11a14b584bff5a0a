/**
 * JSON.parse keeps the last of two equal keys without a word. A signed message with a repeated name is
 * refused in form bodies, so JSON bodies get the same rule: this scanner walks the text (already known to be
 * valid JSON) and reports the first key that repeats inside one object.
 */
export function findRepeatedJsonKey(text: string): string | undefined {
  const keySets: Array<Set<string> | null> = []
  let expectKey = false
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === 0x22) {
      const end = endOfString(text, i)
      if (expectKey) {
        const keys = keySets[keySets.length - 1] as Set<string>
        const key = JSON.parse(text.slice(i, end + 1)) as string
        if (keys.has(key)) return key
        keys.add(key)
        expectKey = false
      }
      i = end
    } else if (code === 0x7b) {
      keySets.push(new Set())
      expectKey = true
    } else if (code === 0x5b) {
      keySets.push(null)
    } else if (code === 0x7d || code === 0x5d) {
      keySets.pop()
    } else if (code === 0x2c) {
      expectKey = keySets[keySets.length - 1] instanceof Set
    }
  }
  return undefined
}

function endOfString(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === 0x5c) i++
    else if (code === 0x22) return i
  }
  return text.length - 1
}
