import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { createClient } from 'redis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createReceiver, type Receiver, type ReceiverResponse, type ReceiverStore, type TimelineEntry } from '../../src/index.js'
import { type RedisClientLike, redisStore } from '../../src/stores/redis/store.js'
import { rawCommand } from '../../src/stores/redis/client.js'
import { redisInbox } from '../../src/stores/redis/inbox.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { storeContract } from './contract.js'
import { Gate } from './gate.js'
import { REDIS_URL, serviceAvailable } from './services.js'
import { completedState } from '../../src/contract/lease-ends.js'

const available = await serviceAvailable('Redis', REDIS_URL)
// Unique per run, so parallel runs on one Redis never see each other's keys; deleted at the end.
const RUN_PREFIX = `fpx-test:${randomUUID()}:`
const TOKEN = 'ab'.repeat(32)
const DAY_MS = 24 * 60 * 60 * 1000
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface Connection {
  client: RedisClientLike
  close(): Promise<void>
}

const CLIENTS = {
  ioredis: async (): Promise<Connection> => {
    const client = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 })
    await client.connect()
    return { client, close: async () => void (await client.quit()) }
  },
  'node-redis': async (): Promise<Connection> => {
    const client = createClient({ url: REDIS_URL })
    // node-redis throws on an 'error' event nobody listens to; a failing command still rejects in the test.
    client.on('error', () => {})
    await client.connect()
    return { client, close: () => client.close() }
  },
} as const

describe('redisStore options', () => {
  it('waits for a lease only with a client that can open a second connection', () => {
    expect(redisStore({ client: { call: async () => null } }).awaitLeaseEnd).toBeUndefined()
    expect(redisStore({ client: { sendCommand: async () => null } }).awaitLeaseEnd).toBeUndefined()
    expect(redisStore({ client: { call: async () => null, duplicate: () => null } as RedisClientLike }).awaitLeaseEnd).toBeTypeOf('function')
  })

  it('refuses a client it cannot drive and invalid durations', () => {
    expect(() => redisStore({ client: {} as RedisClientLike })).toThrow(/ioredis .*node-redis/)
    const client = { call: async () => null }
    expect(() => redisStore({ client, leaseMs: 0 })).toThrow(/leaseMs/)
    expect(() => redisStore({ client, retentionMs: 1.5 })).toThrow(/retentionMs/)
  })
})

