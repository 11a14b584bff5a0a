/**
 * Inbox mode with the README's receiver (`{ environment, credentials }`): an entry read back from the store has no
 * matched credential set, and is confirmed with the set its uid names; and a renamed copy queued first never holds
 * the genuine result back (issue 34, point 3), on Redis and on PostgreSQL (transactional).
 */
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createReceiver, type PaymentEvent, type ReceiverStore } from '../../src/index.js'
import { postgresStore } from '../../src/stores/postgres/store.js'
import { redisStore } from '../../src/stores/redis/store.js'
import { formBody, indexOf, renamed } from '../receiver/rearrange.js'
import { DEMO, delivery, type Service, service } from '../security/genuine.js'
import { dropStoreTables, uniqueTable } from '../stores/postgres-suites.js'
import { DATABASE_URL, REDIS_URL, serviceAvailable } from '../stores/services.js'
import { eventually } from './suite.js'

const available = (await serviceAvailable('Redis', REDIS_URL)) && (await serviceAvailable('PostgreSQL', DATABASE_URL))

describe.skipIf(!available)('inbox mode, confirmed over the API', () => {
  let svc: Service
  const redis = new Redis(REDIS_URL)
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 6 })
  const prefix = `fpx-inbox-confirmed:${randomUUID()}:`
  const tables: string[] = []
  beforeAll(async () => {
    svc = await service()
  })
  afterAll(async () => {
    await svc.stop()
    for (const table of tables) await dropStoreTables(pool, table)
    const keys = await redis.keys(`${prefix}*`)
    if (keys.length > 0) await redis.del(...keys)
    await Promise.all([pool.end(), redis.quit()])
  })

  const stores: [string, () => ReceiverStore<unknown>][] = [
    ['Redis', () => redisStore({ client: redis, prefix: `${prefix}${randomUUID()}:` }) as ReceiverStore<unknown>],
    [
      'PostgreSQL, transactional',
      () => {
        const table = uniqueTable('inbox_confirmed')
        tables.push(table)
        return postgresStore({ client: pool, table, transactional: true }) as ReceiverStore<unknown>
      },
    ],
  ]

  function receiverOn(store: ReceiverStore<unknown>) {
    const receiver = createReceiver({ environment: svc.environment, credentials: DEMO, store, logger: false, inbox: { pollMs: 20, backoff: { baseMs: 50, maxMs: 200 } } })
    const events: PaymentEvent<unknown>[] = []
    receiver.onAny((event) => void events.push(event))
    return { receiver, events }
  }

  describe.each(stores)('%s', (_name, makeStore) => {
    it('runs the handler of a genuine result from the inbox, with the API record', async () => {
      const { receiver, events } = receiverOn(makeStore())
      try {
        const genuine = await svc.pay('approve')
        expect((await receiver.handle(delivery(genuine.body, 'body'))).outcome).toBe('queued')
        expect(await eventually(() => events.length === 1)).toBe(true)
        expect(events[0]).toMatchObject({ confirmed: true, state: 'succeeded', payment: { exchangeNumber: genuine.exchangeNumber, orderNumber: genuine.orderNumber } })
        expect(await eventually(async () => (await receiver.inbox.counts()).pending === 0)).toBe(true)
      } finally {
        await receiver.close()
      }
    })

    it('keeps who signed a result: an order paid through the inbox stays paid for an attempt handled at once', async () => {
      const store = makeStore()
      const { receiver, events } = receiverOn(store)
      // The same store without inbox mode: results are handled at once, as when the API answers.
      const direct = createReceiver({ environment: svc.environment, credentials: DEMO, store, logger: false })
      const directEvents: PaymentEvent<unknown>[] = []
      direct.onAny((event) => void directEvents.push(event))
      try {
        const paid = await svc.pay('approve')
        expect((await receiver.handle(delivery(paid.body, 'body'))).outcome).toBe('queued')
        expect(await eventually(() => events.length === 1)).toBe(true)
        expect(events[0]).toMatchObject({ state: 'succeeded', credential: { uid: DEMO.uid, by: 'uid' } })
        // The buyer's second attempt on the paid order fails at the bank: the order stays paid, no handler runs.
        const failed = await svc.pay('cancel', { order_number: paid.orderNumber })
        expect(await direct.handle(delivery(failed.body, 'body'))).toMatchObject({ status: 200, outcome: 'stale' })
        expect(directEvents).toEqual([])
        // And the other way round: paid at once, a failed attempt read back from the inbox runs no handler either.
        const paidAtOnce = await svc.pay('approve')
        expect((await direct.handle(delivery(paidAtOnce.body, 'body'))).outcome).toBe('processed')
        const failedLater = await svc.pay('cancel', { order_number: paidAtOnce.orderNumber })
        expect((await receiver.handle(delivery(failedLater.body, 'body'))).outcome).toBe('queued')
        expect(await eventually(async () => (await receiver.inbox.counts()).pending === 0)).toBe(true)
        expect(events.map((event) => event.state)).toEqual(['succeeded'])
      } finally {
        await Promise.all([receiver.close(), direct.close()])
      }
    })

    it('a renamed copy of a B2B1 99 that reads as failed, queued first, does not hold the genuine 99 back', async () => {
      const { receiver, events } = receiverOn(makeStore())
      try {
        const genuine = await svc.pay('pending', { model: 'B2B1' })
        const copy = formBody(renamed(genuine.pairs, new Map([[indexOf(genuine.pairs, 'fpx_debit_auth_code'), 'fpx_debit_auth_codez']]))!, genuine.checksum)
        expect((await receiver.handle(delivery(copy, 'body'))).outcome).toBe('queued')
        expect((await receiver.handle(delivery(genuine.body, 'body'))).outcome).toBe('queued')
        expect(await eventually(() => events.length === 1)).toBe(true)
        expect(events.map((event) => event.state)).toEqual(['pending'])
        // Then the approval: the success follows the pending state, once.
        const approved = await svc.approve(genuine)
        expect((await receiver.handle(delivery(approved.body, 'body'))).outcome).toBe('queued')
        expect(await eventually(() => events.length === 2)).toBe(true)
        expect(events.map((event) => event.state)).toEqual(['pending', 'succeeded'])
      } finally {
        await receiver.close()
      }
    })
  })
})
