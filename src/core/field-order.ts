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