describe.skipIf(!available)('Redis store', () => {
  let admin: Redis
  beforeAll(async () => {
    admin = new Redis(REDIS_URL, { lazyConnect: true })
    await admin.connect()
  })
  afterAll(async () => {
    const leftovers = await keysMatching(`${RUN_PREFIX}*`)
    if (leftovers.length > 0) await admin.del(...leftovers)
    await admin.quit()
  })

  async function keysMatching(pattern: string): Promise<string[]> {
    const found: string[] = []
    let cursor = '0'
    do {
      const [next, keys] = await admin.scan(cursor, 'MATCH', pattern, 'COUNT', 1000)
      found.push(...keys)
      cursor = next
    } while (cursor !== '0')
    return found.sort()
  }

  for (const [name, connect] of Object.entries(CLIENTS)) {
    storeContract({
      name: `redis via ${name}`,
      shared: true,
      open: async (options) => {
        const connection = await connect()
        const prefix = `${RUN_PREFIX}${name}:contract:`
        return {
          store: redisStore({ client: connection.client, prefix, ...options }),
          close: connection.close,
          keptTimeline: (kind, value) => admin.llen(`${prefix}timeline:${kind}:${value}`),
        }
      },
    })

    describe(`redis via ${name}`, () => {
      let connection: Connection
      beforeAll(async () => {
        connection = await connect()
      })
      afterAll(async () => {
        await connection.close()
      })
      const exchange = () => `EX-${randomUUID()}`
      const lease = (exchangeNumber: string, owner = randomUUID()) => ({ exchangeNumber, state: 'succeeded' as const, owner })
      /** A store under a prefix of its own, a fresh exchange_number, and the key the store keeps it under. */
      const onePayment = (label: string, options: { retentionMs?: number } = {}) => {
        const prefix = `${RUN_PREFIX}${name}:${label}:`
        const ex = exchange()
        return { prefix, ex, key: `${prefix}{${ex}}:handled`, store: redisStore({ client: connection.client, prefix, ...options }) }
      }

      it('hastens every failed inbox entry a batch at a time, past more busy-deferred entries than a batch', async () => {
        const prefix = `${RUN_PREFIX}${name}:hasten:`
        const queue = redisInbox(rawCommand(connection.client), prefix, 2)
        const entry = (exchangeNumber: string) =>
          ({ exchangeNumber, state: 'succeeded', source: 'callback', orderNumber: null, fields: '{}', rendering: 'plain' }) as const
        const busy = Array.from({ length: 5 }, exchange)
        const failed = Array.from({ length: 3 }, exchange)
        for (const ex of [...busy, ...failed]) expect(await queue.enqueue(entry(ex))).toBe('queued')
        for (const taken of await queue.take('test', 100, 60_000)) {
          // Busy-deferred entries come due first, so every batch before the failed ones holds none of them.
          const isBusy = busy.includes(taken.exchangeNumber)
          await queue.fail(taken, { error: 'x', delayMs: isBusy ? 30_000 : 60_000, dead: false, refund: isBusy })
        }
        expect(await queue.hasten()).toBe(3)
        for (const ex of failed) expect((await queue.show(ex))[0]?.nextAttemptAt?.getTime()).toBeLessThanOrEqual(Date.now() + 1000)
        for (const ex of busy) expect((await queue.show(ex))[0]?.nextAttemptAt?.getTime()).toBeGreaterThan(Date.now() + 20_000)
      })

      it('keeps one key per payment under the prefix: the lease, then the states handled and who completed last', async () => {
        const { ex, key, store } = onePayment('keys')
        const held = lease(ex)
        expect((await store.claim({ ...held, leaseMs: 30_000 })).outcome).toBe('claimed')
        expect(await keysMatching(`*${ex}*`)).toEqual([key])
        expect(await admin.get(key)).toBe(`0:L::succeeded:${held.owner}`)
        expect(await store.complete(held)).toBe(true)
        expect(await keysMatching(`*${ex}*`)).toEqual([key])
        expect(await admin.get(key)).toBe(`4:D::succeeded:${held.owner}`)
        // Neither a duplicate nor a regression writes anything.
        expect((await store.claim({ ...lease(ex), leaseMs: 30_000 })).outcome).toBe('duplicate')
        expect((await store.claim({ ...lease(ex), state: 'pending', leaseMs: 30_000 })).outcome).toBe('stale')
        expect(await admin.get(key)).toBe(`4:D::succeeded:${held.owner}`)
      })

      it('keeps completed states for retentionMs (30 days by default) and holds leases for leaseMs', async () => {
        const prefix = `${RUN_PREFIX}${name}:ttl:`
        for (const [retentionMs, expected] of [[undefined, 30 * DAY_MS], [3_600_000, 3_600_000]] as const) {
          const store = redisStore({ client: connection.client, prefix, retentionMs })
          const held = lease(exchange())
          await store.claim({ ...held, leaseMs: 30_000 })
          const [leaseKey] = await keysMatching(`${prefix}*${held.exchangeNumber}*`)
          const leasePttl = await admin.pttl(leaseKey!)
          expect(leasePttl).toBeGreaterThan(0)
          expect(leasePttl).toBeLessThanOrEqual(30_000)
          expect(await store.complete(held)).toBe(true)
          const handledKey = (await keysMatching(`${prefix}*${held.exchangeNumber}*`)).find((key) => key.endsWith(':handled'))
          const pttl = await admin.pttl(handledKey!)
          expect(pttl).toBeGreaterThan(0)
          expect(pttl).toBeLessThanOrEqual(expected)
        }
      })

      it("lets the store's leaseMs override the receiver's, and tells busy claims the lease's remaining time", async () => {
        const store = redisStore({ client: connection.client, prefix: `${RUN_PREFIX}${name}:lease:`, leaseMs: 5_000 })
        const ex = exchange()
        const held = lease(ex)
        expect((await store.claim({ ...held, leaseMs: 600_000 })).outcome).toBe('claimed')
        const other = await store.claim({ ...lease(ex), leaseMs: 600_000 })
        expect(other.outcome).toBe('busy')
        if (other.outcome === 'busy') {
          expect(other.retryAfterMs).toBeGreaterThan(0)
          expect(other.retryAfterMs).toBeLessThanOrEqual(5_000)
        }
        expect(await store.release(held)).toBe(true)
      })

      describe('awaitLeaseEnd: a delivery waits for the holder without asking again and again', () => {
        const LONG = 60_000
        const ended = (waiting: Promise<unknown>) => Promise.race([waiting.then(() => 'ended'), sleep(10_000).then(() => 'still waiting')])
        const pairOfStores = (label: string) => {
          const prefix = `${RUN_PREFIX}${name}:wait-${label}:`
          return [redisStore({ client: connection.client, prefix }), redisStore({ client: connection.client, prefix })] as const
        }

        it('ends the wait when the holder completes, and when it releases', async () => {
          const [holder, waiter] = pairOfStores('ends')
          // Twice each: the first wait opens the subscriber; the second finds it listening before its claim was sent.
          for (const end of ['complete', 'release', 'complete', 'release'] as const) {
            const held = lease(exchange())
            expect((await holder.claim({ ...held, leaseMs: LONG })).outcome).toBe('claimed')
            expect((await waiter.claim({ ...lease(held.exchangeNumber), leaseMs: LONG })).outcome).toBe('busy')
            let done = false
            const waiting = waiter.awaitLeaseEnd!(held.exchangeNumber, LONG)
            void waiting.then(() => void (done = true))
            await sleep(200)
            expect(done).toBe(false)
            expect(await holder[end](held)).toBe(true)
            expect(await ended(waiting)).toBe('ended')
            // A completion by the holder the busy claim found names its state: no need to claim again for that state.
            expect(completedState(await waiting)).toBe(end === 'complete' ? held.state : undefined)
            expect((await waiter.claim({ ...lease(held.exchangeNumber), leaseMs: LONG })).outcome).toBe(end === 'complete' ? 'duplicate' : 'claimed')
          }
        })

        it('hears an end that came between the busy claim and the wait', async () => {
          const [holder, waiter] = pairOfStores('between')
          // The subscriber is listening (a first wait opened it), then a claim finds the payment busy.
          const first = lease(exchange())
          await holder.claim({ ...first, leaseMs: LONG })
          const opening = waiter.awaitLeaseEnd!(first.exchangeNumber, LONG)
          await sleep(100)
          await holder.complete(first)
          await opening
          const held = lease(exchange())
          await holder.claim({ ...held, leaseMs: LONG })
          expect((await waiter.claim({ ...lease(held.exchangeNumber), leaseMs: LONG })).outcome).toBe('busy')
          // The holder completes before the delivery starts waiting: the message was heard, nothing is missed.
          await holder.complete(held)
          await sleep(100)
          expect(await ended(waiter.awaitLeaseEnd!(held.exchangeNumber, LONG))).toBe('ended')
          // What was heard before the wait still names the state the holder completed.
          const next = lease(exchange())
          await holder.claim({ ...next, leaseMs: LONG })
          expect((await waiter.claim({ ...lease(next.exchangeNumber), leaseMs: LONG })).outcome).toBe('busy')
          await holder.complete(next)
          await sleep(100)
          expect(completedState(await waiter.awaitLeaseEnd!(next.exchangeNumber, LONG))).toBe(next.state)
        })

        it("only wakes on another store's completion of the same payment: it never answers for this store", async () => {
          const [holder, waiter] = pairOfStores('shared')
          // Its prefix ends with this store's, so its channel matches this store's pattern (as one in another database would).
          const elsewhere = redisStore({ client: connection.client, prefix: `${RUN_PREFIX}${name}:x-${RUN_PREFIX}${name}:wait-shared:` })
          const held = lease(exchange())
          const theirs = lease(held.exchangeNumber)
          await holder.claim({ ...held, leaseMs: LONG })
          await elsewhere.claim({ ...theirs, leaseMs: LONG })
          expect((await waiter.claim({ ...lease(held.exchangeNumber), leaseMs: LONG })).outcome).toBe('busy')
          const waiting = waiter.awaitLeaseEnd!(held.exchangeNumber, LONG)
          await sleep(200)
          // The same exchange_number and state completed there, by an owner this store's busy claim never found.
          expect(await elsewhere.complete(theirs)).toBe(true)
          expect(await ended(waiting)).toBe('ended')
          expect(await waiting).toBeUndefined()
          expect((await waiter.claim({ ...lease(held.exchangeNumber), leaseMs: LONG })).outcome).toBe('busy')
          expect(await holder.release(held)).toBe(true)
        })

        it('returns at once for a payment nobody holds, and after its time-out for one still held', async () => {
          const [holder, waiter] = pairOfStores('free')
          expect(await ended(waiter.awaitLeaseEnd!(exchange(), LONG))).toBe('ended')
          const held = lease(exchange())
          await holder.claim({ ...held, leaseMs: LONG })
          expect(await ended(waiter.awaitLeaseEnd!(held.exchangeNumber, 300))).toBe('ended')
          expect((await waiter.claim({ ...lease(held.exchangeNumber), leaseMs: LONG })).outcome).toBe('busy')
          expect(await holder.release(held)).toBe(true)
        })

        it('wakes every waiter of the payment, and only them', async () => {
          const [holder, waiter] = pairOfStores('many')
          const [one, other] = [lease(exchange()), lease(exchange())]
          for (const held of [one, other]) await holder.claim({ ...held, leaseMs: LONG })
          const woken: string[] = []
          const waits = [one, one, other].map((held, i) => waiter.awaitLeaseEnd!(held.exchangeNumber, LONG).then(() => void woken.push(`${i}`)))
          await sleep(200)
          await holder.complete(one)
          await Promise.all(waits.slice(0, 2))
          await sleep(100)
          expect(woken.sort()).toEqual(['0', '1'])
          await holder.release(other)
          expect(await ended(waits[2] as Promise<void>)).toBe('ended')
        })
      })

      it('only the owner completes, and only for the state it claimed', async () => {
        const store = redisStore({ client: connection.client, prefix: `${RUN_PREFIX}${name}:owner:` })
        const ex = exchange()
        const held = lease(ex)
        await store.claim({ ...held, leaseMs: 30_000 })
        expect(await store.complete({ ...held, state: 'failed' })).toBe(false)
        expect(await store.release({ ...held, state: 'pending' })).toBe(false)
        expect(await store.complete(held)).toBe(true)
        // Sent again (a client resends a command whose reply a Redis restart cut off): it was applied, so true.
        expect(await store.complete(held)).toBe(true)
        // Nobody else's completion or release is taken for it.
        expect(await store.complete({ ...held, owner: 'someone-else' })).toBe(false)
        expect(await store.release(held)).toBe(false)
        // A completion holds no lease: the next state of the payment is claimed at once, and the first is a duplicate.
        expect((await store.claim({ ...held, leaseMs: 30_000 })).outcome).toBe('duplicate')
        const b2b1 = exchange()
        const pending = { exchangeNumber: b2b1, state: 'pending' as const, owner: 'first' }
        expect((await store.claim({ ...pending, leaseMs: 30_000 })).outcome).toBe('claimed')
        expect(await store.complete(pending)).toBe(true)
        const final = await store.claim({ exchangeNumber: b2b1, state: 'succeeded', owner: 'second', leaseMs: 30_000 })
        expect(final).toEqual({ outcome: 'claimed', previousState: 'pending' })
        expect(await store.complete({ exchangeNumber: b2b1, state: 'succeeded', owner: 'second' })).toBe(true)
      })

      it('holds a later state\'s lease in the value, keeping the handled states for their retention', async () => {
        const { ex, key, store } = onePayment('later', { retentionMs: 3_600_000 })
        const pending = { exchangeNumber: ex, state: 'pending' as const, owner: 'first' }
        await store.claim({ ...pending, leaseMs: 30_000 })
        expect(await store.complete(pending)).toBe(true)
        const final = { exchangeNumber: ex, state: 'succeeded' as const, owner: 'second' }
        // A lease long enough that the next round trip finds it held on any machine, however stalled.
        expect(await store.claim({ ...final, leaseMs: 60_000 })).toEqual({ outcome: 'claimed', previousState: 'pending' })
        expect(await admin.get(key)).toMatch(/^1:L:\d{13}:succeeded:second$/)
        expect(await admin.pttl(key)).toBeGreaterThan(3_000_000)
        const busy = await store.claim({ ...final, owner: 'third', leaseMs: 30_000 })
        expect(busy.outcome).toBe('busy')
        if (busy.outcome === 'busy') expect(busy.retryAfterMs).toBeLessThanOrEqual(60_000)
        // Its owner claiming again renews it, here to 50 ms; waiting longer than that after the reply is safe at
        // any speed. The lease ends by the time in the value, not by the key's expiry: the next delivery takes over.
        expect(await store.claim({ ...final, leaseMs: 50 })).toEqual({ outcome: 'claimed', previousState: 'pending' })
        expect(await admin.pttl(key)).toBeGreaterThan(3_000_000)
        await sleep(80)
        expect(await store.claim({ ...final, owner: 'third', leaseMs: 30_000 })).toEqual({ outcome: 'claimed', previousState: 'pending' })
        expect(await store.complete(final)).toBe(false)
        expect(await store.release(final)).toBe(false)
        // Released, the states handled stay with their retention; completed, the later state joins them.
        expect(await store.release({ ...final, owner: 'third' })).toBe(true)
        expect(await admin.get(key)).toBe('1:N::')
        expect(await admin.pttl(key)).toBeGreaterThan(3_000_000)
        expect(await store.claim({ ...final, owner: 'fourth', leaseMs: 30_000 })).toEqual({ outcome: 'claimed', previousState: 'pending' })
        expect(await store.complete({ ...final, owner: 'fourth' })).toBe(true)
        expect(await admin.get(key)).toBe('5:D::succeeded:fourth')
        expect(await store.claim({ ...pending, owner: 'fifth', leaseMs: 30_000 })).toEqual({ outcome: 'stale', currentState: 'succeeded' })
      })

      it("carries over an earlier version's set of handled states, with its retention", async () => {
        const { ex, key, store } = onePayment('legacy')
        await admin.sadd(key, 'pending')
        await admin.pexpire(key, 3_600_000)
        expect(await store.claim({ ...lease(ex), state: 'pending', leaseMs: 30_000 })).toEqual({ outcome: 'duplicate' })
        const final = lease(ex)
        expect(await store.claim({ ...final, leaseMs: 30_000 })).toEqual({ outcome: 'claimed', previousState: 'pending' })
        expect(await admin.type(key)).toBe('string')
        expect((await store.claim({ ...lease(ex), leaseMs: 30_000 })).outcome).toBe('busy')
        expect(await store.complete(final)).toBe(true)
        expect(await admin.get(key)).toBe(`5:D::succeeded:${final.owner}`)
        // Completed, the key is kept for the store's retention from now.
        expect(await admin.pttl(key)).toBeGreaterThan(3_600_000)
      })

      it('keeps a key without expiry so through a lease, and refuses a value it cannot read', async () => {
        const { prefix, ex, key, store } = onePayment('persisted')
        // As PERSIST or a restore leaves it: a pending state handled, no expiry.
        await admin.set(key, '1:D::pending:first')
        const final = { exchangeNumber: ex, state: 'succeeded' as const, owner: 'second' }
        expect(await store.claim({ ...final, leaseMs: 50 })).toEqual({ outcome: 'claimed', previousState: 'pending' })
        expect(await admin.pttl(key)).toBe(-1)
        await sleep(80)
        // The lease ended; the state handled did not go with it.
        expect(await store.claim({ ...final, state: 'pending', owner: 'third', leaseMs: 30_000 })).toEqual({ outcome: 'duplicate' })
        expect(await store.claim({ ...final, owner: 'third', leaseMs: 30_000 })).toEqual({ outcome: 'claimed', previousState: 'pending' })
        expect(await store.release({ ...final, owner: 'third' })).toBe(true)
        expect(await admin.get(key)).toBe('1:N::')
        expect(await admin.pttl(key)).toBe(-1)
        // Read as nothing handled, a value the store cannot read would be overwritten and its states run again.
        const unreadable = `${prefix}{${ex}-2}:handled`
        for (const value of ['9:D::pending:x', '1:L:1.0e+14:succeeded:x', 'garbage']) {
          await admin.set(unreadable, value)
          await expect(store.claim({ ...final, exchangeNumber: `${ex}-2`, leaseMs: 30_000 })).rejects.toThrow(/cannot read/)
          await expect(store.complete({ ...final, exchangeNumber: `${ex}-2` })).rejects.toThrow(/cannot read/)
          expect(await admin.get(unreadable)).toBe(value)
        }
      })

      it('claims, completes, releases and writes a timeline batch in one command each, the order read and settled in them', async () => {
        const send = rawCommand(connection.client)
        let commands: string[] = []
        const spy = { call: (command: string, ...args: string[]) => (commands.push(command), send([command, ...args])) }
        const prefix = `${RUN_PREFIX}${name}:one-command:`
        const store = redisStore({ client: spy, prefix, inspect: false, retentionMs: 3_600_000 })
        const [uid, orderNumber, ex, other] = ['uid-1', `ORD-${randomUUID()}`, exchange(), exchange()]
        await store.paymentBook().record({ orderNumber, amountSen: 1020, uid, kind: 'form', createdAt: new Date(), exchangeNumber: null, attached: {} })
        // Each script once, so that the server has them cached.
        const warm = { ...lease(exchange()), orderNumber, uid: 'warm-up' }
        await store.claim({ ...warm, leaseMs: 30_000 })
        await store.release(warm)
        await store.claim({ ...warm, leaseMs: 30_000 })
        await store.complete(warm)
        await store.appendTimeline([])
        const counted = async <T>(step: () => Promise<T>): Promise<[T, string[]]> => {
          commands = []
          const result = await step()
          return [result, commands]
        }
        const paying = { ...lease(ex), orderNumber, uid }
        expect(await counted(() => store.claim({ ...paying, leaseMs: 30_000 }))).toEqual([
          expect.objectContaining({ outcome: 'claimed', previousState: null, paidBy: null, booked: expect.objectContaining({ orderNumber, uid, status: 'open' }) }),
          ['EVALSHA'],
        ])
        expect(await counted(() => store.complete(paying))).toEqual([true, ['EVALSHA']])
        expect(await admin.get(`${prefix}paid:${uid.length}:${uid}:${orderNumber}`)).toBe(ex)
        expect(await admin.pttl(`${prefix}paid:${uid.length}:${uid}:${orderNumber}`)).toBeGreaterThan(3_000_000)
        expect(await store.paymentBook().find(orderNumber, { uid })).toMatchObject({ status: 'succeeded', state: 'succeeded', exchangeNumber: ex })
        expect(await counted(() => store.claim({ ...lease(ex), leaseMs: 30_000 }))).toEqual([{ outcome: 'duplicate' }, ['EVALSHA']])
        const late = { ...lease(other), state: 'failed' as const, orderNumber, uid }
        expect(await counted(() => store.claim({ ...late, leaseMs: 30_000 }))).toEqual([expect.objectContaining({ outcome: 'claimed', paidBy: ex }), ['EVALSHA']])
        expect(await counted(() => store.release(late))).toEqual([true, ['EVALSHA']])
        // Three deliveries' entries, of three payments of the order: six lists in one command.
        const entries = [ex, other, exchange()].flatMap((exchangeNumber) =>
          (['received', 'verified', 'processed'] as const).map(
            (event): TimelineEntry => ({
              at: new Date(),
              event,
              exchangeNumber,
              orderNumber,
              state: 'succeeded',
              source: 'callback',
              attempt: exchangeNumber,
              verified: true,
              code: null,
              status: null,
              message: null,
            }),
          ),
        )
        expect(await counted(() => store.appendTimeline(entries))).toEqual([undefined, ['EVALSHA']])
        expect(await admin.llen(`${prefix}timeline:order:${orderNumber}`)).toBe(9)
        expect(await admin.llen(`${prefix}timeline:exchange:${ex}`)).toBe(3)
        expect(await admin.pttl(`${prefix}timeline:exchange:${ex}`)).toBeGreaterThan(3_000_000)
      })

      it('reads and carries on what the previous version wrote: payment keys, a booked payment, timelines', async () => {
        const prefix = `${RUN_PREFIX}${name}:previous:`
        const store = redisStore({ client: connection.client, prefix, inspect: false, retentionMs: 3_600_000 })
        const [ex, leased, uid, order] = [exchange(), exchange(), 'uid-old', `ORD-${randomUUID()}`]
        // As the store of ca7bdc0 left them (a booked payment whose 99 was handled, and a first claim in flight).
        const member = `${order}\0${uid}`
        await admin.set(`${prefix}{${ex}}:handled`, '1:D::pending:o1', 'PX', 3_600_000)
        await admin.set(`${prefix}{${leased}}:handled`, '0:L::succeeded:crashed', 'PX', 30_000)
        await admin.hset(`${prefix}{book}:payment:${uid.length}:${uid}:${order}`, {
          status: 'open', lookups: '0', asked: '1020', exchange: ex, last: '', createdAt: '1700000000000', next: '1700000000000', state: 'pending',
          created: JSON.stringify({ amountSen: 1020, uid, kind: 'payment', attached: { sku: 'A1' } }),
        })
        await admin.hset(`${prefix}{book}:order:${order}`, { [uid]: '1700000000000', '': '1' })
        await admin.zadd(`${prefix}{book}:open`, 1700000000000, member)
        await admin.zadd(`${prefix}{book}:due`, 1700000000000, member)
        const written = { at: 1700000001000, event: 'processed', exchangeNumber: ex, orderNumber: order, state: 'pending', source: 'callback', attempt: 'a-1', verified: true, code: null, status: 200, message: null } as const
        await admin.rpush(`${prefix}timeline:exchange:${ex}`, JSON.stringify(written))

        expect(await store.claim({ ...lease(ex), state: 'pending', leaseMs: 30_000 })).toEqual({ outcome: 'duplicate' })
        const final = { ...lease(ex), orderNumber: order, uid }
        expect(await store.claim({ ...final, leaseMs: 30_000 })).toEqual({
          outcome: 'claimed',
          previousState: 'pending',
          paidBy: null,
          booked: {
            orderNumber: order, amountSen: 1020, askedSen: [1020], uid, kind: 'payment', createdAt: new Date(1700000000000), exchangeNumber: ex,
            attached: { sku: 'A1' }, status: 'open', state: 'pending', lookups: 0, lastLookupAt: null, nextLookupAt: new Date(1700000000000),
            // Fields the previous version did not keep: none known.
            buyerEmail: null, buyerName: null, failures: 0, lastFailure: null, settledAt: null,
          },
        })
        expect(await store.complete(final)).toBe(true)
        expect(await admin.get(`${prefix}{${ex}}:handled`)).toBe(`5:D::succeeded:${final.owner}`)
        expect(await store.paymentBook().find(order)).toMatchObject({ status: 'succeeded', state: 'succeeded', exchangeNumber: ex })
        expect(await admin.exists(`${prefix}{book}:open`, `${prefix}{book}:due`)).toBe(0)
        expect(await admin.hget(`${prefix}{book}:order:${order}`, '')).toBe('0')
        // A first claim in flight: its owner's lease holds until the key expires, and the owner can complete it.
        expect((await store.claim({ ...lease(leased), leaseMs: 30_000 })).outcome).toBe('busy')
        expect(await store.complete({ exchangeNumber: leased, state: 'succeeded', owner: 'crashed' })).toBe(true)
        expect(await admin.get(`${prefix}{${leased}}:handled`)).toBe('4:D::succeeded:crashed')
        // The timeline's lists take new entries after the old ones.
        await store.appendTimeline([{ ...written, at: new Date(1700000002000), event: 'duplicate', state: 'pending', source: 'callback' }])
        expect((await store.readTimeline({ exchangeNumber: ex })).map((entry) => [entry.event, entry.at.getTime()])).toEqual([
          ['processed', 1700000001000],
          ['duplicate', 1700000002000],
        ])
      })

      it('sends its scripts again when Redis forgot them (SCRIPT FLUSH, restart, failover)', async () => {
        const store = redisStore({ client: connection.client, prefix: `${RUN_PREFIX}${name}:flush:` })
        const held = lease(exchange())
        await admin.script('FLUSH')
        expect((await store.claim({ ...held, leaseMs: 30_000 })).outcome).toBe('claimed')
        await admin.script('FLUSH')
        expect(await store.complete(held)).toBe(true)
        expect((await store.claim({ ...lease(held.exchangeNumber), leaseMs: 30_000 })).outcome).toBe('duplicate')
      })
    })
  }

  it('gives up a node-redis subscriber that cannot connect: the wait ends, nothing is left reconnecting', async () => {
    const client = createClient({ url: REDIS_URL })
    client.on('error', () => {})
    await client.connect()
    const duplicate = client.duplicate.bind(client)
    const made: { isOpen: boolean }[] = []
    // The main connection works; a second one cannot be made (maxclients reached, a proxy rule).
    client.duplicate = ((options?: object) => {
      const sub = duplicate({ ...options, url: 'redis://127.0.0.1:1' })
      made.push(sub)
      return sub
    }) as typeof client.duplicate
    try {
      const store = redisStore({ client, prefix: `${RUN_PREFIX}unreachable-sub:` })
      const held = { exchangeNumber: `EX-${randomUUID()}`, state: 'succeeded' as const, owner: 'one' }
      await store.claim({ ...held, leaseMs: 60_000 })
      const waited = await Promise.race([store.awaitLeaseEnd!(held.exchangeNumber, 60_000).then(() => 'ended'), sleep(10_000).then(() => 'still waiting')])
      expect(waited).toBe('ended')
      // Within 30 s of that failure a wait opens nothing more.
      await store.awaitLeaseEnd!(held.exchangeNumber, 60_000)
      expect(made).toHaveLength(1)
      await sleep(200)
      expect(made.map((sub) => sub.isOpen)).toEqual([false])
      await store.release(held)
    } finally {
      await client.close()
    }
  })

  it('never fails a delivery when the server refuses PUBLISH and PSUBSCRIBE: completions succeed, waits end at once', async () => {
    const user = `fpx-nopubsub-${randomUUID()}`
    await admin.call('ACL', 'SETUSER', user, 'on', 'nopass', '~*', '&*', '+@all', '-@pubsub')
    const restricted = new Redis(REDIS_URL, { username: user, password: 'unused', lazyConnect: true, maxRetriesPerRequest: 1 })
    try {
      await restricted.connect()
      const prefix = `${RUN_PREFIX}nopubsub:`
      const [holder, waiter] = [redisStore({ client: restricted, prefix }), redisStore({ client: restricted, prefix })]
      const held = { exchangeNumber: `EX-${randomUUID()}`, state: 'succeeded' as const, owner: 'one' }
      expect((await holder.claim({ ...held, leaseMs: 60_000 })).outcome).toBe('claimed')
      expect((await waiter.claim({ ...held, owner: 'two', leaseMs: 60_000 })).outcome).toBe('busy')
      const waited = await Promise.race([waiter.awaitLeaseEnd!(held.exchangeNumber, 60_000).then(() => 'ended'), sleep(10_000).then(() => 'still waiting')])
      expect(waited).toBe('ended')
      expect(await holder.complete(held)).toBe(true)
      expect((await waiter.claim({ ...held, owner: 'two', leaseMs: 60_000 })).outcome).toBe('duplicate')
    } finally {
      restricted.disconnect()
      await admin.call('ACL', 'DELUSER', user)
    }
  })

  describe('two receivers sharing one Redis, as two processes would', () => {
    const prefix = `${RUN_PREFIX}receivers:`
    const connections: Connection[] = []
    let stores: ReceiverStore[]
    const made: Receiver[] = []
    beforeAll(async () => {
      // One on each client library: the key format and scripts must agree across them too.
      connections.push(await CLIENTS.ioredis(), await CLIENTS['node-redis']())
      stores = connections.map((connection) => redisStore({ client: connection.client, prefix }))
    })
    afterAll(async () => {
      // Timeline entries are written behind the answers: done before the clients close.
      await Promise.all(made.map((receiver) => receiver.flush()))
      await Promise.all(connections.map((connection) => connection.close()))
    })

    /** Handler runs per exchange_number, kept outside both receivers as a database would. */
    function pair(leaseMs: (number | undefined)[] = []): { receivers: Receiver[]; runs: Map<string, number>; hold: Gate } {
      const runs = new Map<string, number>()
      const hold = new Gate()
      const receivers = stores.map((store, i) => {
        const receiver = createReceiver({ checksumToken: TOKEN, signatureOnly: true, store, leaseMs: leaseMs[i] })
        made.push(receiver)
        receiver.on('payment.succeeded', async (event) => {
          runs.set(event.payment.exchangeNumber, (runs.get(event.payment.exchangeNumber) ?? 0) + 1)
          await hold.pass()
        })
        return receiver
      })
      return { receivers, runs, hold }
    }

    function deliver(receiver: Receiver, signed: { body: string; contentType: string }): Promise<ReceiverResponse> {
      return receiver.handle({ kind: 'callback', body: Buffer.from(signed.body), contentType: signed.contentType })
    }

    it('runs the handler exactly once when the same callback reaches both at once', async () => {
      const { receivers, runs } = pair()
      const payments = Array.from({ length: 25 }, () => samplePaymentFields())
      const signed = payments.map((fields) => signCallback(fields, TOKEN))
      const responses = await Promise.all(signed.flatMap((body) => receivers.map((receiver) => deliver(receiver, body))))
      for (const response of responses) expect([200, 409]).toContain(response.status)
      for (const body of signed) for (const receiver of receivers) expect((await deliver(receiver, body)).outcome).toBe('duplicate')
      expect([...runs.values()]).toEqual(payments.map(() => 1))
      expect(new Set(runs.keys())).toEqual(new Set(payments.map((fields) => fields.exchange_number)))
    })

    it("waits for the other receiver's handler and answers the duplicate 200, with no 409 for the sender to retry", async () => {
      const { receivers, runs, hold } = pair()
      const [first, second] = receivers as [Receiver, Receiver]
      const signed = signCallback(samplePaymentFields(), TOKEN)
      const entered = hold.close()
      const slow = deliver(first, signed)
      await entered
      const waiting = deliver(second, signed)
      await sleep(300)
      hold.open()
      expect(await slow).toMatchObject({ status: 200, outcome: 'processed' })
      expect(await waiting).toMatchObject({ status: 200, outcome: 'duplicate' })
      expect([...runs.values()]).toEqual([1])
    })

    it('takes a lease end heard from another store on the channel only as a wake-up: the claim decides', async () => {
      const { receivers, runs, hold } = pair()
      const [first, second] = receivers as [Receiver, Receiver]
      const fields = samplePaymentFields()
      const signed = signCallback(fields, TOKEN)
      // Another store whose keys end like this one's (a longer prefix), completing the same exchange_number.
      const other = redisStore({ client: connections[0]!.client, prefix: `${RUN_PREFIX}other:${prefix}` })
      const foreign = { exchangeNumber: String(fields.exchange_number), state: 'succeeded' as const, owner: 'foreign' }
      const entered = hold.close()
      const slow = deliver(first, signed)
      await entered
      await other.claim({ ...foreign, leaseMs: 30_000 })
      const waiting = deliver(second, signed)
      await sleep(200)
      expect(await other.complete(foreign)).toBe(true)
      // Woken, it claims again, finds the payment still held, and is not told it is a duplicate.
      expect(await waiting).toMatchObject({ status: 409, outcome: 'busy', error: { code: 'in_progress' } })
      hold.open()
      expect(await slow).toMatchObject({ status: 200, outcome: 'processed' })
      expect([...runs.values()]).toEqual([1])
    })

    it('answers 409 with Retry-After when the other receiver is still running the handler after the wait', async () => {
      const { receivers, runs, hold } = pair()
      const [first, second] = receivers as [Receiver, Receiver]
      const signed = signCallback(samplePaymentFields(), TOKEN)
      const entered = hold.close()
      const slow = deliver(first, signed)
      await entered
      const busy = await deliver(second, signed)
      expect(busy).toMatchObject({ status: 409, outcome: 'busy', error: { code: 'in_progress' } })
      expect(Number(busy.headers['retry-after'])).toBeGreaterThanOrEqual(1)
      hold.open()
      expect(await slow).toMatchObject({ status: 200, outcome: 'processed' })
      expect(await deliver(second, signed)).toMatchObject({ status: 200, outcome: 'duplicate' })
      expect([...runs.values()]).toEqual([1])
    })

    it('lets the other receiver take over an expired lease; the first then cannot complete it', async () => {
      // Only the first run's lease is short, so a slow machine cannot make the takeover itself lose its lease.
      const { receivers, runs, hold } = pair([200])
      const [first, second] = receivers as [Receiver, Receiver]
      const fields = samplePaymentFields()
      const signed = signCallback(fields, TOKEN)
      const entered = hold.close()
      const stuck = deliver(first, signed)
      await entered
      // Nothing handled yet: the payment's key is the lease, and expires with it.
      const pattern = `${prefix}{${String(fields.exchange_number)}}:handled`
      for (let i = 0; i < 250 && (await keysMatching(pattern)).length > 0; i++) await sleep(20)
      expect(await keysMatching(pattern)).toEqual([])
      // The first run is still inside its handler; this delivery runs the handler again, to completion.
      expect(await deliver(second, signed)).toMatchObject({ status: 200, outcome: 'processed' })
      hold.open()
      expect(await stuck).toMatchObject({ status: 500, outcome: 'failed', error: { code: 'lease_lost' } })
      expect(await deliver(first, signed)).toMatchObject({ status: 200, outcome: 'duplicate' })
      expect(runs.get(String(fields.exchange_number))).toBe(2)
    })
  })
})
