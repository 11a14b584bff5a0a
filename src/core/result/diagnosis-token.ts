/**
 * Characters a Checksum Token picks up on its way from the dashboard (or from documentation samples, which are
 * known to carry U+200B) into configuration: invisible characters, whitespace, quotes around it. The genuine
 * token is plain printable text, so removing them is the one candidate worth an HMAC. What is reported is the
 * characters' Unicode names and whether they sit at the start, the end or inside: nothing about the token itself.
 */

const INVISIBLE: ReadonlyMap<number, string> = new Map([
  [0x00ad, 'SOFT HYPHEN'],
  [0x180e, 'MONGOLIAN VOWEL SEPARATOR'],
  [0x200b, 'ZERO WIDTH SPACE'],
  [0x200c, 'ZERO WIDTH NON-JOINER'],
  [0x200d, 'ZERO WIDTH JOINER'],
  [0x200e, 'LEFT-TO-RIGHT MARK'],
  [0x200f, 'RIGHT-TO-LEFT MARK'],
  [0x202a, 'LEFT-TO-RIGHT EMBEDDING'],
  [0x202b, 'RIGHT-TO-LEFT EMBEDDING'],
  [0x202c, 'POP DIRECTIONAL FORMATTING'],
  [0x202d, 'LEFT-TO-RIGHT OVERRIDE'],
  [0x202e, 'RIGHT-TO-LEFT OVERRIDE'],
  [0x2060, 'WORD JOINER'],
  [0x2061, 'FUNCTION APPLICATION'],
  [0x2062, 'INVISIBLE TIMES'],
  [0x2063, 'INVISIBLE SEPARATOR'],
  [0x2064, 'INVISIBLE PLUS'],
  [0xfeff, 'BYTE ORDER MARK (ZERO WIDTH NO-BREAK SPACE)'],
])

const WHITESPACE: ReadonlyMap<number, string> = new Map([
  [0x09, 'TAB'],
  [0x0a, 'LINE FEED'],
  [0x0b, 'LINE TABULATION'],
  [0x0c, 'FORM FEED'],
  [0x0d, 'CARRIAGE RETURN'],
  [0x20, 'SPACE'],
  [0x85, 'NEXT LINE'],
  [0xa0, 'NO-BREAK SPACE'],
  [0x1680, 'OGHAM SPACE MARK'],
  [0x2028, 'LINE SEPARATOR'],
  [0x2029, 'PARAGRAPH SEPARATOR'],
  [0x202f, 'NARROW NO-BREAK SPACE'],
  [0x205f, 'MEDIUM MATHEMATICAL SPACE'],
  [0x3000, 'IDEOGRAPHIC SPACE'],
  // U+2000..U+200A: EN QUAD to HAIR SPACE, the typographic spaces.
  ...Array.from({ length: 11 }, (_, i) => [0x2000 + i, 'TYPOGRAPHIC SPACE'] as [number, string]),
])

// Opening and closing quotes that wrap a pasted token, by the opening one.
const QUOTES: ReadonlyMap<string, string> = new Map([
  ['"', '"'],
  ["'", "'"],
  ['`', '`'],
  ['\u201c', '\u201d'],
  ['\u2018', '\u2019'],
  ['\u00ab', '\u00bb'],
])

export interface TokenCleanup {
  /** The token without the characters found. */
  readonly token: string
  /** What was removed, for the diagnosis: `whitespace (U+0020 SPACE at the end)`, ... */
  readonly found: readonly string[]
}

function codeName(code: number, name: string): string {
  return `U+${code.toString(16).toUpperCase().padStart(4, '0')} ${name}`
}

function isStray(code: number): boolean {
  return INVISIBLE.has(code) || WHITESPACE.has(code)
}

/** Where a stray character sits relative to the token's own characters: never an index, which would tell its length. */
function where(index: number, first: number, last: number): string {
  return index < first ? 'at the start' : index > last ? 'at the end' : 'inside'
}

/** The token without stray characters, and what they were; undefined when it has none. */
export function cleanToken(token: string): TokenCleanup | undefined {
  const invisible = new Set<string>()
  const whitespace = new Set<string>()
  let first = 0
  while (first < token.length && isStray(token.charCodeAt(first))) first++
  let last = token.length - 1
  while (last >= 0 && isStray(token.charCodeAt(last))) last--
  let kept = ''
  for (let i = 0; i < token.length; i++) {
    const code = token.charCodeAt(i)
    const name = INVISIBLE.get(code) ?? WHITESPACE.get(code)
    if (name === undefined) {
      kept += token[i]
      continue
    }
    ;(INVISIBLE.has(code) ? invisible : whitespace).add(`${codeName(code, name)} ${where(i, first, last)}`)
  }
  const found: string[] = []
  if (invisible.size > 0) found.push(`invisible characters (${[...invisible].join(', ')})`)
  if (whitespace.size > 0) found.push(`whitespace (${[...whitespace].join(', ')})`)
  const close = QUOTES.get(kept[0] ?? '')
  if (kept.length > 2 && close !== undefined && kept.endsWith(close)) {
    found.push(`quotes (${kept[0] as string} and ${close} around it)`)
    kept = kept.slice(1, -1)
  }
  return found.length === 0 || kept === '' ? undefined : { token: kept, found }
}
