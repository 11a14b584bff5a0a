/**
 * Whether `token` can key the HMAC: non-empty text that is not NUL characters only. HMAC pads a key shorter than a
 * block with zero bytes, so a token of NULs signs exactly as the empty one does, and that key anybody has.
 */
export function isChecksumToken(token: unknown): token is string {
  return typeof token === 'string' && token !== '' && !/^\0+$/.test(token)
}

/** Refuses a missing Checksum Token before anything is signed. The token's value is never part of the message, not even its length. */
export function assertChecksumToken(checksumToken: unknown): asserts checksumToken is string {
  if (!isChecksumToken(checksumToken))
    throw new TypeError('checksumToken must be a non-empty string (the Checksum Token from the dashboard)')
}
