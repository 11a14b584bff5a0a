import type { FieldValue } from '../values.js'

/**
 * The service's back end signs a nested field (params, shipping_address, billing_address) as the text Ruby's
 * Hash#inspect prints. Ruby 3.4 changed that text from `{"a"=>"b"}` to `{"a" => "b"}`; we can reproduce both.
 */
export type RubyStyle = 'classic' | 'ruby34'

const SIMPLE_ESCAPES: Record<number, string> = {
  0x07: '\\a',
  0x08: '\\b',
  0x09: '\\t',
  0x0a: '\\n',
  0x0b: '\\v',
  0x0c: '\\f',
  0x0d: '\\r',
  0x1b: '\\e',
  0x22: '\\"',
  0x5c: '\\\\',
}

function isNonPrintable(code: number): boolean {
  return code < 0x20 || code === 0x7f || (code >= 0x80 && code <= 0x9f) || code === 0x2028 || code === 0x2029
}

/** String#inspect for a UTF-8 string, as rb_str_inspect writes it. */
export function rubyInspectString(text: string): string {
  let out = '"'
  let plainFrom = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    let escape: string | undefined
    if (code === 0x23) {
      // `#{`, `#$` and `#@` would interpolate inside a Ruby literal, so inspect escapes the `#`.
      const next = text.charCodeAt(i + 1)
      if (next === 0x7b || next === 0x24 || next === 0x40) escape = '\\#'
    } else {
      escape = SIMPLE_ESCAPES[code]
      if (escape === undefined && isNonPrintable(code)) escape = `\\u${code.toString(16).toUpperCase().padStart(4, '0')}`
    }
    if (escape !== undefined) {
      out += text.slice(plainFrom, i) + escape
      plainFrom = i + 1
    }
  }
  return `${out}${text.slice(plainFrom)}"`
}

/** Value#inspect for the values a form or JSON body can carry. */
export function rubyInspect(value: FieldValue, style: RubyStyle): string {
  if (value === null) return 'nil'
  if (typeof value === 'string') return rubyInspectString(value)
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  if (Array.isArray(value)) return `[${value.map((item) => rubyInspect(item, style)).join(', ')}]`
  const arrow = style === 'classic' ? '=>' : ' => '
  const parts: string[] = []
  for (const [key, item] of value) parts.push(rubyInspectString(key) + arrow + rubyInspect(item, style))
  return `{${parts.join(', ')}}`
}
