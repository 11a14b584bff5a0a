/**
 * A store shared by every process that reaches the same Redis: leases and handled states live in Redis keys.
 * @module fpx-collect/redis
 */
import { PAYMENT_STATES, type PaymentState } from '../../core/payment.js'
import type { Logger } from '../../core/logger.js'
import type { InboxQueue } from '../../contract/inbox-queue.js'
import { once } from '../../contract/once.js'
import type { PaymentBook, SweepLock } from '../../contract/payment-book.js'
import { checkPositiveInteger, DEFAULT_RETENTION_MS } from '../../contract/store-options.js'
import type { Claim, LeaseRef, OrderRef, ReceiverStore } from '../../contract/store.js'
import type { TimelineEntry, TimelineQuery } from '../../contract/timeline.js'
import { luaScript, rawCommand, type RedisClientLike, replyText, replyTexts } from './client.js'
import { redisInbox } from './inbox.js'
import { consoleWarnings, inspectRedis, type RedisDurability, reportDurability } from './inspect.js'
import { bookedPayment } from './booked.js'
import { bookBase, redisPaymentBook } from './payment-book.js'
import { redisSweepLock } from './sweep-lock.js'
import { CLAIM, COMPLETE, paidKey, paymentKey, RELEASE, RELEASE_FAILED, resultArgs } from './payment-key.js'
import { failureText } from '../../contract/book-query.js'
import { redisTimeline } from './timeline.js'
import { redisLeaseEnds } from './lease-ends.js'

export type { IoredisLikeClient, NodeRedisLikeClient, RedisClientLike } from './client.js'
export type { RedisDurability } from './inspect.js'

export interface RedisStoreOptions {
  /**
   * A connected ioredis client, or a connected node-redis v4+ client (`createClient()`), of one Redis server (with
   * its replicas): not a Redis Cluster, since a claim reads the payment, its order and the payment book together.
   */
  client: RedisClientLike
  /** Put in front of every key. Default `fpx-collect:`. */
  prefix?: string
  /**
   * How long a claim holds an exchange_number, overriding the receiver's leaseMs when given. A receiver on this
   * store times its deliveries (the confirmation's half, store calls, waits) by the shorter of the two.
   */
  leaseMs?: number
  /**
   * How long handled states are remembered after the last completion. Default 30 days: the service's
   * redelivery window is not stated, and a state forgotten too early runs its handlers again.
   */
  retentionMs?: number
  /**
   * Where the store's warnings go: those of the durability check below. Default: the console, as BullMQ's do;
   * `false` silences them, as it does the receiver's.
   */
  logger?: Pick<Logger, 'warn' | 'debug'> | false
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
  /** The per-order timeline, in lists under `<prefix>timeline:` (timeline.ts). */
  appendTimeline(entries: readonly TimelineEntry[]): Promise<void>
  readTimeline(query: TimelineQuery): Promise<TimelineEntry[]>
  /** Payments known from creation, and the lock of one sweeper at a time, under `<prefix>{book}:`. */
  paymentBook(): PaymentBook
  sweepLock(): SweepLock
}

function paymentState(value: string | null | undefined): PaymentState {
  if (!PAYMENT_STATES.includes(value as PaymentState)) throw new Error('the Redis claim script returned an unknown payment state')
  return value as PaymentState
}

/** The claim script's reply (payment-key.ts) as a Claim; paidBy and booked only when the claim named an order. */
function toClaim(reply: readonly (string | null)[], orderNumber: string | undefined): Claim {
  const [outcome, detail, paidBy, ...booked] = reply
  switch (outcome) {
    case 'claimed': {
      const claim = { outcome: 'claimed', previousState: detail ? paymentState(detail) : null } as const
      if (orderNumber === undefined) return claim
      // What the merchant's client recorded: a record the book made from a result has nothing to check against.
      const found = bookedPayment(orderNumber, booked)
      return { ...claim, paidBy: paidBy || null, ...(found === undefined || found.kind === 'result' ? {} : { booked: found }) }
    }
    case 'duplicate':
      return { outcome: 'duplicate' }
    case 'stale':
      return { outcome: 'stale', currentState: paymentState(detail) }
    case 'busy':
      return { outcome: 'busy', retryAfterMs: Math.max(1, Number(detail) || 1) }
    default:
      throw new Error('unexpected reply from the Redis claim script')
  }
}

