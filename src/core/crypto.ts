/*
 * HMAC-SHA256 and random ids from the platform, chosen once when this module loads: node:crypto where the
 * runtime has it (Node, Bun, Deno, workerd with nodejs_compat), reached through process.getBuiltinModule so that
 * no bundler for Workers or edge runtimes sees an import of it; Web Crypto everywhere else. Both compare a
 * checksum in constant time (timingSafeEqual, or crypto.subtle.verify, which compares inside the platform).
 */
type NodeCrypto = typeof import('node:crypto')
type CryptoKey = import('node:crypto').webcrypto.CryptoKey

function builtinCrypto(): NodeCrypto | undefined {
  const host = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process
  try {
    const found = host?.getBuiltinModule?.('node:crypto') as NodeCrypto | undefined
    return typeof found?.createHmac === 'function' && typeof found.timingSafeEqual === 'function' ? found : undefined
  } catch {
    return undefined
  }
}

const node = builtinCrypto()

/** Whether this runtime signs at once (node:crypto): the synchronous helpers and a refusal's diagnosis need it. */
export const canSignAtOnce = node !== undefined
const encoder = new TextEncoder()

function bytesOf(data: string | Uint8Array): Uint8Array {
  return typeof data === 'string' ? encoder.encode(data) : data
}

function hex(bytes: Uint8Array): string {
  let out = ''
  for (const byte of bytes) out += byte.toString(16).padStart(2, '0')
  return out
}

/** The checksum's 32 bytes from its 64 hex digits (either case); the caller checked the pattern. */
function hexBytes(text: string): Uint8Array {
  const bytes = new Uint8Array(text.length / 2)
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(text.slice(2 * i, 2 * i + 2), 16)
  return bytes
}

// Imported keys by token: a receiver uses one per credential set, so this stays small.
const webKeys = new Map<string, Promise<CryptoKey>>()

function webKey(token: string): Promise<CryptoKey> {
  let key = webKeys.get(token)
  if (key === undefined) {
    key = crypto.subtle.importKey('raw', encoder.encode(token), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify'])
    // A resolver may hand out any number of tokens: keep the cache bounded.
    if (webKeys.size >= 64) webKeys.clear()
    webKeys.set(token, key)
  }
  return key
}

/** HMAC-SHA256 of `data` keyed by `token`, as lowercase hex, at once: needs node:crypto. */
export function hmacSha256HexSync(token: string, data: string | Uint8Array): string {
  if (node === undefined)
    throw new TypeError(
      'signing at once needs node:crypto (Node.js, Bun, Deno, or Workers with nodejs_compat); on this runtime use the ' +
        'asynchronous form (hmacSha256Hex)',
    )
  return node.createHmac('sha256', token).update(data).digest('hex')
}

/** HMAC-SHA256 of `data` keyed by `token`, as lowercase hex. */
export async function hmacSha256Hex(token: string, data: string | Uint8Array): Promise<string> {
  if (node !== undefined) return hmacSha256HexSync(token, data)
  return hex(new Uint8Array(await crypto.subtle.sign('HMAC', await webKey(token), bytesOf(data) as Uint8Array<ArrayBuffer>)))
}

/** Whether `checksum` (64 hex digits) is the HMAC-SHA256 of `data` keyed by `token`, compared in constant time. */
export async function checksumMatches(token: string, data: string | Uint8Array, checksum: string): Promise<boolean> {
  if (node !== undefined) return node.timingSafeEqual(node.createHmac('sha256', token).update(data).digest(), Buffer.from(checksum, 'hex'))
  return crypto.subtle.verify('HMAC', await webKey(token), hexBytes(checksum) as Uint8Array<ArrayBuffer>, bytesOf(data) as Uint8Array<ArrayBuffer>)
}

/** A random id (lease owners, attempt groups): drawn when asked, never when a module loads. */
export function randomId(): string {
  return crypto.randomUUID()
}

/** SHA-1 as lowercase hex, for names that are content hashes by convention (Redis script SHAs), never for trust. */
export async function sha1Hex(text: string): Promise<string> {
  return hex(new Uint8Array(await crypto.subtle.digest('SHA-1', encoder.encode(text))))
}
