/**
 * Checked input as form fields: nested objects as `name[key]`, booleans as `true`/`false`. An empty optional
 * value is left out (the service reads it as not given), except `buyer_phone`, which is sent as it was given,
 * `''` included, because that is what shops without a phone number send.
 */
export function formFields(valid: Readonly<Record<string, unknown>>, skip: readonly string[] = []): Record<string, string> {
  const fields: Record<string, string> = {}
  for (const [name, value] of Object.entries(valid)) {
    if (value === undefined || skip.includes(name)) continue
    if (value === '' && name !== 'buyer_phone') continue
    if (typeof value === 'object' && value !== null) {
      for (const [key, inner] of Object.entries(value)) if (inner !== undefined) fields[`${name}[${key}]`] = String(inner)
    } else fields[name] = String(value)
  }
  return fields
}
