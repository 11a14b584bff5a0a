import type { FieldInput } from '../values.js'

function appendForm(pairs: [string, string][], name: string, value: FieldInput): void {
  if (value === undefined) return
  if (value === null || typeof value !== 'object') {
    pairs.push([name, value === null ? '' : String(value)])
  } else if (Array.isArray(value)) {
    for (const item of value) appendForm(pairs, `${name}[]`, item)
  } else {
    const entries = value instanceof Map ? [...value.entries()] : Object.entries(value)
    for (const [key, item] of entries) appendForm(pairs, `${name}[${key}]`, item as FieldInput)
  }
}

/** Encodes fields as the service posts them: nested objects as `params[reference1]=...` pairs. */
export function encodeForm(fields: Readonly<Record<string, FieldInput>>): string {
  const pairs: [string, string][] = []
  for (const [name, value] of Object.entries(fields)) appendForm(pairs, name, value)
  return new URLSearchParams(pairs).toString()
}
