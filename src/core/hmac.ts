import { createHmac, hash } from 'node:crypto'
import { HEX_VALUE } from './hex.js'

/**
 * HMAC-SHA256 (RFC 2104) as two one-shot SHA-256 calls over precomputed pads:
 *   HMAC(K, m) = H((K ^ opad) || H((K ^ ipad) || m))
 * `createHmac` sets the key up again for every message and builds a stateful Hmac object each time; here each
 * key's padded blocks are made once, the message is written behind the inner pad in a reused buffer, and
 * `crypto.hash` (Node >= 20.12) hashes it in one native call with no object kept. On a 600-byte callback this is
 * about 2.5x cheaper than createHmac(...).update(...).digest(). Test vectors: test/core/hmac.test.ts.
 */

const BLOCK = 64
const DIGEST = 32
// A few keys: one per credential set in use. Bounded, because resolveChecksumToken may return anything.
const MAX_KEYS = 16

interface PaddedKey {
  /** K ^ ipad, one block. */
  readonly inner: Buffer
  /** K ^ opad followed by room for the inner digest. */
  readonly outer: Buffer
}

// Messages longer than this go through createHmac: the scratch must not grow to (and keep) the largest ever seen.
const MAX_SCRATCH = 64 * 1024

const keys = new Map<string, PaddedKey>()
// allocUnsafeSlow: never a slice of Node's shared pool, where the key-derived pad would sit beside other buffers.
let scratch = Buffer.allocUnsafeSlow(4096)
/** The key whose inner pad is in scratch[0, 64) now; most receivers use one key for every message. */
let scratchKey: PaddedKey | undefined

function paddedKey(key: string): PaddedKey {
  let padded = keys.get(key)
  if (padded !== undefined) return padded
  let bytes = Buffer.from(key, 'utf8')
  if (bytes.length > BLOCK) bytes = hash('sha256', bytes, 'buffer')
  const inner = Buffer.alloc(BLOCK, 0x36)
  const outer = Buffer.alloc(BLOCK + DIGEST, 0)
  outer.fill(0x5c, 0, BLOCK)
  for (let i = 0; i < bytes.length; i++) {
    inner[i] = (inner[i] as number) ^ (bytes[i] as number)
    outer[i] = (outer[i] as number) ^ (bytes[i] as number)
  }
  padded = { inner, outer }
  if (keys.size >= MAX_KEYS) keys.delete(keys.keys().next().value as string)
  keys.set(key, padded)
  return padded
}

/** HMAC-SHA256 of `data` (a string is taken as UTF-8) keyed by the UTF-8 bytes of `key`, as lowercase hex. */
export function hmacSha256Hex(key: string, data: string | Uint8Array): string {
  const room = BLOCK + (typeof data === 'string' ? data.length * 3 : data.length)
  if (room > MAX_SCRATCH) return createHmac('sha256', key).update(data).digest('hex')
  const padded = paddedKey(key)
  const buffer = keyedScratch(padded, room)
  const end = typeof data === 'string' ? BLOCK + buffer.write(data, BLOCK, 'utf8') : (buffer.set(data, BLOCK), BLOCK + data.length)
  return finish(padded, buffer, end)
}

/**
 * HMAC-SHA256, as lowercase hex, of the bytes of `source` at `ranges` ([from, to) pairs) joined: a message that is
 * pieces of another (a query's split, core/result/split-signing.ts) is copied straight behind the inner pad, with
 * no joined copy of its own.
 */
export function hmacSha256HexOfRanges(key: string, source: Buffer, ranges: readonly number[]): string {
  let length = 0
  for (let i = 0; i < ranges.length; i += 2) length += (ranges[i + 1] as number) - (ranges[i] as number)
  if (BLOCK + length > MAX_SCRATCH) {
    const hmac = createHmac('sha256', key)
    for (let i = 0; i < ranges.length; i += 2) hmac.update(source.subarray(ranges[i], ranges[i + 1]))
    return hmac.digest('hex')
  }
  const padded = paddedKey(key)
  const buffer = keyedScratch(padded, BLOCK + length)
  let end = BLOCK
  for (let i = 0; i < ranges.length; i += 2) end += source.copy(buffer, end, ranges[i], ranges[i + 1])
  return finish(padded, buffer, end)
}

/** The scratch, at least `room` bytes, with `padded`'s inner pad in its first block. */
function keyedScratch(padded: PaddedKey, room: number): Buffer {
  if (scratch.length < room) {
    scratch = Buffer.allocUnsafeSlow(Math.min(MAX_SCRATCH, Math.max(room, scratch.length * 2)))
    scratchKey = undefined
  }
  if (scratchKey !== padded) {
    padded.inner.copy(scratch, 0)
    scratchKey = padded
  }
  return scratch
}

/** The HMAC of the message in scratch[BLOCK, end), behind the inner pad that keyedScratch put there. */
function finish(padded: PaddedKey, buffer: Buffer, end: number): string {
  // 'binary' (latin1) text is the cheapest way out of crypto.hash and back into a buffer: a byte per character.
  const innerDigest = hash('sha256', buffer.subarray(0, end), 'binary')
  padded.outer.write(innerDigest, BLOCK, DIGEST, 'latin1')
  return hash('sha256', padded.outer, 'hex')
}

/**
 * Whether `received` (64 hexadecimal digits, either case: it must have passed CHECKSUM_PATTERN) spells the same
 * digest as `expected` (lowercase hex, from hmacSha256Hex), in constant time.
 *
 * Why this is constant-time: the loop always runs over every character (the length, 64, is public and checked
 * first), never exits early, and has no branch that depends on `expected`; each step is one XOR and a few ORs on
 * character codes, so the time taken does not depend on where, or whether, the strings differ. `| 0x20`
 * lowercases A-F and leaves 0-9 unchanged (their codes already have that bit), which is exact for hex digits.
 * It would also map some control characters onto digits, so every received character that is not a hex digit
 * sets the difference too (a table look-up and a branch on the received character, which the sender chose and
 * which is no secret): the callers' pattern check is not relied on. This replaced a second regex pass.
 * It replaces timingSafeEqual because the digest is produced as hex: decoding both sides to bytes first would
 * cost two allocations per delivery.
 */
export function hexDigestsEqual(expected: string, received: string): boolean {
  if (expected.length !== received.length) return false
  let difference = 0
  for (let i = 0; i < expected.length; i++) {
    const code = received.charCodeAt(i)
    // HEX_VALUE is -1 (sign bit set) for a code that is no hex digit: `>>> 31` makes that 1, a digit's value 0.
    difference |= (expected.charCodeAt(i) ^ (code | 0x20)) | (code < 256 ? (HEX_VALUE[code] as number) >>> 31 : 1)
  }
  return difference === 0
}
