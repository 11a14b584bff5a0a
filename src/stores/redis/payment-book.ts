/**
 * The Redis store's payment book, under `<base>` = `<prefix>{book}:`:
 *   <base>payment:<n>:<uid>:<order_number>  hash per booked payment (n: the uid's length in bytes, so that a ':' in a
 *                                          uid or an order_number cannot make two keys one): created (JSON of the
 *                                          latest creation: amountSen, uid, kind, attached), asked (the amounts asked,
 *                                          comma-separated, oldest first), createdAt, status, state, exchange,
 *                                          lookups, last, next (ms or ''); and since the second version email, name,
 *                                          failures, failedAt, failedState, failedMessage, settled (absent: none)
 *   <base>order:<order_number>  hash: uid → createdAt of each credential set that recorded the order, for a find
 *                               without uid; '' → how many of them are open
 *   <base>open, <base>due       sorted sets of the open payments (members `<order_number> NUL <uid>`) by creation
 *                               time (listOpen's order, summary's counts) and by when their next lookup is due
 * The operator's questions (book-queries.ts), since the second version:
 *   <base>all, <base>status:<status>, <base>failing, <base>paid-failing   every payment, those of a closed status, those
 *                               with handler failures, the successes among them, by creation time
 *   <base>settled:<state>       by when their latest state (this one) was handled
 *   <base>exchanges             hash exchange_number → member; <base>emails: members `<e-mail> NUL <member>` (one
 *                               score, read by lex range; the e-mail's ASCII letters lower-cased); <base>terms: hash
 *                               member → `<exchange_number> NUL <e-mail>`, what it is indexed under
 *   <base>expiring              closed payments by when their hash expires: their index entries go once it has
 *   <base>indexed               set once the payments of the first version were put in these indexes
 * The sweep lock's keys are in sweep-lock.ts. An open payment (and its order's index while one is open) has no
 * expiry; closed, it expires retentionMs later. The book's times are the application's (createdAt, lookups, dueBy).
 * The scripts name the keys from the base, so that the claim and the completion (payment-key.ts) can read and
 * settle a booked payment with the same functions (book-lua.ts).
 */
import {
  type BookedPayment,
  checkedUid,
  MAX_ASKED_AMOUNTS,
  openQuery,
  type PaymentBook,
  type PaymentRef,
  type RecordOutcome,
} from '../../contract/payment-book.js'
import { BOOK_FIELDS, BOOK_LUA } from './book-lua.js'
import { type Asked, bookedPayment, dateOf } from './booked.js'
import { redisBookQueries } from './book-queries.js'
import { byteLength, luaScript, type RawCommand, replyTexts as texts } from './client.js'

// ARGV base, uid, order, created JSON, createdAt, exchange ('' when none), amountSen, the most amounts kept, buyer
// e-mail and name ('' when not given), now. Returns 1 created, 2 held with this amount asked before, 3 held and the
// amount added. Held: the latest creation shown, its amount moved last among those asked, the buyer it gives;
// status, state, lookups and expiry stay.
const RECORD = `${BOOK_LUA}
local k = book_keys(ARGV[1], ARGV[2], ARGV[3])
redis.call('HSET', k.index, ARGV[2], ARGV[5])
if redis.call('EXISTS', k.payment) == 0 then
  forget(k.base, k.member)
  count_open(k, 1, 0)
  redis.call('HSET', k.payment, 'created', ARGV[4], 'asked', ARGV[7], 'createdAt', ARGV[5], 'status', 'open', 'state', '',
    'exchange', ARGV[6], 'lookups', 0, 'last', '', 'next', ARGV[5], 'email', ARGV[9], 'name', ARGV[10], 'failures', 0,
    'failedAt', '', 'failedState', '', 'failedMessage', '', 'settled', '')
  redis.call('ZADD', k.due, ARGV[5], k.member)
  place(k, ARGV[11])
  return 1
end
local found = redis.call('HMGET', k.payment, 'asked', 'status')
local asked, known = {}, false
for amount in string.gmatch(found[1] or '', '[^,]+') do
  if amount == ARGV[7] then known = true else asked[#asked + 1] = amount end
end
asked[#asked + 1] = ARGV[7]
local keep = tonumber(ARGV[8])
if #asked > keep then asked = { unpack(asked, #asked - keep + 1) } end
redis.call('HSET', k.payment, 'created', ARGV[4], 'asked', table.concat(asked, ','), 'createdAt', ARGV[5])
if ARGV[6] ~= '' then redis.call('HSET', k.payment, 'exchange', ARGV[6]) end
if ARGV[9] ~= '' then redis.call('HSET', k.payment, 'email', ARGV[9]) end
if ARGV[10] ~= '' then redis.call('HSET', k.payment, 'name', ARGV[10]) end
place(k, ARGV[11])
if known then return 2 end
return 3`

