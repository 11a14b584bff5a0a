/**
 * The Redis store's payment book and sweep lock. Every key shares the `{book}` hash tag, so that the scripts,
 * which touch a payment with the indexes and the fence together, also run on Redis Cluster:
 *   <prefix>{book}:payment:<n>:<uid>:<order_number>  (n: the uid's length in bytes)
 *                                          hash: created (JSON of the latest creation, never read by the scripts),
 *                                          asked (the amounts asked, comma-separated, oldest first), createdAt,
 *                                          status, state, exchange, lookups, last, next (ms or '')
 *   <prefix>{book}:order:<order_number>  hash: uid -> createdAt of each credential set that recorded the order
 *                                          (nearly always one), and '' -> how many of them are open: for a find
 *                                          without uid. No expiry while one is open; retentionMs after the last closed
 *   <prefix>{book}:open     sorted set of the open payments by creation time: listOpen's order, summary's counts
 *                           (members: <order_number> NUL <uid>, so that ties list by order_number, then uid)
 *   <prefix>{book}:due      sorted set of the open payments by when their next lookup is due
 *   <prefix>{book}:fence    the newest fencing token handed out (INCR; never expires, so tokens only grow)
 *   <prefix>{book}:sweeper  `<token>:<owner>` of the lock's holder, expiring with the lease (SET NX PX)
 * A payment's hash has no expiry while it is open; closed, it expires retentionMs later, like a handled state.
 * The book's times are the application's (createdAt, lookups, dueBy); the lock's lease is the server's clock.
 */
import { type PaymentState, STATE_RANK } from '../../core/payment.js'
import type {
  AttachedData,
  BookedPayment,
  BookStatus,
  CreatedPayment,
  CreationKind,
  LookupNote,
  OpenQuery,
  OpenSummary,
  PaymentBook,
  SweepLock,
} from '../../contract/payment-book.js'
import { checkedUid, MAX_ASKED_AMOUNTS, openQuery, type PaymentRef, type RecordOutcome } from '../../contract/payment-book.js'
import { luaScript, type RawCommand, replyText } from './client.js'
import { luaTable } from './lua-table.js'

// How many payments of an order_number are open, kept in its index (KEYS index); the index lives while one is.
const COUNT_OPEN = `
local function count_open(index, delta, retention)
  if redis.call('HINCRBY', index, '', delta) > 0 then redis.call('PERSIST', index)
  else redis.call('PEXPIRE', index, retention) end
end`

// KEYS payment, open, due, index. ARGV member, created JSON, createdAt, exchange ('' when none), amountSen, the
// most amounts kept, uid. Returns 1 created, 2 held with this amount asked before, 3 held and the amount added. Held: the
// latest creation shown, its amount moved last among those asked; status, state, lookups and expiry stay.
const RECORD = `${COUNT_OPEN}
redis.call('HSET', KEYS[4], ARGV[7], ARGV[3])
if redis.call('EXISTS', KEYS[1]) == 0 then
  count_open(KEYS[4], 1, 0)
  redis.call('HSET', KEYS[1], 'created', ARGV[2], 'asked', ARGV[5], 'createdAt', ARGV[3], 'status', 'open', 'state', '',
    'exchange', ARGV[4], 'lookups', 0, 'last', '', 'next', ARGV[3])
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
  redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
  return 1
end
local found = redis.call('HMGET', KEYS[1], 'asked', 'status')
local asked, known = {}, false
for amount in string.gmatch(found[1] or '', '[^,]+') do
  if amount == ARGV[5] then known = true else asked[#asked + 1] = amount end
end
asked[#asked + 1] = ARGV[5]
local keep = tonumber(ARGV[6])
if #asked > keep then asked = { unpack(asked, #asked - keep + 1) } end
redis.call('HSET', KEYS[1], 'created', ARGV[2], 'asked', table.concat(asked, ','), 'createdAt', ARGV[3])
if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'exchange', ARGV[4]) end
if found[2] == 'open' then redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1]) end
if known then return 2 end
return 3`

