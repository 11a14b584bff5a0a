import { type HeardCompletion, type LeaseEndFeed, type LeaseEndWaiter, leaseEndWaiter } from '../../contract/lease-ends.js'
import { luaScript, type RawCommand } from './client.js'
import { LEASE_HELD, paymentKey } from './payment-key.js'

/*
 * Waiting for a lease another process holds, on Redis: the completion and release scripts publish on a channel
 * named like the payment's key (payment-key.ts), and a duplicate of the merchant's client, PSUBSCRIBEd to them,
 * hears them while somebody waits (contract/lease-ends.ts). A client that cannot be duplicated (one over HTTP, such
 * as Upstash's) has no waiting: the receiver answers as it would without it.
 */

const SUFFIX = '}:handled'

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

async function subscribe(client: Duplicable, pattern: string, heard: (channel: string, message: string) => void, lost: () => void): Promise<LeaseEndFeed> {
  const ignore = () => {}
  if (typeof (client as { call?: unknown }).call === 'function') {
    const sub = client.duplicate() as IoredisSubscriber
    // Without a listener ioredis prints every connection error; a lost connection is handled by `lost`.
    sub.on('error', ignore)
    // Given up rather than left reconnecting: the next wait opens another.
    sub.on('close', () => {
      lost()
      sub.disconnect()
    })
    sub.on('pmessage', (_pattern, channel, message) => heard(channel as string, String(message)))
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
  const close = () => void (sub.destroy ? sub.destroy() : sub.disconnect?.().catch(ignore))
  // Given up rather than left reconnecting (its connect() would never settle): the next wait opens another.
  const give = () => {
    lost()
    close()
  }
  sub.on('end', give)
  sub.on('reconnecting', give)
  try {
    await sub.connect()
    await sub.pSubscribe(pattern, (message, channel) => heard(channel, String(message)))
  } catch (error) {
    close()
    throw error
  }
  return { close }
}

/** Redis's glob escapes, so that a prefix with `*`, `?`, `[` or `\` matches only itself. */
const escapeGlob = (text: string) => text.replace(/[*?[\]\\]/g, '\\$&')

/** A completion's message, `<state>:<owner>` (payment-key.ts); a release's is empty. */
function completionOf(message: string): HeardCompletion | undefined {
  const colon = message.indexOf(':')
  return colon > 0 ? { state: message.slice(0, colon), owner: message.slice(colon + 1) } : undefined
}

/**
 * The store's waiting, or undefined when the client cannot open a second connection. The pattern starts with `*`
 * so that a client's own key prefix (ioredis's keyPrefix, which the scripts' keys carry) still matches.
 */
export function redisLeaseEnds(client: unknown, send: RawCommand, prefix: string): LeaseEndWaiter | undefined {
  if (typeof (client as Partial<Duplicable> | null)?.duplicate !== 'function') return undefined
  const held = luaScript(send, LEASE_HELD)
  const marker = `${prefix}{`
  return leaseEndWaiter(
    (heard, lost) =>
      subscribe(
        client as Duplicable,
        `*${escapeGlob(marker)}*${SUFFIX}`,
        (channel, message) => {
          const start = channel.indexOf(marker)
          if (start >= 0 && channel.endsWith(SUFFIX)) heard(channel.slice(start + marker.length, -SUFFIX.length), completionOf(message))
        },
        lost,
      ),
    async (exchangeNumber) => Number(await held([paymentKey(prefix, exchangeNumber)], [])) === 1,
  )
}