// ARGV base, uid, order, state, exchange, now, retentionMs.
const SETTLE = `${BOOK_LUA}
local k = book_keys(ARGV[1], ARGV[2], ARGV[3])
local at = settle(k, ARGV[4], ARGV[5], ARGV[6], ARGV[7])
place(k, ARGV[6])
return at`

// ARGV base, order. The values of the order's payment created last, or false.
const FIND_ANY = `${BOOK_LUA}
return find_booked(ARGV[1], '', ARGV[2]) or false`

// ARGV base, uid, order, token, at, next ('' for none), abandoned (1/0), retentionMs, now. The fence is read in the same
// script as the write: no newer holder can come in between.
const NOTE_LOOKUP = `${BOOK_LUA}
local k = book_keys(ARGV[1], ARGV[2], ARGV[3])
if tonumber(ARGV[4]) < tonumber(redis.call('GET', ARGV[1] .. 'fence') or '0') then return 0 end
if redis.call('HGET', k.payment, 'status') ~= 'open' then return 0 end
redis.call('HINCRBY', k.payment, 'lookups', 1)
if ARGV[7] == '1' then
  redis.call('HSET', k.payment, 'status', 'abandoned', 'last', ARGV[5], 'next', '')
  redis.call('ZREM', k.due, k.member)
  redis.call('PEXPIRE', k.payment, ARGV[8])
  count_open(k, -1, ARGV[8])
else
  redis.call('HSET', k.payment, 'last', ARGV[5], 'next', ARGV[6])
  if ARGV[6] == '' then redis.call('ZREM', k.due, k.member) else redis.call('ZADD', k.due, ARGV[6], k.member) end
end
place(k, ARGV[9])
return 1`

// ARGV base, dueBy ('' for every open payment), limit. Returns the members, oldest created first. Few due: all of
// them, sorted by their rank among the open ones (the open set's own order: creation time, then order_number byte
// by byte). Many due (a backlog after an outage): the open payments walked oldest first until enough are due,
// rather than sorting the whole backlog while Redis serves nothing else.
const OPEN_IDS = `
local open, due, limit = ARGV[1] .. 'open', ARGV[1] .. 'due', tonumber(ARGV[3])
if ARGV[2] == '' then return redis.call('ZRANGE', open, 0, limit - 1) end
local out = {}
if redis.call('ZCOUNT', due, '-inf', ARGV[2]) <= limit * 4 then
  local ids, rank = redis.call('ZRANGEBYSCORE', due, '-inf', ARGV[2]), {}
  for _, id in ipairs(ids) do rank[id] = redis.call('ZRANK', open, id) or -1 end
  table.sort(ids, function(a, b) return rank[a] < rank[b] end)
  for i = 1, math.min(limit, #ids) do out[i] = ids[i] end
  return out
end
local batch, start = math.max(limit * 4, 256), 0
while #out < limit do
  local ids = redis.call('ZRANGE', open, start, start + batch - 1)
  if #ids == 0 then break end
  for _, id in ipairs(ids) do
    local next = tonumber(redis.call('ZSCORE', due, id))
    if next and next <= tonumber(ARGV[2]) then out[#out + 1] = id end
    if #out >= limit then break end
  end
  start = start + batch
end
return out`

// ARGV base, uid, order, retentionMs. An open payment whose hash is gone (evicted, deleted by hand) leaves the
// indexes, where it would count as open and take a place in every listing for good.
const FORGET_GONE = `${BOOK_LUA}
return forget_gone(book_keys(ARGV[1], ARGV[2], ARGV[3]), ARGV[4])`