// KEYS payment, open, due, index. ARGV member, state, exchange, now, retentionMs. RANK is core's STATE_RANK.
const SETTLE = `${COUNT_OPEN}
local RANK = ${luaTable(STATE_RANK)}
local found = redis.call('HMGET', KEYS[1], 'status', 'state', 'exchange', 'createdAt')
local status, state, exchange = found[1], found[2], found[3]
if not status then return 0 end
local incoming = ARGV[2]
if state ~= '' and RANK[incoming] <= RANK[state] then
  if incoming == state then return 1 end
  return 0
end
if exchange == '' then exchange = ARGV[3] end
if incoming ~= 'pending' then
  redis.call('HSET', KEYS[1], 'status', incoming, 'state', incoming, 'exchange', exchange, 'next', '')
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  if status == 'open' then count_open(KEYS[4], -1, ARGV[5]) end
elseif status == 'open' then
  redis.call('HSET', KEYS[1], 'state', incoming, 'exchange', exchange)
else
  -- Abandoned with no result, and now a 99 came: open again, and due, or nothing would ever look at it.
  redis.call('HSET', KEYS[1], 'status', 'open', 'state', incoming, 'exchange', exchange, 'next', ARGV[4])
  redis.call('PERSIST', KEYS[1])
  count_open(KEYS[4], 1, ARGV[5])
  redis.call('ZADD', KEYS[2], found[4], ARGV[1])
  redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
end
return 1`

// KEYS payment, open, due, fence, index. ARGV member, token, at, next ('' for none), abandoned (1/0), retentionMs.
// The fence is read in the same script as the write: no newer holder can come in between.
const NOTE_LOOKUP = `${COUNT_OPEN}
if tonumber(ARGV[2]) < tonumber(redis.call('GET', KEYS[4]) or '0') then return 0 end
if redis.call('HGET', KEYS[1], 'status') ~= 'open' then return 0 end
redis.call('HINCRBY', KEYS[1], 'lookups', 1)
if ARGV[5] == '1' then
  redis.call('HSET', KEYS[1], 'status', 'abandoned', 'last', ARGV[3], 'next', '')
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[6])
  count_open(KEYS[5], -1, ARGV[6])
else
  redis.call('HSET', KEYS[1], 'last', ARGV[3], 'next', ARGV[4])
  if ARGV[4] == '' then redis.call('ZREM', KEYS[3], ARGV[1]) else redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1]) end
end
return 1`

// KEYS open, due. ARGV dueBy ('' for every open payment), limit. Returns order numbers, oldest created first.
// Few due: all of them, sorted by their rank among the open ones (the open set's own order: creation time, then
// order_number byte by byte; Lua's string comparison would follow the server's locale). Many due (a backlog after
// an outage): the open payments walked oldest first until enough of them are due, rather than sorting the whole
// backlog while Redis waits.
const OPEN_IDS = `
local limit = tonumber(ARGV[2])
if ARGV[1] == '' then return redis.call('ZRANGE', KEYS[1], 0, limit - 1) end
local due_by = tonumber(ARGV[1])
local out = {}
if redis.call('ZCOUNT', KEYS[2], '-inf', ARGV[1]) <= limit * 4 then
  local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
  local rank = {}
  for _, id in ipairs(ids) do rank[id] = redis.call('ZRANK', KEYS[1], id) or -1 end
  table.sort(ids, function(a, b) return rank[a] < rank[b] end)
  for i = 1, math.min(limit, #ids) do out[i] = ids[i] end
  return out
end
local batch = math.max(limit * 4, 256)
local start = 0
while #out < limit do
  local ids = redis.call('ZRANGE', KEYS[1], start, start + batch - 1)
  if #ids == 0 then break end
  for _, id in ipairs(ids) do
    local next = tonumber(redis.call('ZSCORE', KEYS[2], id))
    if next and next <= due_by then
      out[#out + 1] = id
      if #out >= limit then break end
    end
  end
  start = start + batch
end
return out`

// KEYS payment, open, due, index. ARGV member, uid, retentionMs. An open payment whose hash is gone (evicted, deleted
// by hand) leaves the indexes, where it would count as open and take a place in every listing for good.
const FORGET_GONE = `${COUNT_OPEN}
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('ZREM', KEYS[3], ARGV[1])
if redis.call('ZREM', KEYS[2], ARGV[1]) == 0 then return 0 end
redis.call('HDEL', KEYS[4], ARGV[2])
count_open(KEYS[4], -1, ARGV[3])
return 1`

