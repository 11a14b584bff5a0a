import { luaScript, type RawCommand, replyText } from './client.js'
import { byTime, entryFromJson, entryToJson, MAX_TIMELINE_ENTRIES, type TimelineEntry, type TimelineQuery, timelineKey } from '../../contract/timeline.js'

/*
 * The Redis store's timeline: one list per order_number and one per exchange_number, each entry a JSON string,
 * trimmed to the latest MAX_TIMELINE_ENTRIES and expiring retentionMs after its last entry, like the handled
 * states. One script per list appends, trims and sets the expiry in a single command: a list never outlives
 * retention because a crash came between two commands.
 */
const APPEND = `
redis.call('RPUSH', KEYS[1], unpack(ARGV, 3))
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[2]), -1)
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
`

// Lua's unpack has a limit on how many values it spreads; a batch far below it per list.
const MAX_PER_COMMAND = 200

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
      const commands: Promise<unknown>[] = []
      for (const [name, list] of lists)
        for (let start = 0; start < list.length; start += MAX_PER_COMMAND)
          commands.push(appendScript([name], [retentionMs, String(MAX_TIMELINE_ENTRIES), ...list.slice(start, start + MAX_PER_COMMAND)]))
      await Promise.all(commands)
    },

    async read(query) {
      const { kind, value, limit } = timelineKey(query)
      const reply = await send(['LRANGE', key(kind, value), String(-limit), '-1'])
      if (!Array.isArray(reply)) throw new Error('unexpected reply from Redis LRANGE')
      return byTime(reply.map((item) => entryFromJson(replyText(item) ?? 'null')))
    },
  }
}
