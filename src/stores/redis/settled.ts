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

/** ioredis: psubscribe() and 'pmessage' events; it reconnects and subscribes again by itself. */
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

async function subscribe(client: Duplicable, pattern: string, heard: (channel: string) => void): Promise<Subscriber> {
  const ignore = () => {}
  if (typeof (client as { call?: unknown }).call === 'function') {
    const sub = client.duplicate() as IoredisSubscriber
    // Errors meanwhile only make a wait last until its time-out; ioredis reconnects by itself.
    sub.on('error', ignore)
    sub.on('pmessage', (_pattern, channel) => heard(channel as string))
    await sub.psubscribe(pattern)
    return { close: () => sub.disconnect() }
  }
  const sub = client.duplicate() as NodeRedisSubscriber
  // node-redis throws an 'error' event nobody listens to.
  sub.on('error', ignore)
  await sub.connect()
  await sub.pSubscribe(pattern, (_message, channel) => heard(channel))
  return { close: () => void (sub.destroy ? sub.destroy() : sub.disconnect?.().catch(ignore)) }
}

/** Redis's glob escapes, so that a prefix with `*`, `?`, `[` or `\` matches only itself. */
const escapeGlob = (text: string) => text.replace(/[*?[\]\\]/g, '\\$&')

/**
 * The store's `awaitLeaseEnd`, or undefined when the client cannot open a second connection. The pattern starts with
 * `*` so that a client's own key prefix (ioredis's keyPrefix, which the scripts' keys carry) still matches.
 */
export function leaseEndWaiter(client: unknown, send: RawCommand, prefix: string): ((exchangeNumber: string, timeoutMs: number) => Promise<void>) | undefined {
  if (typeof (client as Partial<Duplicable> | null)?.duplicate !== 'function') return undefined
  const held = luaScript(send, LEASE_HELD)
  const marker = `${prefix}{`
  const waiting = new Map<string, Set<() => void>>()
  let subscriber: Promise<Subscriber> | undefined
  let idle: ReturnType<typeof setTimeout> | undefined

  const heard = (channel: string) => {
    const start = channel.indexOf(marker)
    if (start < 0 || !channel.endsWith(SUFFIX)) return
    for (const done of waiting.get(channel.slice(start + marker.length, -SUFFIX.length)) ?? []) done()
  }
  const close = () => {
    const current = subscriber
    subscriber = undefined
    void current?.then((sub) => sub.close(), () => undefined)
  }

  return async (exchangeNumber, timeoutMs) => {
    clearTimeout(idle)
    let ended = false
    let done = () => {}
    const over = new Promise<void>((resolve) => (done = () => resolve(void (ended = true))))
    const timer = setTimeout(done, timeoutMs)
    const waiters = waiting.get(exchangeNumber) ?? new Set()
    waiters.add(done)
    waiting.set(exchangeNumber, waiters)
    try {
      if (subscriber === undefined) {
        const opening = subscribe(client as Duplicable, `*${escapeGlob(marker)}*${SUFFIX}`, heard)
        subscriber = opening
        // A failed connection is forgotten, so that the next wait tries again.
        opening.catch(() => subscriber === opening && (subscriber = undefined))
      }
      await Promise.race([subscriber, over])
      if (ended) return
      // Subscribed and listening: an end from now on is heard; one that came before shows here.
      if (Number(await held([paymentKey(prefix, exchangeNumber)], [])) !== 1) return
      await over
    } catch {
      // No subscriber, or the check failed: the delivery claims again now and hears from the store what holds.
    } finally {
      clearTimeout(timer)
      waiters.delete(done)
      if (waiters.size === 0) waiting.delete(exchangeNumber)
      if (waiting.size === 0) {
        idle = setTimeout(close, IDLE_CLOSE_MS)
        ;(idle as { unref?: () => void }).unref?.()
      }
    }
  }
}
