/** Refuses a missing Checksum Token before anything is signed. The token's value is never part of the message, not even its length. */
export function assertChecksumToken(checksumToken: unknown): asserts checksumToken is string {
  if (typeof checksumToken !== 'string' || checksumToken === '')
    throw new TypeError('checksumToken must be a non-empty string (the Checksum Token from the dashboard)')
}
