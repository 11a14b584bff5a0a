/*
 * The Redis store's sweep lock, next to the book under `<base>` = `<prefix>{book}:`:
 *   <base>fence       the newest fencing token handed out (INCR; never expires, so tokens only grow)
 *   <base>sweeper     `<token>:<owner>` of the lock's holder, expiring with the lease (the server's clock)
 *   <base>sweep:pass  the sweeper's latest pass, JSON (contract/sweep-pass.ts)
 */
import type { SweepLock } from '../../contract/payment-book.js'
import { passFromJson, passToJson } from '../../contract/sweep-pass.js'
import { luaScript, type RawCommand, replyText } from './client.js'

// KEYS sweeper, fence. ARGV owner, ttlMs. The token grows with every holder, taken in the same script as the lease.
const ACQUIRE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return false end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], token .. ':' .. ARGV[1], 'PX', ARGV[2])
return token`

// KEYS sweeper. ARGV <token>:<owner>, ttlMs (none: release).
const RENEW_OR_RELEASE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) else redis.call('DEL', KEYS[1]) end
return 1`

// KEYS sweeper, pass. Returns { holder value or false, ms left or -2, pass or false }.
const STATUS = `
return { redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]), redis.call('GET', KEYS[2]) }`

export function redisSweepLock(send: RawCommand, base: string): SweepLock {
  const [sweeper, fence, pass] = [`${base}sweeper`, `${base}fence`, `${base}sweep:pass`]
  const scripts = { acquire: luaScript(send, ACQUIRE), renewOrRelease: luaScript(send, RENEW_OR_RELEASE), status: luaScript(send, STATUS) }
  const ttl = (ttlMs: number) => String(Math.max(1, Math.ceil(ttlMs)))
  return {
    async acquire(owner, ttlMs) {
      const token = await scripts.acquire([sweeper, fence], [owner, ttl(ttlMs)])
      return token === null || token === undefined ? undefined : { token: Number(token) }
    },
    async renew(owner, token, ttlMs) {
      return Number(await scripts.renewOrRelease([sweeper], [`${token}:${owner}`, ttl(ttlMs)])) === 1
    },
    async release(owner, token) {
      await scripts.renewOrRelease([sweeper], [`${token}:${owner}`])
    },
    async notePass(note) {
      await send(['SET', pass, passToJson(note)])
    },
    async status() {
      const reply = await scripts.status([sweeper, pass], [])
      const [held, left, last] = Array.isArray(reply) ? [replyText(reply[0]), Number(reply[1]), replyText(reply[2])] : [null, -2, null]
      // The lease's end from the time left on the server's clock, read now.
      const live = held !== null && left > 0
      return {
        holder: live ? held.slice(held.indexOf(':') + 1) : null,
        heldUntil: live ? new Date(Date.now() + left) : null,
        lastPass: last === null ? null : passFromJson(last),
      }
    },
  }
}
