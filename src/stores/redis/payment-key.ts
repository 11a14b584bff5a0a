import { STATE_BIT } from '../../core/payment.js'
import type { SeenResult } from '../../contract/payment-book.js'
import { byteLength } from './client.js'
import { luaTable } from './lua-table.js'
import { BOOK_LUA } from './book-lua.js'

/*
 * One key per exchange_number, `<prefix>{<exchange_number>}:handled`, holds what the store knows of the payment:
 *
 *   <handled>:<kind>:<until>:<state>:<owner>
 *
 *   handled  the states completed, one digit: pending 1 + failed 2 + succeeded 4 (core's STATE_BIT);
 *   kind     L: a lease is held by <state>:<owner>;  D: <state>:<owner> completed last;  N: neither;
 *   until    when a lease on a payment with handled states ends (server time, ms). Empty for a lease on a payment
 *            with nothing handled: that lease is the key's own expiry, so a crashed owner's lease goes with the key.
 *
 * A completion or a release publishes on the channel named like the key, so that a delivery waiting for the lease
 * (lease-ends.ts) hears of it at once instead of asking again and again: a completion `<state>:<owner>`, a release
 * an empty message. By pcall: a server or ACL that refuses PUBLISH only makes waits last until their time-out,
 * never fails a completion.
 *
 * The key expires retentionMs after the last completion (a lease taken meanwhile may extend that by its leaseMs).
 * States never contain ':', so the owner is everything after the fourth one. An earlier version kept a set of
 * handled states under the same name: the scripts carry its states over.
 *
 * An order whose success was completed is marked in `<prefix>paid:<n>:<uid>:<order_number>` (n: the uid's length in
 * bytes; `0::<order_number>` when the result names no uid): the exchange_number that paid it, kept retentionMs.
 * The claim reads that mark and the payment book (payment-book.ts) in the same script; the completion writes the
 * mark and settles the book in the same script. The scripts write after reading TIME, which needs the effects
 * replication of Redis 5.0 and later.
 */

export const paymentKey = (prefix: string, exchangeNumber: string) => `${prefix}{${exchangeNumber}}:handled`
export const paidKey = (prefix: string, uid: string, orderNumber: string) => `${prefix}paid:${byteLength(uid)}:${uid}:${orderNumber}`

const PAYMENT_LUA = `
local BIT = ${luaTable(STATE_BIT)}
local function has(handled, bit) return math.floor(handled / bit) % 2 == 1 end
local function now_ms()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
-- The payment's key read apart: handled bits, kind, until, '<state>:<owner>'.
local function read(key)
  local raw = redis.pcall('GET', key)
  if type(raw) == 'table' and raw.err then
    -- An earlier version's set of handled states: carried over, with no lease (its lease key is not ours).
    local handled = 0
    for _, member in ipairs(redis.call('SMEMBERS', key)) do
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
-- A lease without an end is the key's own expiry: live while the key is.
local function live(kind, lease_until)
  return kind == 'L' and (lease_until == '' or tonumber(lease_until) > now_ms())
end
-- A key without expiry (PERSIST, a restore) stays so: -1 from PTTL is no TTL to keep.
local function write(key, value, ttl)
  if ttl < 0 then return redis.call('SET', key, value) end
  return redis.call('SET', key, value, 'PX', ttl)
end
`

/**
 * Checks in the memory store's order: busy, then stale, then duplicate; then the lease is taken (or renewed by its
 * owner), and with an order, its paid mark and booked payment are read.
 * KEYS: the payment's key; with an order, its paid mark. ARGV: owner, state, leaseMs; with an order: exchange_number,
 * the book's base, uid ('' for none), order_number.
 * Returns { 'claimed', previous state or '', paid by or '', the booked payment's BOOK_FIELDS... }, { 'duplicate' },
 * { 'stale', current state }, or { 'busy', ms left, the holding owner }.
 */
export const CLAIM = `${PAYMENT_LUA}${BOOK_LUA}
local owner, state, lease_ms = ARGV[1], ARGV[2], tonumber(ARGV[3])
local handled, kind, lease_until, held = read(KEYS[1])
local holder = string.sub(held, (string.find(held, ':', 1, true) or 0) + 1)
if live(kind, lease_until) and holder ~= owner then
  local ttl = lease_until == '' and redis.call('PTTL', KEYS[1]) or tonumber(lease_until) - now_ms()
  return { 'busy', math.max(ttl, 1), holder }
end
local current, top = false, 0
for name, bit in pairs(BIT) do
  if bit > top and has(handled, bit) then current, top = name, bit end
end
if current and BIT[state] < top then return { 'stale', current } end
if has(handled, BIT[state]) then return { 'duplicate' } end
if handled == 0 then
  redis.call('SET', KEYS[1], '0:L::' .. state .. ':' .. owner, 'PX', lease_ms)
else
  -- The handled states must outlive the lease: the key keeps its retention unless the lease runs longer.
  -- '%.0f': Lua 5.1 joins numbers as '%.14g', which would write a far end in exponent notation.
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl >= 0 and ttl < lease_ms then ttl = lease_ms end
  write(KEYS[1], handled .. ':L:' .. string.format('%.0f', now_ms() + lease_ms) .. ':' .. state .. ':' .. owner, ttl)
end
local reply = { 'claimed', current or '' }
if KEYS[2] then
  local paid_by = redis.call('GET', KEYS[2])
  reply[3] = (paid_by and paid_by ~= ARGV[4]) and paid_by or ''
  for _, value in ipairs(find_booked(ARGV[5], ARGV[6], ARGV[7]) or {}) do reply[#reply + 1] = value end
end
return reply
`

