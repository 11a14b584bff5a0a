/**
 * A worker process for the SIGKILL test (kill.test.ts): runs inbox workers on the store named in KILL_WORKER,
 * writes its handler's effect (in the claim's transaction with PostgreSQL), tells the parent it is inside the
 * handler, and waits there until it is killed.
 */
import pg from 'pg'
import { Redis } from 'ioredis'
import { createReceiver, type ReceiverStore } from '../../src/index.js'
import { postgresStore } from '../../src/stores/postgres/store.js'
import { redisStore } from '../../src/stores/redis/store.js'

interface Settings {
  kind: 'postgres' | 'redis'
  url: string
  table: string
  ledger: string
  prefix: string
  leaseMs: number
  token: string
}
const settings = JSON.parse(process.env.KILL_WORKER ?? 'null') as Settings
if (settings === null) throw new Error('started by test/inbox/kill.test.ts')

let store: ReceiverStore<pg.PoolClient | undefined>
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test', max: 3 })
if (settings.kind === 'postgres') store = postgresStore({ client: pool, table: settings.table, transactional: true })
else store = redisStore({ client: new Redis(settings.url), prefix: settings.prefix }) as ReceiverStore<undefined>

const receiver = createReceiver<pg.PoolClient | undefined>({ signatureOnly: true, checksumToken: settings.token, store, leaseMs: settings.leaseMs, inbox: { work: false } })
receiver.on('payment.succeeded', async (event) => {
  const db = event.transaction ?? pool
  await db.query(`INSERT INTO "${settings.ledger}" (id, pid) VALUES ($1, $2)`, [event.id, process.pid])
  process.send?.({ type: 'in-handler', pid: process.pid })
  await new Promise(() => {})
})
// A worker process as docs/inbox.md describes it: it takes no deliveries, so it starts its worker itself.
receiver.inbox.work({ pollMs: 50 })
process.send?.({ type: 'ready' })
process.on('disconnect', () => process.exit(0))
