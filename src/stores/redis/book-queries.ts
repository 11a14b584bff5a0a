/*
 * The operator's questions to the Redis book (PaymentBook.list and overview), each one script over the sorted sets
 * payment-book.ts describes: a page walks its set (every payment, a status, the failing successes) from the cursor
 * down by creation time; a search reads the order's index, the exchange_number hash and the e-mail range, then
 * filters and sorts those few; the overview counts ranges. Each first forgets what expired since (bounded), and a
 * book of the first version is indexed once, before the first question.
 */
import { type CheckedList, HOUR_MS, listQuery, noStatuses, overviewWindow, pageOf, ageBounds, BOOK_STATUSES, hoursOf } from '../../contract/book-query.js'
import { once } from '../../contract/once.js'
import type { BookedPayment, BookOverview, ListQuery, OverviewWindow, PaymentPage } from '../../contract/payment-book.js'
import { BOOK_FIELDS, BOOK_LUA } from './book-lua.js'
import { bookedPayment } from './booked.js'
import { luaScript, type RawCommand, replyText, replyTexts } from './client.js'

// ARGV base, now, the set to walk ('' to search), from, to ('' for none), the cursor's score and member ('' for none),
// how many to return, retentionMs; to search, also the status ('' for any), the term and its e-mail key. Returns
// each payment as its member followed by the values of BOOK_FIELDS, newest first.
const LIST = `${BOOK_LUA}
local base, now, want, retention = ARGV[1], ARGV[2], tonumber(ARGV[8]), ARGV[9]
local from, to, after, after_member = ARGV[4], ARGV[5], ARGV[6], ARGV[7]
forget_expired(base, now, 1000)
local out, taken, gone = {}, 0, {}
local function read(member)
  local values = redis.call('HMGET', member_keys(base, member).payment, unpack(BOOK_FIELDS))
  if not values[1] then gone[#gone + 1] = member return nil end
  return values
end
local function take(member, values)
  out[#out + 1] = member
  for _, value in ipairs(values) do out[#out + 1] = value end
  taken = taken + 1
end
if ARGV[3] ~= '' then
  local key = base .. ARGV[3]
  local max, min = '+inf', '-inf'
  if to ~= '' then max = '(' .. to end
  if from ~= '' then min = from end
  if after ~= '' and (to == '' or tonumber(after) < tonumber(to)) then
    -- The cursor's own creation time first: the members after its own (in byte order, as Redis keeps them).
    if from == '' or tonumber(after) >= tonumber(from) then
      local same = redis.call('ZRANGEBYSCORE', key, after, after)
      for i = #same, 1, -1 do
        if taken < want and bytes_before(same[i], after_member) then
          local values = read(same[i])
          if values then take(same[i], values) end
        end
      end
    end
    max = '(' .. after
  end
  local offset = 0
  while taken < want do
    local batch = redis.call('ZREVRANGEBYSCORE', key, max, min, 'LIMIT', offset, want)
    if #batch == 0 then break end
    for _, member in ipairs(batch) do
      if taken < want then
        local values = read(member)
        if values then take(member, values) end
      end
    end
    offset = offset + #batch
  end
else
  local status, term, email = ARGV[10], ARGV[11], ARGV[12]
  local seen, candidates = {}, {}
  local function add(member)
    if member and not seen[member] then
      seen[member] = true
      candidates[#candidates + 1] = member
    end
  end
  for _, field in ipairs(redis.call('HKEYS', base .. 'order:' .. term)) do
    if field ~= '' then add(book_keys(base, field == '\\0' and '' or field, term).member) end
  end
  add(redis.call('HGET', base .. 'exchanges', term))
  if email ~= '' then
    for _, entry in ipairs(redis.call('ZRANGEBYLEX', base .. 'emails', '[' .. email .. '\\0', '(' .. email .. '\\1')) do
      add(string.sub(entry, #email + 2))
    end
  end
  local rows = {}
  for _, member in ipairs(candidates) do
    local values = read(member)
    if values then
      local created = tonumber(values[3])
      local failing = tonumber(values[12] or '0') > 0
      local matches = string.match(member, '^(.*)%z') == term or values[6] == term or (email ~= '' and email_key(values[10] or '') == email)
      local wanted = status == '' or values[4] == status or (status == 'paid_failing' and failing and values[14] == 'succeeded')
      local inside = (from == '' or created >= tonumber(from)) and (to == '' or created < tonumber(to))
      local later = after == '' or created < tonumber(after) or (created == tonumber(after) and bytes_before(member, after_member))
      if matches and wanted and inside and later then rows[#rows + 1] = { member = member, created = created, values = values } end
    end
  end
  table.sort(rows, function(a, b)
    if a.created ~= b.created then return a.created > b.created end
    return bytes_before(b.member, a.member)
  end)
  for i = 1, math.min(want, #rows) do take(rows[i].member, rows[i].values) end
end
for _, member in ipairs(gone) do forget_gone(member_keys(base, member), retention) end
return out`

