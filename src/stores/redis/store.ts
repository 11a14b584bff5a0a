/**
 * A store shared by every process that reaches the same Redis: leases and handled states live in Redis keys.
 * @module fpx-collect/redis
 */
import { PAYMENT_STATES, type PaymentState, STATE_BIT } from '../../core/payment.js'
import { luaScript, rawCommand, type RedisClientLike, replyText } from './client.js'
import { CLAIM, COMPLETE, decidePlainClaim, freshLeaseValue, RELEASE } from './payment-key.js'
import type { Claim, ClaimRequest, LeaseRef, ReceiverStore } from '../../contract/store.js'
import type { InboxQueue } from '../../contract/inbox-queue.js'
import { redisInbox } from './inbox.js'
import { redisTimeline } from './timeline.js'
import { redisPaymentBook } from './payment-book.js'
import type { PaymentBook, SweepLock } from '../../contract/payment-book.js'
import { consoleWarnings, inspectRedis, type RedisDurability, reportDurability } from './inspect.js'
import type { Logger } from '../../core/logger.js'
import { once } from '../../contract/once.js'
import { checkPositiveInteger, DEFAULT_RETENTION_MS } from '../../contract/store-options.js'

export type { IoredisLikeClient, NodeRedisLikeClient, RedisClientLike } from './client.js'
export type { RedisDurability } from './inspect.js'

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
  /** Payments known from creation, and the lock of one sweeper at a time, under `<prefix>{book}:`. */
  paymentBook(): PaymentBook
  sweepLock(): SweepLock
}

function paymentState(value: string | null): PaymentState {
  if (value === null || !PAYMENT_STATES.includes(value as PaymentState)) throw new Error('the Redis claim script returned an unknown payment state')
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
 * A store for several processes (or restarts) receiving deliveries: a claim is a lease in the payment's one key,
 * taken by `SET NX PX` when the key is new and otherwise decided in a Lua script together with the "never
 * regress" check; only the lease's owner can complete or release.
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
  checkPositiveInteger('leaseMs', options.leaseMs)
  checkPositiveInteger('retentionMs', options.retentionMs)
  const retentionMs = String(options.retentionMs ?? DEFAULT_RETENTION_MS)
  const claimScript = luaScript(send, CLAIM)
  const completeScript = luaScript(send, COMPLETE)
  const releaseScript = luaScript(send, RELEASE)
  const timeline = redisTimeline(send, prefix, retentionMs)
  const book = redisPaymentBook(send, prefix, retentionMs)
  // Asked once; a server that could not be reached is asked again at the next call.
  const inspect = once(() => inspectRedis(send))
  // On the first claim rather than at construction: a node-redis client may not be connected yet.
  let checked = options.inspect === false

  // One key per payment (redis-payment-key.ts), in its own hash slot (the `{...}` tag) so the scripts also run on
  // Redis Cluster.
  const keyOf = (exchangeNumber: string) => [`${prefix}{${exchangeNumber}}:handled`]
  const leaseValue = (lease: LeaseRef) => `${lease.state}:${lease.owner}`
  // Redis before 7.0 refuses NX with GET: then every claim is the script.
  let plainClaims = true

  return {
    async claim(request: ClaimRequest): Promise<Claim> {
      if (!checked) {
        checked = true
        void inspect().then((found) => reportDurability(found, options.logger ?? consoleWarnings))
      }
      const leaseMs = String(options.leaseMs ?? Math.max(1, Math.ceil(request.leaseMs)))
      const keys = keyOf(request.exchangeNumber)
      if (plainClaims) {
        // A first delivery (nothing kept) is taken by the SET itself; a duplicate or a regression is told by the
        // value it returns; only a lease held or a later state goes on to the script.
        try {
          const reply = await send(['SET', keys[0] as string, freshLeaseValue(request.state, request.owner), 'NX', 'PX', leaseMs, 'GET'])
          const decided = decidePlainClaim(reply, request.state)
          if (decided !== undefined) return decided
        } catch (error) {
          const message = error instanceof Error ? error.message : ''
          if (message.includes('syntax error')) plainClaims = false
          // WRONGTYPE: an earlier version's set of handled states, which the script carries over.
          else if (!message.startsWith('WRONGTYPE')) throw error
        }
      }
      return toClaim(await claimScript(keys, [request.owner, request.state, leaseMs]))
    },

    async complete(lease: LeaseRef): Promise<boolean> {
      const reply = await completeScript(keyOf(lease.exchangeNumber), [leaseValue(lease), lease.state, retentionMs, String(STATE_BIT[lease.state])])
      return Number(reply) === 1
    },

    async release(lease: LeaseRef): Promise<boolean> {
      const reply = await releaseScript(keyOf(lease.exchangeNumber), [leaseValue(lease)])
      return Number(reply) === 1
    },

    openInbox: () => redisInbox(send, prefix),
    appendTimeline: timeline.append,
    readTimeline: timeline.read,
    paymentBook: () => book.book,
    sweepLock: () => book.lock,
    inspect,
  }
}
