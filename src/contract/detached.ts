/**
 * V8 makes a slice of 13 or more characters a view into the string it was cut from (a "sliced string"), and a view
 * keeps the whole of that string alive. Every field value the form decoder reads is such a slice of the delivery's
 * body text, so an exchange_number kept as a map key kept its delivery's body (1.2 KB for a typical callback) for
 * the retention: about 1.3 KB per payment where the record itself is 80 bytes, as soon as the numbers are as long
 * as the service's (`ULDYE1656661277`, 15 characters).
 */
const VIEWS_FROM = 13
/** Characters copied per fromCharCode call: a long text's codes as arguments would overflow the stack. */
const PER_CALL = 4096

/**
 * The same characters in a flat string of their own, which keeps nothing else alive: for strings kept long after
 * their delivery. Joining slices shorter than 13 characters (copies) costs about as much per string, but leaves a
 * joined string that keeps its pieces until it is first hashed, and relies on V8's threshold to copy at all.
 */
export function detached(text: string): string {
  if (text.length < VIEWS_FROM) return text
  // The service's numbers and most merchants' (letters, digits, '-', '_', '.'): encodeURIComponent gives them back
  // unchanged in a new flat string, at half the cost of copying their codes. Anything it escapes (so the length
  // differs) or refuses (a lone surrogate) is copied code by code below.
  if (text.length <= PER_CALL) {
    try {
      const copy = encodeURIComponent(text)
      if (copy.length === text.length) return copy
    } catch {
      // A lone surrogate: copied below.
    }
  }
  if (text.length > PER_CALL) {
    // Joined from copies: a string of pieces, flattened where first hashed, that still keeps nothing else alive.
    let copy = ''
    for (let at = 0; at < text.length; at += PER_CALL) copy += detached(text.slice(at, at + PER_CALL))
    return copy
  }
  const codes = new Array<number>(text.length)
  for (let i = 0; i < text.length; i++) codes[i] = text.charCodeAt(i)
  return String.fromCharCode.apply(null, codes)
}
