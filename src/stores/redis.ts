/**
 * A store shared by every process that reaches the same Redis: leases and handled states live in Redis keys.
 * @module fpx-collect/redis
 */
import type { PaymentState } from '../core/payment.js'
import { luaScript, rawCommand, type RedisClientLike, replyText } from './redis-client.js'
import type { Claim, ClaimRequest, LeaseRef, ReceiverStore } from './store.js'
import type { InboxQueue } from '../inbox/queue.js'
import { redisInbox } from './redis-inbox.js'
import { redisTimeline } from './redis-timeline.js'
import { consoleWarnings, inspectRedis, type RedisDurability, reportDurability } from './redis-inspect.js'
import type { Logger } from '../core/logger.js'

export type { IoredisLikeClient, NodeRedisLikeClient, RedisClientLike } from './redis-client.js'
export type { RedisDurability } from './redis-inspect.js'

export interface RedisStoreOptions {
  /** A connected ioredis client, or a connected node-redis v4+ client (`createClient()`; not a cluster). */
  client: RedisClientLike
  /** Put in front of every key. Default `fpx-collect:`. */
  prefix?: string
  /** How long a claim holds an exchange_number, overriding the receiver's leaseMs when given. */
  leaseMs?: number
  /**
   * How long handled states are remembered after the last completion. Default 30 days: the service's
   * redelivery window is not stated, and a state forgotten too early runs its handlers again.
   */
  retentionMs?: number
  /**
   * Where the store's warnings go: those of the durability check below. Default: the console, as BullMQ's do.
   */
  logger?: Pick<Logger, 'warn' | 'debug'>
  /**
   * Inspect the server when the store starts working (CONFIG GET appendonly, appendfsync, maxmemory-policy,
   * save; INFO when CONFIG is disabled) and warn when a restart or an eviction would forget handled states.
   * Default true.
   */
  inspect?: boolean
}

export interface RedisStore extends ReceiverStore {
  /** What the server would forget of handled states, as the start-up check found it (asked once, then cached). */
  inspect(): Promise<RedisDurability>
  /** Inbox mode's queue under `<prefix>{inbox}:`: what createReceiver({ inbox }) uses, and the operator API without a receiver. */
  openInbox(): InboxQueue
}

const DAY_MS = 24 * 60 * 60 * 1000
const STATES: readonly string[] = ['pending', 'failed', 'succeeded'] satisfies PaymentState[]

/*
 * Two keys per exchange_number, in one hash slot (the `{...}` tag) so the scripts also run on Redis Cluster:
 *   lease:   "<state>:<owner>", set NX with PX leaseMs, so a crashed owner's lease disappears by itself;
 *   handled: a set of the states completed, expiring retentionMs after the last completion.
 * The lease value holds the state as well as the owner so that complete and release match both, as the memory
 * store does. States never contain ':', so the owner is everything after the first one.
 */

// The ranking and the stale rule replicate currentState and isRegression in src/stores/store.ts; keep them in step.
// Checks run in the memory store's order: busy first, then stale, then duplicate.
// Every redis.call costs the server about as much as a plain command does, and a script's own overhead about
// twice that (INFO commandstats, Redis 7.0), so the common case, a first delivery, takes two calls: nothing
// handled (SMEMBERS of a missing key) and SET NX succeeding leave nothing to check, since a lease, a
// completion's marker or our own lease would all have made the SET NX fail. Anything else takes the full path,
// which reads the same handled set instead of asking again (no SISMEMBER) and ranks without a table.
const CLAIM = `
local lease_key, handled_key = KEYS[1], KEYS[2]
local owner, state, lease_ms = ARGV[1], ARGV[2], ARGV[3]
local members = redis.call('SMEMBERS', handled_key)
if #members == 0 and redis.call('SET', lease_key, state .. ':' .. owner, 'NX', 'PX', lease_ms) then
  return { 'claimed', '' }
end
local held = redis.call('GET', lease_key)
-- A completion's marker (see COMPLETE) holds no lease.
local marker = held and string.sub(held, 1, 5) == 'done:'
if marker then held = false end
if held and string.sub(held, (string.find(held, ':', 1, true) or 0) + 1) ~= owner then
  local ttl = redis.call('PTTL', lease_key)
  if ttl < 1 then ttl = 1 end
  return { 'busy', ttl }
end
-- The highest ranked state handled (pending < failed < succeeded; anything else is ignored), and whether ours is.
local current, handled = false, false
for _, member in ipairs(members) do
  if member == 'succeeded' then
    current = member
  elseif member == 'failed' then
    if current ~= 'succeeded' then current = member end
  elseif member == 'pending' then
    if not current then current = member end
  end
  if member == state then handled = true end
end
if current and current ~= state and (state == 'pending' or (current == 'succeeded' and state == 'failed')) then
  return { 'stale', current }
end
if handled then return { 'duplicate' } end
local value = state .. ':' .. owner
if held or marker then
  -- The same owner claiming again renews its lease, as in the memory store.
  redis.call('SET', lease_key, value, 'PX', lease_ms)
else
  redis.call('SET', lease_key, value, 'NX', 'PX', lease_ms)
end
return { 'claimed', current or '' }
`

