import { createHmac } from 'node:crypto'

/**
 * A signer written from the spec alone (Authentication 6), sharing no code with the package: every field but
 * checksum, names sorted by their UTF-8 bytes, values joined by `|`, HMAC-SHA256 keyed by the Checksum Token,
 * lowercase hex. Flat text fields only.
 */
export function independentChecksum(fields: Readonly<Record<string, string>>, checksumToken: string): string {
  const names = Object.keys(fields)
    .filter((name) => name !== 'checksum')
    .sort((a, b) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')))
  const signed = names.map((name) => fields[name]).join('|')
  return createHmac('sha256', Buffer.from(checksumToken, 'utf8')).update(Buffer.from(signed, 'utf8')).digest('hex')
}

function formEncode(text: string): string {
  return encodeURIComponent(text).replace(/%20/g, '+')
}

/** The fields and their checksum as form text, in the given order with checksum last, as the service posts them. */
export function independentForm(fields: Readonly<Record<string, string>>, checksumToken: string): string {
  const pairs = [...Object.entries(fields), ['checksum', independentChecksum(fields, checksumToken)]]
  return pairs.map(([name, value]) => `${formEncode(name as string)}=${formEncode(value as string)}`).join('&')
}
