import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type FpxClient, reconcile } from '../../src/client/index.js'
import { createReceiver, type PaymentEvent } from '../../src/receiver/receiver.js'
import { postgresStore } from '../../src/stores/postgres/store.js'
import { demoClient, DEMO, type Emulator, launch, paymentInput } from '../client/helpers.js'
import { faultyProxy } from '../client/proxy.js'
import { settled } from '../emulator/delivery-merchant.js'
import { dropStoreTables, uniqueTable } from '../stores/postgres-suites.js'
import { DATABASE_URL, serviceAvailable } from '../stores/services.js'
import { eventually } from './suite.js'

const available = await serviceAvailable('PostgreSQL', DATABASE_URL)

describe.skipIf(!available)('reconciliation feeds the inbox', () => {
  let emulator: Emulator
  let client: FpxClient
  let refusingUrl: string
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 4 })
  const table = uniqueTable('inbox_reconcile')
  beforeAll(async () => {
    emulator = await launch({ delivery: { attempts: 1, initialDelayMs: 1, maxDelayMs: 1, timeoutMs: 2000 } })
    client = demoClient(emulator)
    // A port that was just closed: the callback's connection is refused, and with one attempt it is given up.
    const closed = await faultyProxy(emulator.url, 0, 500)
    await closed.close()
    refusingUrl = closed.baseUrl.replace('/api', '/fpx/callback')
  })
  afterAll(async () => {
    await emulator.stop()
    await dropStoreTables(pool, table)
    await pool.end()
  })

  it('queues a result whose callback was lost; the workers run it once, and a second run adds nothing', async () => {
    const { exchangeNumber } = await client.createPayment(paymentInput({ callback_url: refusingUrl }))
    await emulator.complete(exchangeNumber as string, 'approve')
    expect((await settled(emulator, exchangeNumber as string))[0]).toMatchObject({ state: 'failed' })

    const receiver = createReceiver({ client, checksumToken: DEMO.checksumToken, store: postgresStore({ client: pool, table }), inbox: { pollMs: 50 } })
    const handled: PaymentEvent[] = []
    receiver.on('payment.succeeded', (event) => void handled.push(event))
    try {
      const first = await reconcile({ client, receiver, from: new Date(), to: new Date() })
      expect(first).toMatchObject({ examined: 1, queued: 1, processed: 0, problems: [] })
      expect(await eventually(() => handled.length === 1)).toBe(true)
      expect(handled[0]).toMatchObject({ delivery: 'reconcile', payment: { exchangeNumber, paid: true } })

      const second = await reconcile({ client, receiver, from: new Date(), to: new Date() })
      expect(second).toMatchObject({ examined: 1, queued: 1, problems: [] })
      // Queued again, found a duplicate by the worker: the entry goes, the handler does not run again.
      expect(await eventually(async () => (await receiver.inbox.counts()).pending === 0)).toBe(true)
      expect(handled).toHaveLength(1)
    } finally {
      await receiver.inbox.stop()
    }
  })
})
