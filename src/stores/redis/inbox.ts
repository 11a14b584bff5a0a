/**
 * The Redis store's inbox (inbox mode). Every key shares one hash tag, so the scripts also run on Redis Cluster:
 *   <prefix>{inbox}:meta     hash id → JSON {source, orderNumber, rendering, signer?, status, attempts, receivedAt, seq, nextAt, owner, leaseUntil, lastError}
 *   <prefix>{inbox}:fields   hash id → the verified fields as JSON text, untouched by the scripts (their order survives)
 *   <prefix>{inbox}:due      sorted set of pending entries not leased, by when they are due
 *   <prefix>{inbox}:leased   sorted set of entries a worker holds, by when its lease ends
 *   <prefix>{inbox}:dead     sorted set of dead-lettered entries, by when they died
 *   <prefix>{inbox}:seq      a counter: each entry's `seq`, its place in arrival order
 * An id is `exchange_number:state`. Times are the server's (TIME), so processes with drifting clocks agree.
 */
import type { Rendering } from '../../core/result/message.js'
import { type PaymentState, STATE_RANK } from '../../core/payment.js'
import { INBOX_STATES, type InboxItem, type InboxQueue, type InboxStatus, parseFields, type TakenEntry } from '../../contract/inbox-queue.js'
import type { ResultSource } from '../../contract/delivery-result.js'
import { luaScript, type RawCommand, replyTexts as texts } from './client.js'
import { luaTable } from './lua-table.js'

interface Meta {
  source: ResultSource
  orderNumber: string | null
  rendering: Rendering
  signer?: string
  status: InboxStatus
  attempts: number
  receivedAt: number
  /** Arrival order: entries written in one millisecond (a 99 and its 00 retried together) are told apart by it. */
  seq?: number
  nextAt: number
  owner?: string
  leaseUntil?: number
  lastError?: string
}

const NOW = `local t = redis.call('TIME'); local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`

// KEYS meta, fields, due, seq. ARGV id, meta JSON (without times), fields.
const ENQUEUE = `${NOW}
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 0 end
local meta = cjson.decode(ARGV[2])
meta.status = 'pending'; meta.attempts = 0; meta.receivedAt = now; meta.nextAt = now; meta.seq = redis.call('INCR', KEYS[4])
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(meta))
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
redis.call('ZADD', KEYS[3], now, ARGV[1])
return 1`

// KEYS meta, fields, due, leased. ARGV owner, limit, leaseMs. Returns { id, meta, fields, ... }.
// The states of one exchange_number run in arrival order (see InboxQueue.take); an entry that must wait is pushed
// back a second rather than left in front of the others.
const TAKE = `${NOW}
local RANK = ${luaTable(STATE_RANK)}
-- Whether entry a arrived before b: by seq, or by time for entries written before seq was kept.
local function before(a, b)
  if a.seq and b.seq then return a.seq < b.seq end
  return a.receivedAt < b.receivedAt
end
local expired = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now)
for _, id in ipairs(expired) do
  redis.call('ZREM', KEYS[4], id)
  redis.call('ZADD', KEYS[3], now, id)
end
local limit = tonumber(ARGV[2])
local out = {}
local candidates = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, limit * 4 + 16)
for _, id in ipairs(candidates) do
  if #out >= limit * 3 then break end
  local raw = redis.call('HGET', KEYS[1], id)
  if not raw then
    redis.call('ZREM', KEYS[3], id)
  else
    local at = string.find(id, ':[^:]*$')
    local exchange, state = string.sub(id, 1, at - 1), string.sub(id, at + 1)
    local mine = cjson.decode(raw)
    local blocked = false
    for other, rank in pairs(RANK) do
      if other ~= state then
        local sibling = redis.call('HGET', KEYS[1], exchange .. ':' .. other)
        if sibling then
          local them = cjson.decode(sibling)
          if (before(them, mine) and them.status == 'pending') or (rank > RANK[state] and not before(mine, them)) then
            blocked = true
          end
        end
      end
    end
    if blocked then
      redis.call('ZADD', KEYS[3], now + 1000, id)
    else
      local meta = mine
      meta.attempts = meta.attempts + 1
      meta.owner = ARGV[1]
      meta.leaseUntil = now + tonumber(ARGV[3])
      local encoded = cjson.encode(meta)
      redis.call('HSET', KEYS[1], id, encoded)
      redis.call('ZREM', KEYS[3], id)
      redis.call('ZADD', KEYS[4], meta.leaseUntil, id)
      table.insert(out, id)
      table.insert(out, encoded)
      table.insert(out, redis.call('HGET', KEYS[2], id))
    end
  end
end
return out`

// KEYS meta, fields, leased, due. ARGV id, owner. A lease that ran out put the entry back in due (TAKE): it leaves both.
const FINISH = `
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw or cjson.decode(raw).owner ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
return 1`