// KEYS index. ARGV the payment keys' prefix, order_number, then the fields to read. The order's payment created
// last, as { uid, fields... }, or false. Reads the payment keys it names from the index: they share the index's
// {book} hash tag, so the script stays on one slot of a Redis Cluster.
const FIND_ANY = `
local found = redis.call('HGETALL', KEYS[1])
local best, best_at
for i = 1, #found, 2 do
  local uid = found[i]
  if uid ~= '' then
    local at = tonumber(redis.call('HGET', ARGV[1] .. #uid .. ':' .. uid .. ':' .. ARGV[2], 'createdAt'))
    if at and (best_at == nil or at > best_at) then best, best_at = uid, at end
  end
end
if best == nil then return false end
local reply = redis.call('HMGET', ARGV[1] .. #best .. ':' .. best .. ':' .. ARGV[2], unpack(ARGV, 3))
table.insert(reply, 1, best)
return reply`

// KEYS open. Returns { count, oldest creation time or false }.
const SUMMARY = `
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return { redis.call('ZCARD', KEYS[1]), oldest[2] or false }`

// KEYS sweeper, fence. ARGV owner, ttlMs. The token grows with every holder, taken in the same script as the lease.
const ACQUIRE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return false end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], token .. ':' .. ARGV[1], 'PX', ARGV[2])
return token`

// KEYS sweeper. ARGV <token>:<owner>, ttlMs.
const RENEW = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`