// ARGV base. Returns { count, oldest creation time or false }.
const SUMMARY = `
local oldest = redis.call('ZRANGE', ARGV[1] .. 'open', 0, 0, 'WITHSCORES')
return { redis.call('ZCARD', ARGV[1] .. 'open'), oldest[2] or false }`

const RECORDED: Record<number, RecordOutcome> = { 1: 'created', 2: 'known', 3: 'added' }

/** Where the book's keys start. */
export const bookBase = (prefix: string) => `${prefix}{book}:`

export function redisPaymentBook(send: RawCommand, prefix: string, retentionMs: string): PaymentBook {
  const base = bookBase(prefix)
  // The uid's length in bytes, as Lua's # counts it (book_keys).
  const paymentKey = (payment: PaymentRef) => `${base}payment:${byteLength(payment.uid)}:${payment.uid}:${payment.orderNumber}`
  const scripts = {
    record: luaScript(send, RECORD),
    settle: luaScript(send, SETTLE),
    findAny: luaScript(send, FIND_ANY),
    noteLookup: luaScript(send, NOTE_LOOKUP),
    openIds: luaScript(send, OPEN_IDS),
    forgetGone: luaScript(send, FORGET_GONE),
    summary: luaScript(send, SUMMARY),
  }
  const findOne = async (payment: PaymentRef) => bookedPayment(payment.orderNumber, texts(await send(['HMGET', paymentKey(payment), ...BOOK_FIELDS])))
  const refOf = (member: string): PaymentRef => {
    const cut = member.lastIndexOf('\0')
    return { orderNumber: member.slice(0, cut), uid: member.slice(cut + 1) }
  }
  const queries = redisBookQueries(send, base, retentionMs)

  return {
    async record(payment) {
      const asked: Asked = { amountSen: payment.amountSen, uid: checkedUid(payment.uid), kind: payment.kind, attached: payment.attached }
      const args = [base, payment.uid, payment.orderNumber, JSON.stringify(asked), String(payment.createdAt.getTime()), payment.exchangeNumber ?? '']
      const buyer = [payment.buyerEmail ?? '', payment.buyerName ?? '', String(Date.now())]
      return RECORDED[Number(await scripts.record([], [...args, String(payment.amountSen), String(MAX_ASKED_AMOUNTS), ...buyer]))] ?? 'created'
    },

    async find(orderNumber, options) {
      if (options?.uid !== undefined) return findOne({ orderNumber, uid: options.uid })
      return bookedPayment(orderNumber, texts(await scripts.findAny([], [base, orderNumber])))
    },

    async settle(payment, state, exchangeNumber) {
      const args = [base, payment.uid, payment.orderNumber, state, exchangeNumber, String(Date.now()), retentionMs]
      return Number(await scripts.settle([], args)) === 1
    },

    async noteLookup(payment, note, token) {
      const abandoned = note.abandoned === true
      const next = abandoned || note.nextLookupAt === null ? '' : String(note.nextLookupAt.getTime())
      const args = [base, payment.uid, payment.orderNumber, String(token), String(note.at.getTime()), next, abandoned ? '1' : '0', retentionMs, String(Date.now())]
      return Number(await scripts.noteLookup([], args)) === 1
    },

    async listOpen(query) {
      const { dueBy, limit } = openQuery(query)
      const refs = (texts(await scripts.openIds([], [base, dueBy === null ? '' : String(dueBy), String(limit)])) as string[]).map(refOf)
      // Read after the members were chosen: one that closed in between is left out.
      const found = await Promise.all(refs.map(findOne))
      const gone = refs.filter((_, i) => found[i] === undefined)
      await Promise.all(gone.map((payment) => scripts.forgetGone([], [base, payment.uid, payment.orderNumber, retentionMs])))
      return found.filter((payment): payment is BookedPayment => payment?.status === 'open')
    },

    async summary() {
      const [count, oldest] = texts(await scripts.summary([], [base]))
      return { open: Number(count), oldestCreatedAt: dateOf(oldest) }
    },

    list: (query) => queries.list(query),
    overview: (window) => queries.overview(window),
  }
}