// KEYS meta, due, leased, dead. ARGV id, owner, dead (1/0), delayMs, error, refund (1/0), the taken entry's attempts.
// Returns 0 (not the owner), 1 (done as asked) or 2 (revived: asked to dead-letter, given back pending instead).
const FAIL = `${NOW}
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 0 end
local meta = cjson.decode(raw)
if meta.owner ~= ARGV[2] then return 0 end
-- Fewer attempts stored than taken: RETRY reset them, the result was delivered again during this attempt.
local revived = ARGV[3] == '1' and meta.attempts < tonumber(ARGV[7])
meta.owner = nil; meta.leaseUntil = nil; meta.lastError = ARGV[5]
meta.attempts = math.max(meta.attempts - tonumber(ARGV[6]), 0)
-- A lease that ran out put the entry back in due (TAKE): it leaves both sets, and goes to one.
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
if revived then
  -- Due now, as RETRY makes an entry that is not leased: the sender was answered 200 for a delivery that no
  -- attempt has started after, and a backoff (the inbox's to choose, not the queue's) would only delay that one.
  meta.nextAt = now
  redis.call('ZADD', KEYS[2], now, ARGV[1])
elseif ARGV[3] == '1' then
  meta.status = 'dead'; meta.nextAt = now
  redis.call('ZADD', KEYS[4], now, ARGV[1])
else
  meta.nextAt = now + tonumber(ARGV[4])
  redis.call('ZADD', KEYS[2], meta.nextAt, ARGV[1])
end
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(meta))
if revived then return 2 end
return 1`

// KEYS meta, due, leased, dead. ARGV: 'dead' for every dead entry, or the ids. A leased entry stays leased and is
// not counted; only its attempts go back to 0, as do those of an entry taken by a worker that has not reported yet
// (owner kept, its lease run out), so that FAIL gives it back rather than dead-letter it (see InboxQueue.retry).
// A lease that ran out is no lease, even while the entry waits in the leased set for TAKE to move it: it is made
// due and counted, as list() and show() already call it not leased, and as the PostgreSQL store does.
const RETRY = `${NOW}
local ids = ARGV
if ARGV[1] == 'dead' then ids = redis.call('ZRANGE', KEYS[4], 0, -1) end
local count = 0
for _, id in ipairs(ids) do
  local raw = redis.call('HGET', KEYS[1], id)
  if raw then
    local meta = cjson.decode(raw)
    if meta.status == 'dead' or meta.owner then meta.attempts = 0 end
    local lease_until = redis.call('ZSCORE', KEYS[3], id)
    if not lease_until or tonumber(lease_until) <= now then
      redis.call('ZREM', KEYS[3], id)
      meta.status = 'pending'; meta.nextAt = now
      redis.call('ZREM', KEYS[4], id)
      redis.call('ZADD', KEYS[2], now, id)
      count = count + 1
    end
    redis.call('HSET', KEYS[1], id, cjson.encode(meta))
  end
end
return count`

// KEYS meta, due; ARGV offset, batch. Entries due later that have failed at least once (attempts > 0) become due
// now, one batch at a time: Redis runs nothing else while a script runs, and after an outage, when this is called,
// the entries waiting out a backoff are the most there will be. Returns { made due, looked at }; the entries made
// due leave the range, so the caller's next offset is the ones looked at and left. Only a backoff counts (nextAt
// later than now): an entry TAKE pushed back while an earlier state of its payment runs is due already, and making
// it "due now" would count it without changing when it runs (nor does the PostgreSQL store count it).
const HASTEN = `${NOW}
local count = 0
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. now, '+inf', 'LIMIT', ARGV[1], ARGV[2])
for _, id in ipairs(ids) do
  local raw = redis.call('HGET', KEYS[1], id)
  if raw then
    local meta = cjson.decode(raw)
    if meta.status == 'pending' and meta.attempts > 0 and meta.nextAt > now then
      meta.nextAt = now
      redis.call('HSET', KEYS[1], id, cjson.encode(meta))
      redis.call('ZADD', KEYS[2], now, id)
      count = count + 1
    end
  end
end
return { count, #ids }`

const HASTEN_BATCH = 500

function splitId(id: string): { exchangeNumber: string; state: PaymentState } {
  const at = id.lastIndexOf(':')
  return { exchangeNumber: id.slice(0, at), state: id.slice(at + 1) as PaymentState }
}

function toItem(id: string, meta: Meta): InboxItem {
  const leased = meta.owner !== undefined && meta.leaseUntil !== undefined && meta.leaseUntil > Date.now()
  return {
    id,
    ...splitId(id),
    source: meta.source,
    orderNumber: meta.orderNumber,
    status: meta.status,
    attempts: meta.attempts,
    receivedAt: new Date(meta.receivedAt),
    nextAttemptAt: new Date(meta.nextAt),
    leasedUntil: leased ? new Date(meta.leaseUntil as number) : null,
    lastError: meta.lastError ?? null,
  }
}

