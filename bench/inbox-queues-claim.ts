/*
 * The two systems of bench/inbox-queues.ts that answer issue 11's actual question: an inbox BUILT on pg-boss or
 * BullMQ. The library is the queue; its job handler is a plain receiver (no inbox mode) on this package's store,
 * called with `receiver.handleTrusted(fields)`: the fields are checked and classified again (as our inbox does
 * with an entry it takes), then the store's claim, the handlers and the store's complete run exactly as for a
 * direct delivery. That claim/complete is what gives once per (exchange_number, state), no regression and, with
 * transactional: true, completion in the handlers' transaction, so any inbox on a library would still pay for
 * it; the library replaces only our enqueue/take/finish. handleTrusted rather than a hand-written
 * store.claim → handler → store.complete: it is the public path an integration would take and the same
 * dispatch our inbox worker calls, so the two differ only in the queue.
 *
 * pg-boss runs its SQL on the store's own pg Pool (its `db` option), so the pair holds BENCH_POOL connections,
 * as ours does for inbox and claims together. BullMQ keeps its own connections (it needs blocking ones);
 * the store has one ioredis connection, as ours has.
 */
import pg from 'pg'
import { ioredis } from './connect-redis.js'
import { bullmqWith, type JobData, pgBossWith, type Setup, type System, trivial, unlinkPrefix } from './inbox-queues-systems.js'

type Store = Parameters<Setup['core']['createReceiver']>[0]['store']

/** A receiver without inbox mode: its handleTrusted() is claim → handlers → complete on `store`. */
function claimingJob(setup: Setup, store: Store, name: string): (data: JobData) => Promise<void> {
  const receiver = setup.core.createReceiver({ checksumToken: setup.checksumToken, signatureOnly: true, logger: false, store, timeline: false, telemetry: false })
  receiver.on('payment.succeeded', (event) => trivial(setup, event.payment.exchangeNumber))
  return async (data) => {
    const response = await receiver.handleTrusted(data.fields as Record<string, string>)
    if (response.outcome !== 'processed') {
      // Every result is fresh, so anything else is a fault of the setup: fail the run, let the library retry.
      console.error(`!! ${name}: ${data.exchangeNumber}:${data.state} answered ${response.outcome}: ${response.body}`)
      process.exitCode = 1
      throw new Error(`${response.outcome}: ${response.body}`)
    }
  }
}

/** A system on resources of its own: `cleanup` (drop what it made) then `release` (its connection) when it closes or fails to open. */
async function owning(open: () => Promise<System>, cleanup: () => Promise<void>, release: () => Promise<void>): Promise<System> {
  let system: System
  try {
    system = await open()
  } catch (error) {
    await cleanup().finally(release)
    throw error
  }
  return {
    ...system,
    async close() {
      try {
        await system.close()
        await cleanup()
      } finally {
        await release()
      }
    },
  }
}

export async function pgBossClaim(setup: Setup): Promise<System> {
  const name = 'pg-boss 10 + claim'
  const pool = new pg.Pool({ connectionString: setup.databaseUrl, max: setup.poolMax, connectionTimeoutMillis: 5_000 })
  const table = `fpx_bench_${setup.runId}_claim`
  const dropTables = async () => {
    for (const suffix of ['', '_inbox', '_timeline']) await pool.query(`DROP TABLE IF EXISTS "${table}${suffix}"`)
  }
  const about = `; job → handleTrusted() on postgresStore (not transactional), table ${table}, same pool`
  const open = () => pgBossWith(setup, { name, suffix: '_claim', job: claimingJob(setup, setup.postgresStore({ client: pool, table }), name), pool, about })
  return owning(open, dropTables, () => pool.end())
}

export async function bullmqClaim(setup: Setup): Promise<System> {
  const name = 'BullMQ + claim'
  const client = await ioredis(setup.redisUrl)
  const prefix = `fpx-bench:${setup.runId}:claim:`
  const about = `; job → handleTrusted() on redisStore, one ioredis connection, prefix ${prefix}`
  const open = () => bullmqWith(setup, { name, suffix: '-claim', job: claimingJob(setup, setup.redisStore({ client, prefix }), name), about })
  return owning(open, () => unlinkPrefix(client, prefix), async () => void (await client.quit()))
}
