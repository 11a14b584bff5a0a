import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { redisStore } from '../../src/stores/redis/store.js'
import { createdPayment, ref, UID } from './payment-book-fixtures.js'
import { REDIS_URL, serviceAvailable } from './services.js'

/* What only the Redis book does: its keys and their expiry, one command per write, the walk through a backlog. */

const available = await serviceAvailable('Redis', REDIS_URL)
const RUN_PREFIX = `fpx-test:${randomUUID()}:`
const DAY_MS = 24 * 60 * 60 * 1000

const payment = (orderNumber: string, createdAt: number) => createdPayment({ orderNumber, createdAt: new Date(createdAt) })

describe.skipIf(!available)('Redis payment book', () => {
  let client: Redis
  let commands: string[]
  beforeAll(async () => {
    client = new Redis(REDIS_URL, { lazyConnect: true })
    await client.connect()
  })
  afterAll(async () => {
    const keys = await client.keys(`${RUN_PREFIX}*`)
    if (keys.length > 0) await client.del(...keys)
    await client.quit()
  })

  /** A store on a prefix of its own whose client notes every command it sends. */
  function counted(label: string, retentionMs?: number) {
    commands = []
    const prefix = `${RUN_PREFIX}${label}:`
    const spy = { call: (command: string, ...args: string[]) => (commands.push(command), client.call(command, ...args)) }
    const store = redisStore({ client: spy, prefix, inspect: false, retentionMs })
    return { prefix, book: store.paymentBook(), lock: store.sweepLock() }
  }

  it('keeps an open payment without expiry in both indexes, and a closed one for the retention only', async () => {
    const { prefix, book, lock } = counted('keys', DAY_MS)
    const key = (order: string) => `${prefix}{book}:payment:${UID.length}:${UID}:${order}`
    const index = (order: string) => `${prefix}{book}:order:${order}`
    const [A, B] = [`A\0${UID}`, `B\0${UID}`]
    await book.record(payment('A', 1_000))
    await book.record(payment('B', 2_000))
    expect(await client.pttl(key('A'))).toBe(-1)
    expect(await client.pttl(index('A'))).toBe(-1)
    expect(await client.zrange(`${prefix}{book}:open`, '0', '-1', 'WITHSCORES')).toEqual([A, '1000', B, '2000'])
    expect(await client.zrange(`${prefix}{book}:due`, '0', '-1', 'WITHSCORES')).toEqual([A, '1000', B, '2000'])
    await book.settle(ref('A'), 'succeeded', 'EX-A')
    expect(await client.pttl(key('A'))).toBeGreaterThan(DAY_MS - 60_000)
    expect(await client.pttl(index('A'))).toBeGreaterThan(DAY_MS - 60_000)
    expect(await client.zrange(`${prefix}{book}:open`, '0', '-1')).toEqual([B])
    expect(await client.zrange(`${prefix}{book}:due`, '0', '-1')).toEqual([B])
    const held = (await lock.acquire('sweeper', 30_000))!
    expect(await client.get(`${prefix}{book}:sweeper`)).toBe(`${held.token}:sweeper`)
    expect(await client.pttl(`${prefix}{book}:sweeper`)).toBeGreaterThan(25_000)
    expect(await client.pttl(`${prefix}{book}:fence`)).toBe(-1)
    await book.noteLookup(ref('B'), { at: new Date(3_000), nextLookupAt: new Date(9_000) }, held.token)
    expect(await client.zrange(`${prefix}{book}:due`, '0', '-1', 'WITHSCORES')).toEqual([B, '9000'])
    await book.noteLookup(ref('B'), { at: new Date(9_000), nextLookupAt: null, abandoned: true }, held.token)
    expect(await client.exists(`${prefix}{book}:open`, `${prefix}{book}:due`)).toBe(0)
    expect(await client.pttl(key('B'))).toBeGreaterThan(DAY_MS - 60_000)
    expect(await client.pttl(index('B'))).toBeGreaterThan(DAY_MS - 60_000)
  })

  it('records, settles, notes a lookup and finds each in one command once the scripts are cached', async () => {
    const { book, lock } = counted('commands')
    await book.record(payment('warm-up', 1_000))
    await book.settle(ref('warm-up'), 'pending', 'EX-W')
    const { token } = (await lock.acquire('sweeper', 30_000))!
    await book.noteLookup(ref('warm-up'), { at: new Date(2_000), nextLookupAt: new Date(3_000) }, token)
    for (const [name, write] of [
      ['record', () => book.record(payment('A', 1_000))],
      ['settle', () => book.settle(ref('A'), 'pending', 'EX-A')],
      ['noteLookup', () => book.noteLookup(ref('A'), { at: new Date(2_000), nextLookupAt: new Date(3_000) }, token)],
      ['find', () => book.find('A')],
      ['find by uid', () => book.find('A', { uid: UID })],
      ['summary', () => book.summary()],
    ] as const) {
      // Another test file's SCRIPT FLUSH (test/stores/redis.test.ts) empties the server's cache for everyone:
      // then the call sends its script once more, and the next try counts the cached path again.
      for (let tries = 1; ; tries++) {
        commands = []
        await write()
        if (!commands.includes('EVAL') || tries === 3) break
      }
      expect([name, commands]).toEqual([name, [name === 'find by uid' ? 'HMGET' : 'EVALSHA']])
    }
  })

  it('takes one command for a claim, one for its completion (the result seen included), one for a release after a failure', async () => {
    commands = []
    const prefix = `${RUN_PREFIX}delivery:`
    const spy = { call: (command: string, ...args: string[]) => (commands.push(command), client.call(command, ...args)) }
    const store = redisStore({ client: spy, prefix, inspect: false })
    const seen = { uid: UID, amountSen: 100, buyerEmail: 'b@example.com', buyerName: null }
    const lease = (exchangeNumber: string, orderNumber: string) => ({ exchangeNumber, state: 'succeeded' as const, owner: randomUUID(), orderNumber, uid: UID })
    // Warm-up: the scripts cached.
    const warm = lease('EX-W', 'W')
    await store.claim({ ...warm, leaseMs: 30_000 })
    await store.complete({ ...warm, seen })
    await store.claim({ ...lease('EX-W2', 'W2'), leaseMs: 30_000 })
    await store.release({ ...lease('EX-W2', 'W2'), failure: { message: 'x' } })
    const paying = lease('EX-A', 'A')
    const failing = lease('EX-B', 'B')
    for (const [name, step] of [
      ['claim', () => store.claim({ ...paying, leaseMs: 30_000 })],
      ['complete', () => store.complete({ ...paying, seen })],
      ['duplicate', () => store.claim({ ...lease('EX-A', 'A'), leaseMs: 30_000 })],
      ['claim again', () => store.claim({ ...failing, leaseMs: 30_000 })],
      ['release after a failure', () => store.release({ ...failing, failure: { message: 'handler threw', seen } })],
    ] as const) {
      commands = []
      await step()
      expect([name, commands.filter((command) => command !== 'EVAL')]).toEqual([name, ['EVALSHA']])
    }
    expect(await store.paymentBook().find('A')).toMatchObject({ kind: 'result', status: 'succeeded' })
    expect(await store.paymentBook().find('B')).toMatchObject({ kind: 'result', failures: 1 })
  })

  it('indexes a book of the first version once, before its first question, and answers it whole', async () => {
    const { prefix, book } = counted('first-version')
    const base = `${prefix}{book}:`
    // Two payments as the first version kept them: no operator's indexes, none of the later fields.
    const old = (order: string, fields: Record<string, string>) =>
      client.hset(`${base}payment:${UID.length}:${UID}:${order}`, {
        lookups: '0', asked: '1020', last: '', next: '', state: '', exchange: '',
        created: JSON.stringify({ amountSen: 1020, uid: UID, kind: 'form', attached: {} }),
        ...fields,
      })
    await old('OLD-OPEN', { status: 'open', createdAt: '1700000000000', next: '1700000000000' })
    await old('OLD-PAID', { status: 'succeeded', state: 'succeeded', exchange: 'EX-OLD', createdAt: '1700000001000' })
    await client.pexpire(`${base}payment:${UID.length}:${UID}:OLD-PAID`, DAY_MS)
    await client.zadd(`${base}open`, 1700000000000, `OLD-OPEN\0${UID}`)
    commands = []
    expect((await book.list()).payments.map((payment) => payment.orderNumber)).toEqual(['OLD-PAID', 'OLD-OPEN'])
    expect(commands).toContain('SCAN')
    expect(await client.get(`${base}indexed`)).toBe('2')
    expect((await book.list({ status: 'succeeded' })).payments.map((payment) => payment.orderNumber)).toEqual(['OLD-PAID'])
    expect((await book.list({ search: 'EX-OLD' })).payments.map((payment) => payment.orderNumber)).toEqual(['OLD-PAID'])
    const window = { from: new Date(1_699_990_000_000), to: new Date(1_700_000_002_000) }
    expect((await book.overview(window)).byStatus).toEqual({ open: 1, succeeded: 1, failed: 0, abandoned: 0 })
    // Indexed once: another store on the same book asks no more.
    const again = redisStore({ client: { call: (command: string, ...args: string[]) => (commands.push(command), client.call(command, ...args)) }, prefix, inspect: false })
    commands = []
    await again.paymentBook().list()
    expect(commands).not.toContain('SCAN')
  })

  it('forgets the index entries of a closed payment once its hash expired', async () => {
    const { prefix, book } = counted('expired', 100)
    const base = `${prefix}{book}:`
    await book.record(createdPayment({ orderNumber: 'GONE', buyerEmail: 'Gone@Example.com', createdAt: new Date(1_000) }))
    await book.record(createdPayment({ orderNumber: 'KEPT', buyerEmail: 'kept@example.com', createdAt: new Date(2_000) }))
    await book.settle(ref('GONE'), 'succeeded', 'EX-GONE')
    const member = `GONE\0${UID}`
    expect(await client.zscore(`${base}status:succeeded`, member)).toBe('1000')
    expect(await client.hget(`${base}exchanges`, 'EX-GONE')).toBe(member)
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect((await book.list()).payments.map((payment) => payment.orderNumber)).toEqual(['KEPT'])
    for (const set of ['all', 'status:succeeded', 'settled:succeeded', 'expiring']) expect([set, await client.zscore(`${base}${set}`, member)]).toEqual([set, null])
    expect(await client.hget(`${base}exchanges`, 'EX-GONE')).toBeNull()
    expect(await client.hget(`${base}terms`, member)).toBeNull()
    expect(await client.zrange(`${base}emails`, '0', '-1')).toEqual([`kept@example.com\0KEPT\0${UID}`])
  })

  it('moves a payment out of the sets it no longer belongs in, and forgets one whose terms were lost from every set', async () => {
    const { prefix, book } = counted('moves', 100)
    const base = `${prefix}{book}:`
    const inSets = async (member: string) => {
      const sets = ['all', 'open', 'status:succeeded', 'status:failed', 'status:abandoned', 'failing', 'paid-failing', 'settled:pending', 'settled:failed', 'settled:succeeded', 'expiring']
      const found: string[] = []
      for (const set of sets) if ((await client.zscore(`${base}${set}`, member)) !== null) found.push(set)
      return found
    }
    await book.record(payment('MOVES', 1_000))
    const member = `MOVES\0${UID}`
    await book.settle(ref('MOVES'), 'pending', 'EX-MOVES')
    expect(await inSets(member)).toEqual(['all', 'open', 'settled:pending'])
    await book.settle(ref('MOVES'), 'succeeded', 'EX-MOVES')
    expect(await inSets(member)).toEqual(['all', 'status:succeeded', 'settled:succeeded', 'expiring'])
    // Its terms lost (evicted, deleted by hand): once its hash expired too, a listing still takes it out of every set.
    await client.hdel(`${base}terms`, member)
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect((await book.list()).payments.map((booked) => booked.orderNumber)).toEqual([])
    expect(await inSets(member)).toEqual([])
    expect((await book.overview({ from: new Date(0), to: new Date(10_000) })).byStatus).toEqual({ open: 0, succeeded: 0, failed: 0, abandoned: 0 })
  })

  it('drops from its indexes an open payment whose hash is gone, once a listing meets it', async () => {
    const { prefix, book } = counted('gone')
    await book.record(payment('A', 1_000))
    await book.record(payment('B', 2_000))
    await client.del(`${prefix}{book}:payment:${UID.length}:${UID}:A`)
    expect((await book.listOpen({ limit: 1 })).map((booked) => booked.orderNumber)).toEqual([])
    expect((await book.listOpen({ limit: 1 })).map((booked) => booked.orderNumber)).toEqual(['B'])
    expect(await book.summary()).toEqual({ open: 1, oldestCreatedAt: new Date(2_000) })
  })

  it('lists the oldest due payments through a backlog longer than one walk, skipping those not yet due', async () => {
    const { book, lock } = counted('backlog')
    const { token } = (await lock.acquire('sweeper', 30_000))!
    const orders = Array.from({ length: 600 }, (_, i) => `ORD-${String(i).padStart(3, '0')}`)
    await Promise.all(orders.map((order, i) => book.record(payment(order, 1_000 + i))))
    // The 580 oldest were looked up and wait; the 20 youngest are due.
    await Promise.all(orders.slice(0, 580).map((order) => book.noteLookup(ref(order), { at: new Date(5_000), nextLookupAt: new Date(100_000) }, token)))
    const listed = await book.listOpen({ dueBy: new Date(50_000), limit: 3 })
    expect(listed.map((booked) => booked.orderNumber)).toEqual(orders.slice(580, 583))
    expect((await book.listOpen({ dueBy: new Date(50_000), limit: 100 })).map((booked) => booked.orderNumber)).toEqual(orders.slice(580))
  })
})