// ARGV base, now, from, to, then the creation times that part the open payments' ages (an hour, a day, a week ago).
// Returns the counts of each status in the window, the paid-and-failing, the failing, the open by age, then for each
// hour of the window (hoursOf) the results settled in it: succeeded, failed, pending.
const OVERVIEW = `${BOOK_LUA}
local base, now, from, to = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local hour, day, week = ARGV[5], ARGV[6], ARGV[7]
forget_expired(base, now, 1000)
local out = {}
local function ms(value) return string.format('%.0f', value) end
for _, status in ipairs(STATUSES) do out[#out + 1] = redis.call('ZCOUNT', status_set(base, status), ms(from), '(' .. ms(to)) end
out[#out + 1] = redis.call('ZCARD', base .. 'paid-failing')
out[#out + 1] = redis.call('ZCARD', base .. 'failing')
local open = status_set(base, 'open')
out[#out + 1] = redis.call('ZCOUNT', open, '(' .. hour, '+inf')
out[#out + 1] = redis.call('ZCOUNT', open, '(' .. day, hour)
out[#out + 1] = redis.call('ZCOUNT', open, '(' .. week, day)
out[#out + 1] = redis.call('ZCOUNT', open, '-inf', week)
local step = ${HOUR_MS}
local start = math.floor(from / step) * step
while start < to do
  for _, state in ipairs({ 'succeeded', 'failed', 'pending' }) do
    out[#out + 1] = redis.call('ZCOUNT', base .. 'settled:' .. state, ms(math.max(start, from)), '(' .. ms(math.min(start + step, to)))
  end
  start = start + step
end
return out`

// ARGV base, now, then the hash keys of booked payments: each put in the operator's indexes (a book of the first
// version had none of them).
const INDEX = `${BOOK_LUA}
local base, now = ARGV[1], ARGV[2]
for i = 3, #ARGV do
  local n, rest = string.match(string.sub(ARGV[i], #base + #'payment:' + 1), '^(%d+):(.*)$')
  if n then
    local uid = string.sub(rest, 1, tonumber(n))
    place(book_keys(base, uid, string.sub(rest, tonumber(n) + 2)), now)
  end
end
return 1`

/** The version of the indexes a book has once `indexed` holds it. */
const INDEXED = '2'
const SCAN_COUNT = '1000'
/** A key pattern matching `text` literally: Redis globs read `*`, `?`, `[`, `]` and `\`. */
const literal = (text: string) => text.replace(/[*?[\]\\]/g, (char) => `\\${char}`)

/** The set a page of `status` walks (payment-book.ts). */
function setOf(status: CheckedList['status']): string {
  if (status === undefined) return 'all'
  if (status === 'paid_failing') return 'paid-failing'
  return status === 'open' ? 'open' : `status:${status}`
}

export interface RedisBookQueries {
  list(query?: ListQuery): Promise<PaymentPage>
  overview(window: OverviewWindow): Promise<BookOverview>
}

export function redisBookQueries(send: RawCommand, base: string, retentionMs: string): RedisBookQueries {
  const scripts = { list: luaScript(send, LIST), overview: luaScript(send, OVERVIEW), index: luaScript(send, INDEX) }
  // A book the first version kept: its payments put in the indexes once, a thousand keys a script.
  const indexed = once(async () => {
    if (replyText(await send(['GET', `${base}indexed`])) === INDEXED) return
    let cursor = '0'
    do {
      const [next, keys] = (await send(['SCAN', cursor, 'MATCH', `${literal(base)}payment:*`, 'COUNT', SCAN_COUNT])) as [unknown, unknown]
      const found = replyTexts(keys).filter((key): key is string => key !== null)
      if (found.length > 0) await scripts.index([], [base, String(Date.now()), ...found])
      cursor = replyText(next) ?? '0'
    } while (cursor !== '0')
    await send(['SET', `${base}indexed`, INDEXED])
  })

  return {
    async list(query) {
      const checked = listQuery(query)
      await indexed()
      const after = checked.after === undefined ? ['', ''] : [String(checked.after.createdAt), `${checked.after.orderNumber}\0${checked.after.uid}`]
      const common = [base, String(Date.now()), checked.search === undefined ? setOf(checked.status) : '', String(checked.from ?? ''), String(checked.to ?? ''), ...after]
      const search = checked.search === undefined ? [] : [checked.status ?? '', checked.search, checked.searchEmail ?? '']
      const reply = replyTexts(await scripts.list([], [...common, String(checked.limit + 1), retentionMs, ...search]))
      const payments: BookedPayment[] = []
      const width = BOOK_FIELDS.length + 1
      for (let at = 0; at + width <= reply.length; at += width) {
        const member = reply[at] as string
        const found = bookedPayment(member.slice(0, member.lastIndexOf('\0')), reply.slice(at + 1, at + width))
        if (found !== undefined) payments.push(found)
      }
      return pageOf(payments, checked.limit)
    },

    async overview(request) {
      const window = overviewWindow(request)
      await indexed()
      const bounds = ageBounds(Date.now())
      const args = [base, String(Date.now()), String(window.from), String(window.to), String(bounds.hour), String(bounds.day), String(bounds.week)]
      const counts = (await scripts.overview([], args)) as unknown[]
      const number = (at: number) => Number(counts[at] ?? 0)
      const byStatus = noStatuses()
      BOOK_STATUSES.forEach((status, i) => (byStatus[status] = number(i)))
      const perHour = hoursOf(window).map((hour, i) => ({ hour: new Date(hour), succeeded: number(10 + 3 * i), failed: number(11 + 3 * i), pending: number(12 + 3 * i) }))
      return {
        byStatus,
        paidFailing: number(4),
        failing: number(5),
        openByAge: { underHour: number(6), underDay: number(7), underWeek: number(8), older: number(9) },
        perHour,
      }
    },
  }
}
