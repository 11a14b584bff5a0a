import { PAYMENT_STATES, type PaymentState } from '../../core/payment.js'
import { luaScript, type RawCommand } from './client.js'
import { LEASE_HELD, paymentKey } from './payment-key.js'

/*
 * Waiting for a lease another process holds to end, without asking Redis again and again: the completion and release
 * scripts publish on a channel named like the payment's key (payment-key.ts), and one subscriber connection per store
 * hears them. That connection is a duplicate of the merchant's client, opened when a delivery first waits and closed
 * a second after the last wait, so an idle process holds no extra connection and can exit. A client that cannot be
 * duplicated (one over HTTP, such as Upstash's) has no waiting: the receiver answers as it would without it.
 */

/** Seconds are plenty: the subscriber is kept for a burst, not for the life of the process. */
const IDLE_CLOSE_MS = 1000
const SUFFIX = '}:handled'

interface Subscriber {
  close(): void
}

interface Duplicable {
  duplicate(): unknown
}

/** ioredis: psubscribe() and 'pmessage' events. */
interface IoredisSubscriber {
  on(event: string, listener: (...args: string[]) => void): unknown
  psubscribe(pattern: string): Promise<unknown>
  disconnect(): void
}

/** node-redis v4+: connect(), then pSubscribe() with a listener; disconnect() (v4) or destroy() (v5) closes it. */
interface NodeRedisSubscriber {
  on(event: string, listener: (...args: unknown[]) => void): unknown
  connect(): Promise<unknown>
  pSubscribe(pattern: string, listener: (message: string, channel: string) => void): Promise<unknown>
  destroy?(): void
  disconnect?(): Promise<unknown>
}

/**
 * Opens the subscriber. `lost` is called when its connection closes or starts reconnecting: what was published
 * meanwhile is not heard, so the waiting stops trusting it (a wait then lasts until its time-out at worst).
 */
async function subscribe(client: Duplicable, pattern: string, heard: (channel: string, message: string) => void, lost: () => void): Promise<Subscriber> {
  const ignore = () => {}
  if (typeof (client as { call?: unknown }).call === 'function') {
    const sub = client.duplicate() as IoredisSubscriber
    // Without a listener ioredis prints every connection error; a lost connection is handled below.
    sub.on('error', ignore)
    sub.on('close', lost)
    sub.on('pmessage', (_pattern, channel, message) => heard(channel as string, message as string))
    try {
      await sub.psubscribe(pattern)
    } catch (error) {
      sub.disconnect()
      throw error
    }
    return { close: () => sub.disconnect() }
  }
  const sub = client.duplicate() as NodeRedisSubscriber
  // node-redis throws an 'error' event nobody listens to.
  sub.on('error', ignore)
  sub.on('end', lost)
  sub.on('reconnecting', lost)
  const close = () => void (sub.destroy ? sub.destroy() : sub.disconnect?.().catch(ignore))
  try {
    await sub.connect()
    await sub.pSubscribe(pattern, (message, channel) => heard(channel, message))
  } catch (error) {
    close()
    throw error
  }
  return { close }
}

/** Redis's glob escapes, so that a prefix with `*`, `?`, `[` or `\` matches only itself. */
const escapeGlob = (text: string) => text.replace(/[*?[\]\\]/g, '\\$&')

/** What a waiter learns: the state the holder completed, or undefined (released, expired, timed out, unknown). */
type Ended = PaymentState | undefined

/** How long what was heard is kept, for a waiter whose claim's answer came after the end's message. */
const HEARD_KEPT_MS = 2000
/** After a subscriber failed to open (no server, PSUBSCRIBE refused), waits answer at once for this long. */
const RETRY_SUBSCRIBE_AFTER_MS = 30_000

export interface LeaseEndWaiter {
  /** Called by the store's claim when its answer was busy, with when that claim was sent. */
  foundBusy(exchangeNumber: string, sentAt: number): void
  awaitLeaseEnd(exchangeNumber: string, timeoutMs: number): Promise<Ended>
}

/**
 * The store's waiting, or undefined when the client cannot open a second connection. The pattern starts with `*`
 * so that a client's own key prefix (ioredis's keyPrefix, which the scripts' keys carry) still matches.
 */
