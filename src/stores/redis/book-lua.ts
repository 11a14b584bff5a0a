/*
 * The Lua functions of the Redis store's payment book (payment-book.ts describes its keys), shared by the book's
 * scripts and by the claim, completion and release scripts (payment-key.ts), so that a delivery reads and writes
 * the book in the script it runs anyway.
 */
import { STATE_RANK } from '../../core/payment.js'
import { luaTable } from './lua-table.js'

/** A booked payment's fields, in the order the scripts return them (bookedPayment reads them in this order). */
export const BOOK_FIELDS = [
  'created',
  'asked',
  'createdAt',
  'status',
  'state',
  'exchange',
  'lookups',
  'last',
  'next',
  'email',
  'name',
  'failures',
  'failedAt',
  'failedState',
  'failedMessage',
  'settled',
] as const

export const BOOK_LUA = `
local BOOK_FIELDS = { ${BOOK_FIELDS.map((field) => `'${field}'`).join(', ')} }
local RANK = ${luaTable(STATE_RANK)}
local STATUSES = { 'open', 'succeeded', 'failed', 'abandoned' }
local STATES = { 'pending', 'failed', 'succeeded' }
-- field: the uid's field in its order's index, where '' counts the open payments: a record of no known uid ('', a
-- result's) is under a NUL, which no uid holds.
local function book_keys(base, uid, order)
  return { base = base, payment = base .. 'payment:' .. #uid .. ':' .. uid .. ':' .. order, index = base .. 'order:' .. order,
    open = base .. 'open', due = base .. 'due', member = order .. '\\0' .. uid, field = uid == '' and '\\0' or uid }
end
-- A member's keys: its uid follows the last NUL (a uid holds none).
local function member_keys(base, member)
  local order, uid = string.match(member, '^(.*)%z(.*)$')
  return book_keys(base, uid, order)
end
-- Byte order, as Redis orders members (Lua's < follows the server's locale).
local function bytes_before(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
-- ASCII letters lower-cased, as the book compares e-mails (contract/book-query.ts emailKey).
local function email_key(email)
  return (string.gsub(email, '[A-Z]', function(letter) return string.char(string.byte(letter) + 32) end))
end
-- The sorted set of a status, by creation time: \`open\` (the sweeper's, from the first version), else status:<status>.
local function status_set(base, status)
  if status == 'open' then return base .. 'open' end
  return base .. 'status:' .. status
end
-- How many payments of the order_number are open, kept in its index: the index lives while one is.
local function count_open(k, delta, retention)
  if redis.call('HINCRBY', k.index, '', delta) > 0 then redis.call('PERSIST', k.index)
  else redis.call('PEXPIRE', k.index, retention) end
end
-- The sets place() may put a member in besides \`all\` and \`expiring\`, named after the base.
local function question_sets()
  local sets = { 'failing', 'paid-failing' }
  for _, status in ipairs(STATUSES) do sets[#sets + 1] = status_set('', status) end
  for _, state in ipairs(STATES) do sets[#sets + 1] = 'settled:' .. state end
  return sets
end
-- The sets a member may be in. place() writes a member's terms and puts it in \`all\` with its other indexes, and
-- only forget() takes them away (in every version of the book): a member with neither was never placed and is in
-- none but, from the first version, \`open\`. Any other member is looked for in every set.
local function placed_sets(base, member, terms)
  if terms or redis.call('ZSCORE', base .. 'all', member) then return question_sets() end
  return { status_set('', 'open') }
end
-- Takes a member out of every index of the operator's questions (its hash is gone, or about to be made afresh).
local function forget(base, member)
  local terms = redis.call('HGET', base .. 'terms', member)
  for _, set in ipairs(placed_sets(base, member, terms)) do redis.call('ZREM', base .. set, member) end
  redis.call('ZREM', base .. 'all', member)
  redis.call('ZREM', base .. 'expiring', member)
  if not terms then return end
  local exchange, email = string.match(terms, '^([^%z]*)%z(.*)$')
  if exchange ~= '' and redis.call('HGET', base .. 'exchanges', exchange) == member then redis.call('HDEL', base .. 'exchanges', exchange) end
  if email ~= '' then redis.call('ZREM', base .. 'emails', email .. '\\0' .. member) end
  redis.call('HDEL', base .. 'terms', member)
end
-- A payment whose hash is gone while it was open (evicted, deleted by hand): out of the open indexes and its order's
-- count too, or it would count as open and take a place in every listing for good. 1 when it was open.
local function forget_gone(k, retention)
  if redis.call('EXISTS', k.payment) == 1 then return 0 end
  redis.call('ZREM', k.due, k.member)
  local was_open = redis.call('ZREM', k.open, k.member)
  forget(k.base, k.member)
  if was_open == 0 then return 0 end
  redis.call('HDEL', k.index, k.field)
  count_open(k, -1, retention)
  return 1
end
-- Forgets up to \`most\` closed payments whose retention ran out (their hashes expired by themselves).
local function forget_expired(base, now, most)
  for _, member in ipairs(redis.call('ZRANGEBYSCORE', base .. 'expiring', '-inf', now, 'LIMIT', 0, most)) do
    if redis.call('EXISTS', member_keys(base, member).payment) == 0 then forget(base, member) end
  end
end
-- Puts a payment in the operator's indexes as its hash stands now; the same whatever changed. A payment never
-- placed before is looked for in no set it does not belong in.
local function place(k, now)
  local f = redis.call('HMGET', k.payment, 'createdAt', 'status', 'state', 'failures', 'failedState', 'settled', 'exchange', 'email')
  if not f[1] then return end
  local created, status, state, failing, settled = f[1], f[2], f[3] or '', tonumber(f[4] or '0') > 0, f[6] or ''
  local base, member = k.base, k.member
  local scores = {}
  for _, one in ipairs(STATUSES) do if one == status then scores[status_set('', one)] = created end end
  if failing then scores['failing'] = created end
  if failing and f[5] == 'succeeded' then scores['paid-failing'] = created end
  for _, one in ipairs(STATES) do if one == state and settled ~= '' then scores['settled:' .. one] = settled end end
  local before = redis.call('HGET', base .. 'terms', member)
  for _, set in ipairs(placed_sets(base, member, before)) do
    if not scores[set] then redis.call('ZREM', base .. set, member) end
  end
  redis.call('ZADD', base .. 'all', created, member)
  for _, set in ipairs(question_sets()) do if scores[set] then redis.call('ZADD', base .. set, scores[set], member) end end
  local exchange, email = f[7] or '', email_key(f[8] or '')
  local terms = exchange .. '\\0' .. email
  if before ~= terms then
    if before then
      local old_exchange, old_email = string.match(before, '^([^%z]*)%z(.*)$')
      if old_exchange ~= '' and redis.call('HGET', base .. 'exchanges', old_exchange) == member then redis.call('HDEL', base .. 'exchanges', old_exchange) end
      if old_email ~= '' then redis.call('ZREM', base .. 'emails', old_email .. '\\0' .. member) end
    end
    if exchange ~= '' then redis.call('HSET', base .. 'exchanges', exchange, member) end
    if email ~= '' then redis.call('ZADD', base .. 'emails', 0, email .. '\\0' .. member) end
    redis.call('HSET', base .. 'terms', member, terms)
  end
  local ttl = redis.call('PTTL', k.payment)
  if ttl > 0 then
    redis.call('ZADD', base .. 'expiring', string.format('%.0f', tonumber(now) + ttl), member)
    forget_expired(base, now, 10)
  else
    redis.call('ZREM', base .. 'expiring', member)
  end
end
-- The uid of an order's booked payment: the one given, else the one of the payment created last, if any.
local function booked_uid(base, uid, order)
  if uid ~= '' then return uid end
  local found, best, best_at = redis.call('HGETALL', base .. 'order:' .. order), nil, nil
  for i = 1, #found, 2 do
    local uid = found[i] == '\\0' and '' or found[i]
    local at = found[i] ~= '' and tonumber(redis.call('HGET', book_keys(base, uid, order).payment, 'createdAt'))
    if at and (best_at == nil or at > best_at or (at == best_at and bytes_before(uid, best))) then best, best_at = uid, at end
  end
  return best
end
-- The booked payment of an order (PaymentBook.find) as the values of BOOK_FIELDS, or nil.
local function find_booked(base, uid, order)
  uid = booked_uid(base, uid, order)
  if not uid then return nil end
  local values = redis.call('HMGET', book_keys(base, uid, order).payment, unpack(BOOK_FIELDS))
  if not values[1] then return nil end
  return values
end
-- The keys of an order's booked payment, or nil when the book holds none.
local function booked_keys(base, uid, order)
  uid = booked_uid(base, uid, order)
  if not uid then return nil end
  local k = book_keys(base, uid, order)
  if redis.call('EXISTS', k.payment) == 0 then return nil end
  return k
end
-- Marks a handled state (PaymentBook.settle): 1 when the book stands at it afterwards, else 0. Whatever it moves,
-- the failures of the state's rank or lower are over.
local function settle(k, incoming, exchange, now, retention)
  local found = redis.call('HMGET', k.payment, 'status', 'state', 'exchange', 'createdAt', 'failedState', 'failures')
  local status, state = found[1], found[2]
  if not status then return 0 end
  -- A failure settled while a success of the order is failing its handlers (a race with a claim taken before that
  -- success came) leaves it open as a 99 does: closed, nothing would bring the success again.
  local paid_failing = found[5] == 'succeeded' and tonumber(found[6] or '0') > 0
  if not found[5] or found[5] == '' or RANK[incoming] >= RANK[found[5]] then redis.call('HSET', k.payment, 'failures', 0) end
  if state ~= '' and RANK[incoming] <= RANK[state] then
    if incoming == state then return 1 end
    return 0
  end
  if found[3] ~= '' then exchange = found[3] end
  redis.call('HSET', k.payment, 'settled', now)
  if incoming ~= 'pending' and not (incoming == 'failed' and paid_failing) then
    redis.call('HSET', k.payment, 'status', incoming, 'state', incoming, 'exchange', exchange, 'next', '')
    redis.call('ZREM', k.due, k.member)
    redis.call('PEXPIRE', k.payment, retention)
    if status == 'open' then count_open(k, -1, retention) end
  elseif status == 'open' then
    redis.call('HSET', k.payment, 'state', incoming, 'exchange', exchange)
  else
    -- Abandoned with no result, and now a 99 came (or that failure): open again, and due, or nothing would look at it.
    redis.call('HSET', k.payment, 'status', 'open', 'state', incoming, 'exchange', exchange, 'next', now)
    redis.call('PERSIST', k.payment)
    count_open(k, 1, retention)
    redis.call('ZADD', k.due, now, k.member)
  end
  return 1
end
-- The record of an order first known from a verified result (kind \`result\`, \`created\` made by the caller), open until
-- its state is settled; the existing one when its hash is there after all.
local function record_result(base, uid, order, created, asked, exchange, email, name, now)
  local k = book_keys(base, uid, order)
  if redis.call('EXISTS', k.payment) == 1 then return k end
  forget(base, k.member)
  redis.call('HSET', k.index, k.field, now)
  count_open(k, 1, 0)
  redis.call('HSET', k.payment, 'created', created, 'asked', asked, 'createdAt', now, 'status', 'open', 'state', '', 'exchange', exchange,
    'lookups', 0, 'last', '', 'next', now, 'email', email, 'name', name, 'failures', 0, 'failedAt', '', 'failedState', '', 'failedMessage', '', 'settled', '')
  redis.call('ZADD', k.due, now, k.member)
  return k
end
-- The buyer a result tells, where the record has none.
local function fill_buyer(k, email, name)
  local found = redis.call('HMGET', k.payment, 'email', 'name')
  if email ~= '' and (found[1] or '') == '' then redis.call('HSET', k.payment, 'email', email) end
  if name ~= '' and (found[2] or '') == '' then redis.call('HSET', k.payment, 'name', name) end
end
`
