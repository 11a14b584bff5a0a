import { luaScript, type RawCommand, replyText } from './client.js'
import { byTime, entryFromJson, entryToJson, MAX_TIMELINE_ENTRIES, type TimelineEntry, type TimelineQuery, timelineKey } from '../../contract/timeline.js'

/*
 * The Redis store's timeline: one list per order_number and one per exchange_number, `<prefix>timeline:order:<n>`
 * and `<prefix>timeline:exchange:<n>`, each entry a JSON string, trimmed to the latest MAX_TIMELINE_ENTRIES and
 * expiring retentionMs after its last entry, like the handled states. A batch is one script: every list appended,
 * trimmed and given its expiry together, so that no list outlives retention because a crash came in between.
 */

// KEYS: the lists. ARGV: retentionMs, the most entries a list keeps, then how many entries each list gets, then the
// entries, list by list. Pushed a hundred at a time: Lua's unpack spreads only so many values.
const APPEND = `
local at = 3 + #KEYS
for i, key in ipairs(KEYS) do
  local last = at + tonumber(ARGV[2 + i]) - 1
  for first = at, last, 100 do redis.call('RPUSH', key, unpack(ARGV, first, math.min(first + 99, last))) end
  redis.call('LTRIM', key, -tonumber(ARGV[2]), -1)
  redis.call('PEXPIRE', key, ARGV[1])
  at = last + 1
end
return 1
`

export interface RedisTimeline {
  append(entries: readonly TimelineEntry[]): Promise<void>
  read(query: TimelineQuery): Promise<TimelineEntry[]>
}

export function redisTimeline(send: RawCommand, prefix: string, retentionMs: string): RedisTimeline {
  const appendScript = luaScript(send, APPEND)
  const key = (kind: 'order' | 'exchange', value: string) => `${prefix}timeline:${kind}:${value}`

  return {
    async append(entries) {
      const lists = new Map<string, string[]>()
      const push = (name: string, json: string) => {
        const list = lists.get(name)
        if (list === undefined) lists.set(name, [json])
        else list.push(json)
      }
      for (const entry of entries) {
        const json = entryToJson(entry)
        if (entry.exchangeNumber !== null) push(key('exchange', entry.exchangeNumber), json)
        if (entry.orderNumber !== null) push(key('order', entry.orderNumber), json)
      }
      if (lists.size === 0) return
      const counts = [...lists.values()].map((list) => String(list.length))
      await appendScript([...lists.keys()], [retentionMs, String(MAX_TIMELINE_ENTRIES), ...counts, ...[...lists.values()].flat()])
    },

    async read(query) {
      const { kind, value, limit } = timelineKey(query)
      const reply = await send(['LRANGE', key(kind, value), String(-limit), '-1'])
      if (!Array.isArray(reply)) throw new Error('unexpected reply from Redis LRANGE')
      return byTime(reply.map((item) => entryFromJson(replyText(item) ?? 'null')))
    },
  }
}
