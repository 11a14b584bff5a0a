import { currentOfBits, type PaymentState, STATE_BIT } from '../../core/payment.js'
import { replyText } from './client.js'
import { luaTable } from './lua-table.js'
import { type Claim, isRegression } from '../../contract/store.js'

/*
 * One key per exchange_number, `<prefix>{<exchange_number>}:handled`, holds everything the store knows of the
 * payment, so that the common claim is one plain command and a completion one script of two calls: the least a
 * safe claim + complete can cost on Redis 7.0, which has no conditional SET (bench:stores' shape floor). Its value:
 *
 *   <handled>:<kind>:<until>:<state>:<owner>
 *
 *   handled  the states completed, one digit: pending 1 + failed 2 + succeeded 4 (STATE_BIT, the scripts' BIT);
 *   kind     L: a lease is held by <state>:<owner>;  D: <state>:<owner> completed last;  N: neither;
 *   until    for a lease on a payment with handled states, when it ends (server time, ms). Empty otherwise: a lease on
 *            a payment with nothing handled is the key's own PX, so a crashed owner's lease disappears by itself.
 *
 * The key expires retentionMs after the last completion (a lease taken meanwhile may extend that by its leaseMs).
 * States never contain ':', so the owner is everything after the fourth one. The name is the handled set's that
 * earlier versions kept beside a `:lease` key: such a set fails the plain claim with WRONGTYPE and goes to the
 * script, which carries its states over. Their leases are not read: old and new receivers cannot share a Redis
 * (README, Stores). The scripts write after TIME, so they need Redis 5.0's effects replication.
 */

/** The value a claim of a payment with nothing handled writes: SET … NX PX leaseMs GET. */
export const freshLeaseValue = (state: PaymentState, owner: string) => `0:L::${state}:${owner}`

/**
 * What the plain claim's reply decides without the script: taken (the key was absent), or, when no lease is in
 * the value, a duplicate or a regression. Anything else (a lease held, a later state to claim) is the script's.
 */
export function decidePlainClaim(reply: unknown, state: PaymentState): Claim | undefined {
  if (reply === null || reply === undefined) return { outcome: 'claimed', previousState: null }
  const value = replyText(reply)
  // A lease held, or a value the script should refuse: the script's.
  if (value === null || value.charCodeAt(1) !== 58 /* : */ || (value[2] !== 'D' && value[2] !== 'N')) return undefined
  const handled = value.charCodeAt(0) - 48
  if (!(handled >= 0 && handled <= 7)) return undefined
  const current = currentOfBits(handled)
  if (current !== null && isRegression(current, state)) return { outcome: 'stale', currentState: current }
  if (handled & STATE_BIT[state]) return { outcome: 'duplicate' }
  return undefined
}

// Shared by the three scripts: the value read apart, a legacy set carried over, and the server's clock.
// BIT is core's STATE_BIT: a state's bit is its rank's, so the highest bit set is the current state (currentOfBits)
// and bits compare as ranks do (isRegression).
const READ = `
local BIT = ${luaTable(STATE_BIT)}
local function has(handled, bit) return math.floor(handled / bit) % 2 == 1 end
local function read()
  local raw = redis.pcall('GET', KEYS[1])
  if type(raw) == 'table' and raw.err then
    -- An earlier version's set of handled states: carried over, with no lease (its lease key is not ours).
    local handled = 0
    for _, member in ipairs(redis.call('SMEMBERS', KEYS[1])) do
      local bit = BIT[member]
      if bit and not has(handled, bit) then handled = handled + bit end
    end
    return handled, 'N', '', ''
  end
  if not raw then return 0, 'N', '', '' end
  local handled, kind, lease_until, held = string.match(raw, '^([0-7]):([LDN]):(%d*):(.*)$')
  -- Fail closed: read as nothing handled, the next claim would overwrite the states and run them again.
  if not handled then error({ err = 'ERR fpx-collect: a payment key holds a value the store cannot read' }) end
  return tonumber(handled), kind, lease_until, held
end
-- A key without expiry (PERSIST, a restore) stays so: -1 from PTTL is no TTL to keep, nor one to shorten to a lease.
local function write(value, ttl)
  if ttl < 0 then return redis.call('SET', KEYS[1], value) end
  return redis.call('SET', KEYS[1], value, 'PX', ttl)
end
local function now_ms()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
-- Whether the lease in the value is live: one without an end is the key's own expiry, so it is.
local function live(kind, lease_until)
  return kind == 'L' and (lease_until == '' or tonumber(lease_until) > now_ms())
end
`