/**
 * Records the state and ends the lease in one write, so that an owner whose lease expired cannot complete after the
 * next delivery took over (taking over writes its own owner). An owner whose lease ran out while nobody took over
 * still holds it, as in the other stores: its completion is recorded, and its release (RELEASE) done. A first state's
 * lease is the key's expiry, so nothing is left to complete by: the receiver claims again as the same owner. With an order, a success marks it paid and its booked payment is settled (an order the
 * book does not hold is recorded from the result first, when one is given). The value keeps who completed last: the
 * same completion sent again (a client resends a command whose reply a Redis restart cut off) answers 1, or the
 * receiver would report lease_lost and the service redeliver, running the handlers again.
 * KEYS: the payment's key; with an order, its paid mark. ARGV: <state>:<owner>, state, retentionMs; with an order:
 * exchange_number, the book's base, uid ('' for none), order_number, now (ms: the book's times are the
 * application's), then the result seen (RESULT_ARGS).
 */
export const COMPLETE = `${PAYMENT_LUA}${BOOK_LUA}
local handled, kind, lease_until, held = read(KEYS[1])
if held ~= ARGV[1] then return 0 end
if kind == 'D' then return 1 end
local bit = BIT[ARGV[2]]
if not has(handled, bit) then handled = handled + bit end
redis.call('SET', KEYS[1], handled .. ':D::' .. ARGV[1], 'PX', ARGV[3])
redis.pcall('PUBLISH', KEYS[1], ARGV[1])
if KEYS[2] then
  if ARGV[2] == 'succeeded' then redis.call('SET', KEYS[2], ARGV[4], 'PX', ARGV[3]) end
  local k = booked_keys(ARGV[5], ARGV[6], ARGV[7])
  if not k and ARGV[9] == '1' then k = record_result(ARGV[5], ARGV[10], ARGV[7], ARGV[11], ARGV[12], ARGV[4], ARGV[13], ARGV[14], ARGV[8]) end
  if k then
    settle(k, ARGV[2], ARGV[4], ARGV[8], ARGV[3])
    if ARGV[9] == '1' then fill_buyer(k, ARGV[13], ARGV[14]) end
    place(k, ARGV[8])
  end
end
return 1
`

/** KEYS: the payment's key. ARGV: <state>:<owner>. The handled states stay, with their retention. */
const RELEASE_LUA = `
local handled, kind, lease_until, held = read(KEYS[1])
if held ~= ARGV[1] or kind ~= 'L' then return 0 end
if handled == 0 then
  redis.call('DEL', KEYS[1])
else
  write(KEYS[1], handled .. ':N::', redis.call('PTTL', KEYS[1]))
end
redis.pcall('PUBLISH', KEYS[1], '')
`
export const RELEASE = `${PAYMENT_LUA}${RELEASE_LUA}
return 1
`

/**
 * The release after a handler failure: as RELEASE, and the failure counted on the order's booked payment (recorded
 * from the result first when the book does not hold the order). ARGV: <state>:<owner>, the book's base, uid ('' for
 * none), order_number, state, exchange_number, now (ms), the message, then the result seen (RESULT_ARGS).
 */
export const RELEASE_FAILED = `${PAYMENT_LUA}${BOOK_LUA}${RELEASE_LUA}
local k = booked_keys(ARGV[2], ARGV[3], ARGV[4])
if not k and ARGV[9] == '1' then k = record_result(ARGV[2], ARGV[10], ARGV[4], ARGV[11], ARGV[12], ARGV[6], ARGV[13], ARGV[14], ARGV[7]) end
if k then
  redis.call('HINCRBY', k.payment, 'failures', 1)
  redis.call('HSET', k.payment, 'failedAt', ARGV[7], 'failedState', ARGV[5], 'failedMessage', ARGV[8])
  if ARGV[9] == '1' then fill_buyer(k, ARGV[13], ARGV[14]) end
  -- Abandoned (or failed, and now a success), and a result came whose handlers failed: open again and due, or
  -- nothing would bring it again.
  local status = redis.call('HGET', k.payment, 'status')
  if status == 'abandoned' or (status == 'failed' and ARGV[5] == 'succeeded') then
    redis.call('HSET', k.payment, 'status', 'open', 'next', ARGV[7])
    redis.call('PERSIST', k.payment)
    count_open(k, 1, 0)
    redis.call('ZADD', k.due, ARGV[7], k.member)
  end
  place(k, ARGV[7])
end
return 1
`

/**
 * A result seen (SeenResult) as the completion and release scripts take it, six arguments: '1' when there is one
 * ('' and five blanks otherwise), its uid ('' for none), the created field of a record made from it (JSON: amount,
 * uid, kind `result`, nothing attached), its asked field (the amount, '' for none), buyer e-mail and name ('' for none).
 */
export function resultArgs(seen: SeenResult | undefined): string[] {
  if (seen === undefined) return ['', '', '', '', '', '']
  const uid = seen.uid ?? ''
  const created = JSON.stringify({ amountSen: seen.amountSen ?? 0, uid, kind: 'result', attached: {} })
  return ['1', uid, created, seen.amountSen === null ? '' : String(seen.amountSen), seen.buyerEmail ?? '', seen.buyerName ?? '']
}

/** KEYS: the payment's key. Returns 1 while a live lease is held on it, 0 otherwise (lease-ends.ts). */
export const LEASE_HELD = `${PAYMENT_LUA}
local _, kind, lease_until = read(KEYS[1])
return live(kind, lease_until) and 1 or 0
`