// KEYS sweeper. ARGV <token>:<owner>.
const RELEASE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1`

const FIELDS = ['created', 'asked', 'createdAt', 'status', 'state', 'exchange', 'lookups', 'last', 'next'] as const

/** What the created field holds: the payment as asked, but the parts the scripts keep in fields of their own. */
interface Asked {
  amountSen: number
  uid: string
  kind: CreationKind
  attached: AttachedData
}

const dateOf = (ms: string | null) => (ms === null || ms === '' ? null : new Date(Number(ms)))

function booked(orderNumber: string, values: readonly (string | null)[]): BookedPayment | undefined {
  const [created, askedSen, createdAt, status, state, exchange, lookups, last, next] = values
  if (created === null || created === undefined) return undefined
  const asked = JSON.parse(created) as Asked
  return {
    orderNumber,
    amountSen: asked.amountSen,
    askedSen: (askedSen ?? String(asked.amountSen)).split(',').map(Number),
    uid: asked.uid,
    kind: asked.kind,
    createdAt: new Date(Number(createdAt)),
    exchangeNumber: exchange === '' || exchange === undefined ? null : exchange,
    attached: asked.attached,
    status: status as BookStatus,
    state: state === '' || state === undefined ? null : (state as PaymentState),
    lookups: Number(lookups),
    lastLookupAt: dateOf(last ?? null),
    nextLookupAt: dateOf(next ?? null),
  }
}

const RECORDED: Record<number, RecordOutcome> = { 1: 'created', 2: 'known', 3: 'added' }

const texts = (reply: unknown): (string | null)[] => (Array.isArray(reply) ? reply.map(replyText) : [])

export interface RedisPaymentBook {
  readonly book: PaymentBook
  readonly lock: SweepLock
}

export function redisPaymentBook(send: RawCommand, prefix: string, retentionMs: string): RedisPaymentBook {
  const base = `${prefix}{book}:`
  const [open, due, fence, sweeper] = ['open', 'due', 'fence', 'sweeper'].map((name) => base + name) as [string, string, string, string]
  const payments = `${base}payment:`
  // The uid's length in bytes (as Lua's # counts) keeps a ':' in a uid or an order_number from making two keys one.
  const paymentKey = (payment: PaymentRef) => `${payments}${Buffer.byteLength(payment.uid)}:${payment.uid}:${payment.orderNumber}`
  const indexKey = (orderNumber: string) => `${base}order:${orderNumber}`
  const member = (payment: PaymentRef) => `${payment.orderNumber}\0${payment.uid}`
  const refOf = (id: string): PaymentRef => {
    const cut = id.lastIndexOf('\0')
    return { orderNumber: id.slice(0, cut), uid: id.slice(cut + 1) }
  }
  const keysOf = (payment: PaymentRef) => [paymentKey(payment), open, due]
  const scripts = {
    record: luaScript(send, RECORD),
    settle: luaScript(send, SETTLE),
    noteLookup: luaScript(send, NOTE_LOOKUP),
    openIds: luaScript(send, OPEN_IDS),
    forgetGone: luaScript(send, FORGET_GONE),
    findAny: luaScript(send, FIND_ANY),
    summary: luaScript(send, SUMMARY),
    acquire: luaScript(send, ACQUIRE),
    renew: luaScript(send, RENEW),
    release: luaScript(send, RELEASE),
  }
  const findOne = async (payment: PaymentRef) => booked(payment.orderNumber, texts(await send(['HMGET', paymentKey(payment), ...FIELDS])))

  const book: PaymentBook = {
    async record(payment: CreatedPayment) {
      const asked: Asked = { amountSen: payment.amountSen, uid: checkedUid(payment.uid), kind: payment.kind, attached: payment.attached }
      const keys = [...keysOf(payment), indexKey(payment.orderNumber)]
      const args = [
        member(payment),
        JSON.stringify(asked),
        String(payment.createdAt.getTime()),
        payment.exchangeNumber ?? '',
        String(payment.amountSen),
        String(MAX_ASKED_AMOUNTS),
        payment.uid,
      ]
      return RECORDED[Number(await scripts.record(keys, args))] ?? 'created'
    },

    async find(orderNumber, options) {
      if (options?.uid !== undefined) return findOne({ orderNumber, uid: options.uid })
      const reply = texts(await scripts.findAny([indexKey(orderNumber)], [payments, orderNumber, ...FIELDS]))
      return reply.length === 0 ? undefined : booked(orderNumber, reply.slice(1))
    },

    async settle(payment, state, exchangeNumber) {
      const args = [member(payment), state, exchangeNumber, String(Date.now()), retentionMs]
      return Number(await scripts.settle([...keysOf(payment), indexKey(payment.orderNumber)], args)) === 1
    },

    async noteLookup(payment: PaymentRef, note: LookupNote, token: number) {
      const abandoned = note.abandoned === true
      const next = abandoned || note.nextLookupAt === null ? '' : String(note.nextLookupAt.getTime())
      const args = [member(payment), String(token), String(note.at.getTime()), next, abandoned ? '1' : '0', retentionMs]
      return Number(await scripts.noteLookup([...keysOf(payment), fence, indexKey(payment.orderNumber)], args)) === 1
    },

    async listOpen(query?: OpenQuery) {
      const { dueBy, limit } = openQuery(query)
      const ids = texts(await scripts.openIds([open, due], [dueBy === null ? '' : String(dueBy), String(limit)])) as string[]
      const refs = ids.map(refOf)
      // Read after the ids were chosen: one that closed in between is left out.
      const found = await Promise.all(refs.map(findOne))
      const gone = refs.filter((_, i) => found[i] === undefined)
      await Promise.all(
        gone.map((payment) => scripts.forgetGone([...keysOf(payment), indexKey(payment.orderNumber)], [member(payment), payment.uid, retentionMs])),
      )
      return found.filter((payment): payment is BookedPayment => payment?.status === 'open')
    },

    async summary(): Promise<OpenSummary> {
      const [count, oldest] = texts(await scripts.summary([open], []))
      return { open: Number(count), oldestCreatedAt: dateOf(oldest ?? null) }
    },
  }

  const holder = (owner: string, token: number) => `${token}:${owner}`
  const lock: SweepLock = {
    async acquire(owner, ttlMs) {
      const token = await scripts.acquire([sweeper, fence], [owner, String(Math.max(1, Math.ceil(ttlMs)))])
      return token === null || token === undefined ? undefined : { token: Number(token) }
    },
    async renew(owner, token, ttlMs) {
      return Number(await scripts.renew([sweeper], [holder(owner, token), String(Math.max(1, Math.ceil(ttlMs)))])) === 1
    },
    async release(owner, token) {
      await scripts.release([sweeper], [holder(owner, token)])
    },
  }

  return { book, lock }
}
