/**
 * A process that provokes every kind of line the package writes on its own, with the store of FPX_QUIET_STORE
 * (memory, postgres, pglite, redis): a signature-only receiver's warning at creation, a refused delivery, a handler
 * that throws, a state no handler listens to, a confirming receiver whose API is down (the confirmation and the
 * sweep's lookup both fail), and the client's own failures. FPX_QUIET=1 gives every part `logger: false`; without
 * it they print to the console as by default. FPX_QUIET_REDIS_LOGGER=silent gives the Redis store a logger of its
 * own that drops its lines. Run by test/receiver/quiet.test.ts, which reads what the process printed.
 */
import { PGlite } from '@electric-sql/pglite'
import { Redis } from 'ioredis'
import pg from 'pg'
import { createClient } from '../../src/client/index.js'
import { createReceiver, type FieldInput, memoryStore, type ReceiverStore } from '../../src/index.js'
import { postgresStore } from '../../src/stores/postgres/store.js'
import { redisStore } from '../../src/stores/redis/store.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { dropStoreTables, uniqueTable } from '../stores/postgres-suites.js'
import { DATABASE_URL, REDIS_URL } from '../stores/services.js'

const quiet = process.env.FPX_QUIET === '1'
const logger = quiet ? { logger: false as const } : {}
const TOKEN = 'ab'.repeat(32)
const UID = '6f1c2a4e-8b3d-4f7a-9c2e-1d5b7a9e3f10'
const DEAD_API = 'http://127.0.0.1:1/api'

const closing: (() => Promise<unknown>)[] = []
async function store(): Promise<ReceiverStore<unknown>> {
  switch (process.env.FPX_QUIET_STORE) {
    case 'postgres': {
      const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 3 })
      const table = uniqueTable('quiet')
      closing.push(async () => {
        await dropStoreTables(pool, table)
        await pool.end()
      })
      return postgresStore({ client: pool, table }) as ReceiverStore<unknown>
    }
    case 'pglite': {
      const db = new PGlite()
      closing.push(() => db.close())
      return postgresStore({ client: db, table: uniqueTable('quiet') }) as ReceiverStore<unknown>
    }
    case 'redis': {
      const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
      closing.push(() => client.quit())
      const own = process.env.FPX_QUIET_REDIS_LOGGER === 'silent' ? { logger: { warn: () => {}, debug: () => {} } } : {}
      return redisStore({ client, prefix: `fpx-quiet:${process.pid}:`, ...own }) as ReceiverStore<unknown>
    }
    default:
      return memoryStore() as ReceiverStore<unknown>
  }
}

const delivery = (fields: Record<string, FieldInput>, token = TOKEN) => {
  const signed = signCallback(fields, token)
  return { kind: 'callback' as const, body: Buffer.from(signed.body), contentType: signed.contentType }
}

// Signature only: its warning at creation, a refusal, a handler that throws, a state nobody listens to.
const shared = await store()
const alone = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store: shared, ...logger })
alone.on('payment.succeeded', () => {
  throw new Error('fulfilment down')
})
await alone.handle(delivery(samplePaymentFields(), 'cd'.repeat(32)))
await alone.handle(delivery(samplePaymentFields({ payment_status: true })))
await alone.handle(delivery(samplePaymentFields({ payment_status: false, fpx_debit_auth_code: '51' })))
await alone.close()

// Confirming, with the API down: the confirmation fails, and so does the sweep's lookup of a booked payment.
const confirming = createReceiver({ environment: { baseUrl: DEAD_API }, credentials: { uid: UID, authToken: 'A'.repeat(20), checksumToken: TOKEN }, store: shared, sweep: { inProcess: false, firstLookupAfterMs: 1 }, ...logger })
confirming.on('payment.succeeded', () => {})
await confirming.payments.record({ orderNumber: 'QUIET-1', amountSen: 10_020, uid: UID, kind: 'payment', createdAt: new Date(Date.now() - 60_000), exchangeNumber: null, attached: {} })
await confirming.handle(delivery(samplePaymentFields({ payment_status: true, uid: UID })))
await confirming.sweep()
await confirming.close()

// The client on its own: a payment the API may have created (the network failed), recorded by a book that fails.
const failingBook = { record: () => Promise.reject(new Error('book down')) }
const client = createClient({ environment: { baseUrl: DEAD_API }, uid: UID, authToken: 'A'.repeat(20), checksumToken: TOKEN, book: failingBook, maxRetries: 0, ...logger })
await client
  .createPayment({ order_number: 'QUIET-2', buyer_name: 'Nur Aisyah', buyer_email: 'a@example.com', buyer_phone: '+60123456789', transaction_amount: '1.00', product_description: 'Coffee' })
  .catch(() => {})

for (const close of closing) await close()
