import { execFileSync } from 'node:child_process'
import { createHmac } from 'node:crypto'
import path from 'node:path'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { canSignAtOnce, checksumMatches, hmacSha256Hex, hmacSha256HexSync } from '../../src/core/crypto.js'

const ROOT = path.resolve(import.meta.dirname, '../..')
const oracle = (key: string, data: string | Uint8Array) => createHmac('sha256', key).update(data).digest('hex')

describe('the platform HMAC', () => {
  it('uses node:crypto on Node.js, and agrees with createHmac for any key and text or bytes', async () => {
    expect(canSignAtOnce).toBe(true)
    await fc.assert(
      fc.asyncProperty(fc.string({ minLength: 1, maxLength: 100 }), fc.string({ maxLength: 3000 }), fc.uint8Array({ maxLength: 3000 }), async (key, text, bytes) => {
        expect(hmacSha256HexSync(key, text)).toBe(oracle(key, text))
        expect(await hmacSha256Hex(key, bytes)).toBe(oracle(key, bytes))
        expect(await checksumMatches(key, text, oracle(key, text))).toBe(true)
        expect(await checksumMatches(key, text, oracle(key, text).toUpperCase())).toBe(true)
        expect(await checksumMatches(`${key}x`, text, oracle(key, text))).toBe(false)
      }),
      { numRuns: 200 },
    )
  })

  it('uses Web Crypto where node:crypto cannot be reached, with the same answers', () => {
    // A runtime without process.getBuiltinModule (a Worker without nodejs_compat, an edge runtime) gets Web Crypto.
    const script = `
      delete process.getBuiltinModule
      const m = await import(${JSON.stringify(path.join(ROOT, 'src/core/crypto.ts'))})
      const out = { sync: m.canSignAtOnce, hex: await m.hmacSha256Hex('Jefe', 'what do ya want for nothing?') }
      out.match = await m.checksumMatches('Jefe', 'what do ya want for nothing?', out.hex)
      out.miss = await m.checksumMatches('Jefe', 'what do ya want for nothing!', out.hex)
      try { m.hmacSha256HexSync('Jefe', 'x') } catch (error) { out.syncError = error.message }
      console.log(JSON.stringify(out))`
    const printed = execFileSync(path.join(ROOT, 'node_modules/.bin/tsx'), ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' })
    const out = JSON.parse(printed.trim().split('\n').at(-1) as string)
    expect(out).toMatchObject({
      sync: false,
      // RFC 4231 test case 2.
      hex: '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
      match: true,
      miss: false,
      syncError: expect.stringMatching(/node:crypto/),
    })
  })
})