// Checks run in the memory store's order: busy first, then stale, then duplicate. KEYS: the payment's key.
// ARGV: owner, state, leaseMs. Only claims the plain SET did not decide come here.
export const CLAIM = `${READ}
local owner, state, lease_ms = ARGV[1], ARGV[2], tonumber(ARGV[3])
local handled, kind, lease_until, held = read()
if live(kind, lease_until) and string.sub(held, (string.find(held, ':', 1, true) or 0) + 1) ~= owner then
  local ttl = lease_until == '' and redis.call('PTTL', KEYS[1]) or tonumber(lease_until) - now_ms()
  if ttl < 1 then ttl = 1 end
  return { 'busy', ttl }
end
local current, top = false, 0
for name, bit in pairs(BIT) do
  if bit > top and has(handled, bit) then current, top = name, bit end
end
if current and BIT[state] < top then return { 'stale', current } end
if has(handled, BIT[state]) then return { 'duplicate' } end
local value = state .. ':' .. owner
if handled == 0 then
  -- The same owner claiming again renews its lease, as in the memory store.
  redis.call('SET', KEYS[1], '0:L::' .. value, 'PX', lease_ms)
else
  -- The handled states must outlive the lease: the key keeps its retention unless the lease runs longer.
  -- '%.0f': Lua 5.1 joins numbers as '%.14g', which would write a far end in exponent notation.
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl >= 0 and ttl < lease_ms then ttl = lease_ms end
  write(handled .. ':L:' .. string.format('%.0f', now_ms() + lease_ms) .. ':' .. value, ttl)
end
return { 'claimed', current or '' }
`

// Recording the state ends the lease in the same write: a lease that expired in between cannot be completed by
// its old owner after the next delivery took it over. The value keeps who completed last, so that the same
// completion sent again answers 1: a client resends a command whose reply a Redis restart cut off, and answering
// 0 to a completion that was applied made the receiver report lease_lost and the service redeliver, running the
// handlers again (seen in the restart soak with AOF appendfsync always).
// The common case, the lease of a payment with nothing handled yet, is settled first by one comparison, before the
// shared functions are made: each call of a script runs its whole chunk, and making them cost the server about
// as much again as the GET and SET themselves (pipelined EVALSHA, INFO commandstats: 13.0 µs a call against 9.1
// for bench:stores' compare-and-set).
// KEYS: the payment's key. ARGV: <state>:<owner>, state, retentionMs, the state's bit.
export const COMPLETE = `
if redis.pcall('GET', KEYS[1]) == '0:L::' .. ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[4] .. ':D::' .. ARGV[1], 'PX', ARGV[3])
  return 1
end
${READ}
local handled, kind, lease_until, held = read()
if held ~= ARGV[1] then return 0 end
if kind == 'D' then return 1 end
if not live(kind, lease_until) then return 0 end
local bit = BIT[ARGV[2]]
if not has(handled, bit) then handled = handled + bit end
redis.call('SET', KEYS[1], handled .. ':D::' .. ARGV[1], 'PX', ARGV[3])
return 1
`

// KEYS: the payment's key. ARGV: <state>:<owner>.
export const RELEASE = `${READ}
local handled, kind, lease_until, held = read()
if held ~= ARGV[1] or not live(kind, lease_until) then return 0 end
if handled == 0 then
  redis.call('DEL', KEYS[1])
else
  -- PTTL then PX rather than KEEPTTL, which Redis 5 lacks.
  write(handled .. ':N::', redis.call('PTTL', KEYS[1]))
end
return 1
`