export function leaseEndWaiter(client: unknown, send: RawCommand, prefix: string): LeaseEndWaiter | undefined {
  if (typeof (client as Partial<Duplicable> | null)?.duplicate !== 'function') return undefined
  const held = luaScript(send, LEASE_HELD)
  const marker = `${prefix}{`
  const waiting = new Map<string, Set<(state: Ended) => void>>()
  // When each busy claim was sent, and what was heard when: both kept briefly, oldest first.
  const busySince = new Map<string, number>()
  const heardAt = new Map<string, { at: number; state: Ended }>()
  let subscriber: Promise<Subscriber> | undefined
  let listeningSince: number | undefined
  let failedAt = Number.NEGATIVE_INFINITY
  let idle: ReturnType<typeof setTimeout> | undefined

  const keep = <T>(map: Map<string, T>, key: string, value: T, at: (value: T) => number) => {
    map.delete(key)
    map.set(key, value)
    for (const [oldest, kept] of map) {
      if (at(kept) > performance.now() - HEARD_KEPT_MS) break
      map.delete(oldest)
    }
  }
  const heard = (channel: string, message: string) => {
    const start = channel.indexOf(marker)
    if (start < 0 || !channel.endsWith(SUFFIX)) return
    const exchangeNumber = channel.slice(start + marker.length, -SUFFIX.length)
    const state = PAYMENT_STATES.includes(message as PaymentState) ? (message as PaymentState) : undefined
    keep(heardAt, exchangeNumber, { at: performance.now(), state }, (value) => value.at)
    for (const done of waiting.get(exchangeNumber) ?? []) done(state)
  }
  const close = () => {
    const current = subscriber
    subscriber = undefined
    listeningSince = undefined
    void current?.then((sub) => sub.close(), () => undefined)
  }
  const listen = () => {
    if (subscriber !== undefined) return subscriber
    if (performance.now() - failedAt < RETRY_SUBSCRIBE_AFTER_MS) return Promise.reject(new Error('the subscriber failed to open a moment ago'))
    const lost = () => {
      if (subscriber === opening) close()
    }
    const opening = subscribe(client as Duplicable, `*${escapeGlob(marker)}*${SUFFIX}`, heard, lost)
    subscriber = opening
    opening.then(
      () => subscriber === opening && (listeningSince = performance.now()),
      // A failed connection is forgotten, so that a wait after RETRY_SUBSCRIBE_AFTER_MS tries again.
      () => {
        failedAt = performance.now()
        if (subscriber === opening) subscriber = undefined
      },
    )
    return opening
  }

  return {
    foundBusy: (exchangeNumber, sentAt) => keep(busySince, exchangeNumber, sentAt, (at) => at),

    async awaitLeaseEnd(exchangeNumber, timeoutMs) {
      clearTimeout(idle)
      const askedAt = busySince.get(exchangeNumber)
      busySince.delete(exchangeNumber)
      let ended = false
      let done: (state: Ended) => void = () => {}
      const over = new Promise<Ended>((resolve) => {
        done = (state) => {
          ended = true
          resolve(state)
        }
      })
      const timer = setTimeout(() => done(undefined), timeoutMs)
      const waiters = waiting.get(exchangeNumber) ?? new Set()
      waiters.add(done)
      waiting.set(exchangeNumber, waiters)
      try {
        if (listeningSince !== undefined && askedAt !== undefined && listeningSince <= askedAt) {
          // Listening before the busy claim was sent: its end is heard, maybe already, before this wait began.
          const before = heardAt.get(exchangeNumber)
          if (before !== undefined && before.at >= askedAt) return before.state
          return await over
        }
        const ready = listen()
        await Promise.race([ready, over])
        if (ended) return undefined
        // Listening now: an end from now on is heard; one that came before shows here.
        if (Number(await held([paymentKey(prefix, exchangeNumber)], [])) !== 1) return undefined
        return await over
      } catch {
        // No subscriber, or the check failed: the delivery claims again now and hears from the store what holds.
        return undefined
      } finally {
        clearTimeout(timer)
        waiters.delete(done)
        if (waiters.size === 0) waiting.delete(exchangeNumber)
        if (waiting.size === 0) {
          idle = setTimeout(close, IDLE_CLOSE_MS)
          ;(idle as { unref?: () => void }).unref?.()
        }
      }
    },
  }
}