/**
 * A store for several processes (or restarts) receiving deliveries. A claim is one script on the payment's key
 * (payment-key.ts): the lease, the "never regress" check, and, for a result that names its order, whether another
 * payment paid the order and what the payment book holds of it. A completion is one script too: the state
 * recorded, the order marked paid, the booked payment settled. Only the lease's owner can complete or release.
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
  // Left out or null: the console, as the receiver takes them.
  const logger = options.logger ?? consoleWarnings
  // Checked here, not when the first claim reports to it: a bad logger found then would reject with nobody listening.
  if (logger !== false && (typeof logger !== 'object' || typeof logger.warn !== 'function'))
    throw new TypeError('logger must be an object with a warn method (pino, console), or false')
  const retentionMs = String(options.retentionMs ?? DEFAULT_RETENTION_MS)
  const scripts = {
    claim: luaScript(send, CLAIM),
    complete: luaScript(send, COMPLETE),
    release: luaScript(send, RELEASE),
    releaseFailed: luaScript(send, RELEASE_FAILED),
  }
  const timeline = redisTimeline(send, prefix, retentionMs)
  const book = redisPaymentBook(send, prefix, retentionMs)
  const lock = redisSweepLock(send, bookBase(prefix))
  // Asked once; a server that could not be reached is asked again at the next call.
  const inspect = once(() => inspectRedis(send))
  const waiter = redisLeaseEnds(options.client, send, prefix)
  // On the first claim rather than at construction: a node-redis client may not be connected yet.
  let checked = options.inspect === false

  const ownedBy = (lease: LeaseRef) => `${lease.state}:${lease.owner}`
  /** The keys and arguments of a claim or completion: its payment's, and its order's when it names one. */
  const parts = (lease: LeaseRef & OrderRef) => {
    const payment = paymentKey(prefix, lease.exchangeNumber)
    if (lease.orderNumber === undefined) return { keys: [payment], order: [] }
    const uid = lease.uid ?? ''
    return { keys: [payment, paidKey(prefix, uid, lease.orderNumber)], order: [lease.exchangeNumber, bookBase(prefix), uid, lease.orderNumber] }
  }

  return {
    ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
    async claim(request) {
      if (!checked) {
        checked = true
        if (logger !== false) void inspect().then((found) => reportDurability(found, logger))
      }
      const leaseMs = String(options.leaseMs ?? Math.max(1, Math.ceil(request.leaseMs)))
      const { keys, order } = parts(request)
      const sentAt = performance.now()
      const reply = replyTexts(await scripts.claim(keys, [request.owner, request.state, leaseMs, ...order]))
      const claim = toClaim(reply, request.orderNumber)
      // A busy reply's third element is the owner holding the lease (payment-key.ts).
      if (claim.outcome === 'busy') waiter?.foundBusy(request.exchangeNumber, sentAt, reply[2] ?? undefined)
      return claim
    },

    async paidBy(payment) {
      if (payment.orderNumber === undefined) return null
      const by = replyText(await send(['GET', paidKey(prefix, payment.uid ?? '', payment.orderNumber)]))
      return by !== null && by !== payment.exchangeNumber ? by : null
    },

    async complete(completion) {
      const { keys, order } = parts(completion)
      const book = order.length === 0 ? [] : [String(Date.now()), ...resultArgs(completion.seen)]
      return Number(await scripts.complete(keys, [ownedBy(completion), completion.state, retentionMs, ...order, ...book])) === 1
    },

    async release(lease) {
      const key = [paymentKey(prefix, lease.exchangeNumber)]
      const { failure, orderNumber } = lease
      if (failure === undefined || orderNumber === undefined) return Number(await scripts.release(key, [ownedBy(lease)])) === 1
      const book = [bookBase(prefix), lease.uid ?? '', orderNumber, lease.state, lease.exchangeNumber, String(Date.now()), failureText(failure.message)]
      return Number(await scripts.releaseFailed(key, [ownedBy(lease), ...book, ...resultArgs(failure.seen)])) === 1
    },

    ...(waiter === undefined ? {} : { awaitLeaseEnd: waiter.awaitLeaseEnd }),
    openInbox: () => redisInbox(send, prefix),
    appendTimeline: timeline.append,
    readTimeline: timeline.read,
    paymentBook: () => book,
    sweepLock: () => lock,
    inspect,
  }
}
