/**
 * Where `JSON.parse(text)` failed, as `line L, column C` (both from 1), or undefined when the message gave no position.
 * Only the position is taken from JSON.parse's message, never the message itself: it can quote the text around the
 * error, and the files read this way (a config, a state file) hold Auth Tokens and Checksum Tokens.
 */
export function jsonErrorPlace(text: string, error: unknown): string | undefined {
  const message = error instanceof Error ? error.message : ''
  const position = / in JSON at position (\d+)(?: \(line \d+ column \d+\))?$/.exec(message)?.[1]
  if (position === undefined) return undefined
  const before = text.slice(0, Number(position))
  const lineStart = before.lastIndexOf('\n') + 1
  return `line ${before.split('\n').length}, column ${before.length - lineStart + 1}`
}