/** @param hastenBatch entries hasten() looks at per script call (smaller only in tests) */
export function redisInbox(send: RawCommand, prefix: string, hastenBatch = HASTEN_BATCH): InboxQueue {
  const base = `${prefix}{inbox}:`
  const [meta, fields, due, leased, dead, seq] = ['meta', 'fields', 'due', 'leased', 'dead', 'seq'].map((name) => base + name) as [string, string, string, string, string, string]
  const scripts = {
    enqueue: luaScript(send, ENQUEUE),
    take: luaScript(send, TAKE),
    finish: luaScript(send, FINISH),
    fail: luaScript(send, FAIL),
    retry: luaScript(send, RETRY),
    hasten: luaScript(send, HASTEN),
  }
  const idOf = (entry: { exchangeNumber: string; state: string }) => `${entry.exchangeNumber}:${entry.state}`

  async function read(ids: string[]): Promise<{ item: InboxItem; seq: number | undefined }[]> {
    if (ids.length === 0) return []
    const metas = texts(await send(['HMGET', meta, ...ids]))
    return ids.flatMap((id, i) => {
      const raw = metas[i]
      if (raw === null || raw === undefined) return []
      const parsed = JSON.parse(raw) as Meta
      return [{ item: toItem(id, parsed), seq: parsed.seq }]
    })
  }
  const items = async (ids: string[]) => (await read(ids)).map(({ item }) => item)

  return {
    ready: async () => {},

    async enqueue(entry) {
      const head = { source: entry.source, orderNumber: entry.orderNumber, rendering: entry.rendering, ...(entry.signer === undefined ? {} : { signer: entry.signer }) }
      const reply = await scripts.enqueue([meta, fields, due, seq], [idOf(entry), JSON.stringify(head), entry.fields])
      return Number(reply) === 1 ? 'queued' : 'present'
    },

    async take(owner, limit, leaseMs) {
      const reply = texts(await scripts.take([meta, fields, due, leased], [owner, String(limit), String(leaseMs)]))
      const taken: TakenEntry[] = []
      for (let i = 0; i + 2 < reply.length; i += 3) {
        const id = reply[i] as string
        const head = JSON.parse(reply[i + 1] as string) as Meta
        taken.push({
          ...splitId(id),
          source: head.source,
          orderNumber: head.orderNumber,
          rendering: head.rendering,
          ...(typeof head.signer === 'string' ? { signer: head.signer } : {}),
          fields: reply[i + 2] ?? '{}',
          attempts: head.attempts,
          owner,
        })
      }
      return taken
    },

    async finish(entry) {
      return Number(await scripts.finish([meta, fields, leased, due], [idOf(entry), entry.owner])) === 1
    },

    async fail(entry, outcome) {
      const args = [idOf(entry), entry.owner, outcome.dead ? '1' : '0', String(outcome.delayMs), outcome.error, outcome.refund === true ? '1' : '0', String(entry.attempts)]
      const reply = Number(await scripts.fail([meta, due, leased, dead], args))
      return reply === 2 ? 'revived' : reply === 1
    },

    async list(query = {}) {
      const limit = query.limit ?? 100
      const ids: string[] = []
      if (query.status !== 'dead') ids.push(...(texts(await send(['ZRANGE', leased, '0', '-1'])) as string[]), ...(texts(await send(['ZRANGE', due, '0', '-1'])) as string[]))
      if (query.status !== 'pending') ids.push(...(texts(await send(['ZRANGE', dead, '0', '-1'])) as string[]))
      const found = (await read([...new Set(ids)])).filter(({ item }) => query.orderNumber === undefined || item.orderNumber === query.orderNumber)
      // Oldest first means in arrival order, as TAKE reads it: entries of one millisecond by seq (PostgreSQL's
      // microseconds tell them apart); the id only for entries written before seq was kept.
      const arrival = (a: (typeof found)[number], b: (typeof found)[number]) =>
        a.item.receivedAt.getTime() - b.item.receivedAt.getTime() || (a.seq !== undefined && b.seq !== undefined ? a.seq - b.seq : a.item.id.localeCompare(b.item.id))
      return found
        .sort(arrival)
        .slice(0, limit)
        .map(({ item }) => item)
    },

    async show(exchangeNumber) {
      const ids = INBOX_STATES.map((state) => `${exchangeNumber}:${state}`)
      const found = await items(ids)
      if (found.length === 0) return []
      const payloads = texts(await send(['HMGET', fields, ...found.map((item) => item.id)]))
      return found.map((item, i) => ({ ...item, fields: parseFields(payloads[i] ?? '{}') }))
    },

    async retry(target) {
      const args = 'allDead' in target ? ['dead'] : (target.state === undefined ? INBOX_STATES : [target.state]).map((state) => `${target.exchangeNumber}:${state}`)
      return Number(await scripts.retry([meta, due, leased, dead], args))
    },

    async hasten() {
      let hastened = 0
      let offset = 0
      for (;;) {
        const [count, seen] = (await scripts.hasten([meta, due], [String(offset), String(hastenBatch)])) as [unknown, unknown]
        hastened += Number(count)
        offset += Number(seen) - Number(count)
        if (Number(seen) < hastenBatch) return hastened
      }
    },

    async counts() {
      const [dueCount, leasedCount, deadCount] = await Promise.all([send(['ZCARD', due]), send(['ZCARD', leased]), send(['ZCARD', dead])])
      return { pending: Number(dueCount) + Number(leasedCount), dead: Number(deadCount) }
    },
  }
}