// Recording the state and dropping the lease in one script: a lease that expired in between cannot be
// completed by its old owner after the next delivery took it over. The lease is replaced by a short-lived
// "done:" marker so that the same completion sent again answers 1: a client resends a command whose reply a
// Redis restart cut off, and answering 0 to a completion that was applied made the receiver report lease_lost
// and the service redeliver, running the handlers again (seen in the restart soak with AOF appendfsync always).
// The lease held (the common case) is tested first, so that the marker's text is built once.
const COMPLETE = `
local held = redis.call('GET', KEYS[1])
if held ~= ARGV[1] then
  if held == 'done:' .. ARGV[1] then return 1 end
  return 0
end
redis.call('SADD', KEYS[2], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('SET', KEYS[1], 'done:' .. ARGV[1], 'PX', ARGV[4])
return 1
`

/** How long a completion can be sent again and still be told it was applied. */
const DONE_MARKER_MS = 60_000

const RELEASE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
`

function positiveInteger(name: string, value: number | undefined): void {
  if (value !== undefined && !(Number.isInteger(value) && value > 0)) throw new TypeError(`${name} must be a positive integer`)
}

function paymentState(value: string | null): PaymentState {
  if (value === null || !STATES.includes(value)) throw new Error('the Redis claim script returned an unknown payment state')
  return value as PaymentState
}

function toClaim(reply: unknown): Claim {
  const [outcome, detail] = Array.isArray(reply) ? reply : []
  switch (replyText(outcome)) {
    case 'claimed': {
      const previous = replyText(detail)
      return { outcome: 'claimed', previousState: previous === '' || previous === null ? null : paymentState(previous) }
    }
    case 'duplicate':
      return { outcome: 'duplicate' }
    case 'stale':
      return { outcome: 'stale', currentState: paymentState(replyText(detail)) }
    case 'busy':
      return { outcome: 'busy', retryAfterMs: Math.max(1, Number(detail) || 1) }
    default:
      throw new Error('unexpected reply from the Redis claim script')
  }
}

/**
 * A store for several processes (or restarts) receiving deliveries: claims are `SET NX PX` leases decided in
 * one Lua script together with the "never regress" check, and only the lease's owner can complete or release.
 * A concurrent duplicate held by another process is answered busy without `settled`: the receiver asks again
 * for up to busyWaitMs, then replies 409 with Retry-After.
 *
 * What it promises: a state is recorded only by a delivery whose handlers returned while it still held the
 * lease. A process killed after its handlers' effects but before completion leaves the state unrecorded, so the
 * next delivery runs the handlers again; make effects idempotent, or use the PostgreSQL store's transactions.
 */
export function redisStore(options: RedisStoreOptions): RedisStore {
  if (options === null || typeof options !== 'object') throw new TypeError('redisStore needs options with a client')
  const send = rawCommand(options.client)
  const prefix = options.prefix ?? 'fpx-collect:'
  if (typeof prefix !== 'string') throw new TypeError('prefix must be a string')
  positiveInteger('leaseMs', options.leaseMs)
  positiveInteger('retentionMs', options.retentionMs)
  const retentionMs = String(options.retentionMs ?? 30 * DAY_MS)
  const claimScript = luaScript(send, CLAIM)
  const completeScript = luaScript(send, COMPLETE)
  const releaseScript = luaScript(send, RELEASE)
  const timeline = redisTimeline(send, prefix, retentionMs)
  let inspected: Promise<RedisDurability> | undefined
  const inspect = () => (inspected ??= inspectRedis(send))
  // On the first claim rather than at construction: a node-redis client may not be connected yet.
  let checked = options.inspect === false

  const keys = (exchangeNumber: string) => {
    const base = `${prefix}{${exchangeNumber}}`
    return [`${base}:lease`, `${base}:handled`]
  }
  const leaseValue = (lease: LeaseRef) => `${lease.state}:${lease.owner}`

  return {
    async claim(request: ClaimRequest): Promise<Claim> {
      if (!checked) {
        checked = true
        void inspect().then((found) => reportDurability(found, options.logger ?? consoleWarnings))
      }
      const leaseMs = options.leaseMs ?? Math.max(1, Math.ceil(request.leaseMs))
      const reply = await claimScript(keys(request.exchangeNumber), [request.owner, request.state, String(leaseMs)])
      return toClaim(reply)
    },

    async complete(lease: LeaseRef): Promise<boolean> {
      const reply = await completeScript(keys(lease.exchangeNumber), [leaseValue(lease), lease.state, retentionMs, String(DONE_MARKER_MS)])
      return Number(reply) === 1
    },

    async release(lease: LeaseRef): Promise<boolean> {
      const reply = await releaseScript(keys(lease.exchangeNumber), [leaseValue(lease)])
      return Number(reply) === 1
    },

    openInbox: () => redisInbox(send, prefix),
    appendTimeline: timeline.append,
    readTimeline: timeline.read,
    inspect,
  }
}
