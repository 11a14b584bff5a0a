/**
 * A payment book write lost in an outage, for an order the book holds from an earlier creation with another
 * amount: the new creation's genuine result is refused (result_mismatch: the book cannot tell it from a payment
 * created outside the checkout), the client's log says so and how to let it through, and recording the payment by
 * hand lets the sweeper handle it. Real emulator, real PostgreSQL; the web process's connection is ended by the
 * server (a failover, a restart), so its writes fail.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createClient } from '../../src/client/index.js'
import { createReceiver, type PaymentEvent } from '../../src/index.js'
import { postgresStore } from '../../src/stores/postgres/store.js'
import { DEMO, type Emulator, launch, memoryLogger, paymentInput } from '../client/helpers.js'
import { dropStoreTables, uniqueTable } from '../stores/postgres-suites.js'
import { DATABASE_URL, serviceAvailable } from '../stores/services.js'
import { type CallbackCapture, captureCallbacks } from './callback-capture.js'

const available = await serviceAvailable('PostgreSQL', DATABASE_URL)

describe.skipIf(!available)('a book write lost in an outage', () => {
  let emulator: Emulator
  let capture: CallbackCapture
  const table = uniqueTable('book_outage')
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 2 })
  beforeAll(async () => {
    capture = await captureCallbacks()
    emulator = await launch({ delivery: { attempts: 1, initialDelayMs: 1, maxDelayMs: 1, timeoutMs: 2000 } })
  })
  afterAll(async () => {
    await emulator.stop()
    await capture.close()
    await dropStoreTables(pool, table)
    await pool.end()
  })

  it("is logged with the way out, and the re-created order's result is handled once the payment is recorded", async () => {
    const receiver = createReceiver({ environment: { baseUrl: emulator.baseUrl }, credentials: DEMO, store: postgresStore({ client: pool, table }), logger: false, sweep: { inProcess: false, firstLookupAfterMs: 1 } })
    const events: PaymentEvent<unknown>[] = []
    receiver.on('payment.succeeded', (event) => void events.push(event))
    const web = new pg.Client({ connectionString: DATABASE_URL })
    web.on('error', () => {})
    await web.connect()
    const { lines, logger } = memoryLogger()
    const client = createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO, book: postgresStore({ client: web, table }), logger })
    try {
      const input = paymentInput({ transaction_amount: '10.00', callback_url: capture.url })
      await client.createPayment(input)
      const { pid } = (await web.query('SELECT pg_backend_pid() AS pid')).rows[0] as { pid: number }
      await pool.query('SELECT pg_terminate_backend($1)', [pid])
      // The cart total changed: the same order created again (the service takes a reused order_number).
      const again = await client.createPayment({ ...input, transaction_amount: '12.00' })
      const logged = lines.filter((line) => line.includes('could not record'))
      expect(logged).toHaveLength(1)
      expect(logged[0]).toContain('receiver.payments.record')
      await emulator.complete(again.exchangeNumber as string, 'approve')
      const [body] = await capture.bodies(again.exchangeNumber as string, 1)
      const answer = await receiver.handle({ kind: 'callback', body: body as string, contentType: 'application/x-www-form-urlencoded' })
      expect(answer).toMatchObject({ status: 400, error: { code: 'result_mismatch' } })
      expect(events).toEqual([])
      // What the log says to do, then the sweeper's pass.
      await receiver.payments.record({ orderNumber: input.order_number, amountSen: 1200, uid: DEMO.uid, kind: 'payment', createdAt: new Date(), exchangeNumber: again.exchangeNumber ?? null, attached: {} })
      await receiver.sweep()
      expect(events.map((event) => event.id)).toEqual([`${again.exchangeNumber}:succeeded`])
    } finally {
      await receiver.close()
      await web.end().catch(() => {})
    }
  })
})
