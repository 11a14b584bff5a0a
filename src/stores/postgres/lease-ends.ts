import { type LeaseEndWaiter, leaseEndWaiter } from '../../contract/lease-ends.js'
import { LEASE_ENDS_CHANNEL } from './claims.js'
import { isPool, type PoolConnectionLike, type PostgresQueryable, type Query } from './client.js'

/*
 * Waiting for a lease another process holds, on PostgreSQL: completions and releases notify LEASE_ENDS_CHANNEL
 * (claims.ts), and one connection taken from the pool LISTENs while somebody waits. It is given back destroyed, so
 * that no pooled connection keeps listening. Only with a pg Pool: a lone Client has no connection to spare, and
 * PGlite is one process, where the receiver waits for its own deliveries anyway.
 */

/** A pool connection that can LISTEN: pg's PoolClient emits 'notification', 'error' and 'end'. */
interface ListeningConnection extends PoolConnectionLike {
  on(event: 'notification', listener: (message: { channel: string; payload?: string }) => void): unknown
  on(event: 'error' | 'end', listener: () => void): unknown
}

export function postgresLeaseEnds(client: PostgresQueryable, table: string, query: Query, leaseHeld: string): LeaseEndWaiter | undefined {
  // The feed holds one of the pool's connections while somebody waits: a pool of one has none to spare.
  if (!isPool(client) || ((client as { options?: { max?: number } }).options?.max ?? 10) < 2) return undefined
  const pool = client
  return leaseEndWaiter(
    async (heard, lost) => {
      const connection = (await pool.connect()) as ListeningConnection
      connection.on('notification', ({ channel, payload }) => {
        if (channel !== LEASE_ENDS_CHANNEL || payload === undefined) return
        // Any session may NOTIFY this channel: anything but our own JSON is ignored, never thrown.
        let message: { t?: unknown; x?: unknown; o?: unknown; s?: unknown } | null
        try {
          message = JSON.parse(payload) as typeof message
        } catch {
          return
        }
        if (message?.t !== table || typeof message.x !== 'string') return
        // A completion names the owner whose lease it ended and the state it recorded (claims.ts).
        const { o: owner, s: state } = message
        heard(message.x, typeof owner === 'string' && typeof state === 'string' ? { owner, state } : undefined)
      })
      connection.on('error', lost)
      connection.on('end', lost)
      try {
        await connection.query(`LISTEN ${LEASE_ENDS_CHANNEL}`)
      } catch (error) {
        connection.release(true)
        throw error
      }
      return { close: () => connection.release(true) }
    },
    async (exchangeNumber) => (await query(leaseHeld, [exchangeNumber])).length > 0,
  )
}
