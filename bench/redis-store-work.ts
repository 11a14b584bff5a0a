/*
 * What the Redis store costs per delivery, counted rather than timed: the receiver built in dist/ (signature only,
 * no timeline, so that only its store calls reach Redis) on a redis-server of its own (no other client's commands),
 * with the commands its client sends (each awaited before the next: one round trip each) and the server's INFO
 * commandstats (the scripts' own calls included) taken around each step:
 *   - a new delivery of an order the payment book holds, from a receiver given the credential set's uid (as the
 *     confirming default is) and from one given only the Checksum Token (the book found without uid); and of an
 *     order the book never saw;
 *   - a duplicate (the same callback again);
 *   - a timeline batch: one delivery's entries, and a hundred deliveries' of as many payments (appendTimeline).
 * Every figure is per step, averaged over BENCH_OPS steps (default 50). The same file runs on an earlier build:
 * copy it into that checkout's bench/ and run it there (a build from before signatureOnly ignores it).
 *
 *   npm run build && npx tsx bench/redis-store-work.ts
 */
import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import { PrivateRedis } from '../soak/servers.js'
import { ioredis } from './connect-redis.js'
import { type Core, fromDist, type Testing } from './dist.js'
import { envInteger } from './env.js'

const { createReceiver } = await fromDist<Core>('index')
const { samplePaymentFields, signCallback } = await fromDist<Testing>('testing')
const { redisStore } = await fromDist<typeof import('../src/stores/redis/store.js')>('redis')

type TimelineEntry = Parameters<NonNullable<ReturnType<typeof redisStore>['appendTimeline']>>[0][number]

const OPS = envInteger('BENCH_OPS', 50, 1)
const TOKEN = 'ab'.repeat(32)
const UID = 'c6b5f1c4-0000-4000-8000-000000000001'

/** Calls per command, from INFO commandstats. */
async function commandStats(admin: Redis): Promise<Map<string, number>> {
  const found = new Map<string, number>()
  for (const line of (await admin.info('commandstats')).split(/\r?\n/)) {
    const match = /^cmdstat_([^:]+):calls=(\d+)/.exec(line)
    if (match !== null) found.set(match[1] as string, Number(match[2]))
  }
  return found
}

interface Tally {
  readonly sent: Map<string, number>
  readonly served: Map<string, number>
}

const add = (into: Map<string, number>, name: string, count: number) => into.set(name, (into.get(name) ?? 0) + count)

async function main(): Promise<void> {
  const server = await PrivateRedis.start('none')
  const [client, admin] = await Promise.all([ioredis(server.url), ioredis(server.url)])
  let sent = new Map<string, number>()
  // What the store sends, command by command: each one a round trip unless sent together.
  const counting = { call: (command: string, ...args: string[]) => (add(sent, command.toLowerCase(), 1), client.call(command, ...args)) }
  const prefix = `fpx-bench:${randomUUID()}:`
  const store = redisStore({ client: counting, prefix, inspect: false })
  const options = { signatureOnly: true, store, timeline: false, logger: false } as const
  const withUid = createReceiver({ ...options, credentials: [{ uid: UID, checksumToken: TOKEN }] })
  const tokenOnly = createReceiver({ ...options, checksumToken: TOKEN })
  for (const receiver of [withUid, tokenOnly]) receiver.on('payment.succeeded', () => {})

  const deliver = async (body: { body: string; contentType: string }, expected: string, receiver = withUid) => {
    const response = await receiver.handle({ kind: 'callback', body: Buffer.from(body.body), contentType: body.contentType })
    if (response.outcome !== expected) throw new Error(`expected ${expected}, the receiver answered ${response.status} ${response.outcome}`)
  }
  const payment = async (booked: boolean) => {
    const orderNumber = `ORD-${randomUUID()}`
    if (booked) await store.paymentBook().record({ orderNumber, amountSen: 10_020, uid: UID, kind: 'form', createdAt: new Date(), exchangeNumber: null, attached: {} })
    return signCallback(samplePaymentFields({ order_number: orderNumber }), TOKEN)
  }
  const entries = (deliveries: number): TimelineEntry[] =>
    Array.from({ length: deliveries }, () => ({ exchangeNumber: `EX${randomUUID()}`, orderNumber: `ORD-${randomUUID()}`, attempt: randomUUID() })).flatMap((ids) =>
      (['received', 'verified', 'processed'] as const).map((event) => ({
        ...ids,
        at: new Date(),
        event,
        state: 'succeeded' as const,
        source: 'callback' as const,
        verified: true,
        code: null,
        status: event === 'processed' ? 200 : null,
        message: null,
      })),
    )

  /** Runs `step` OPS times after `prepare` (not counted), and tallies what it sent and what the server ran. */
  async function measure(prepare: () => Promise<() => Promise<unknown>>): Promise<Tally> {
    const tally: Tally = { sent: new Map(), served: new Map() }
    for (let i = 0; i < OPS; i++) {
      const step = await prepare()
      sent = new Map()
      const before = await commandStats(admin)
      await step()
      const after = await commandStats(admin)
      for (const [name, count] of sent) add(tally.sent, name, count)
      for (const [name, calls] of after) if (name !== 'info') add(tally.served, name, calls - (before.get(name) ?? 0))
    }
    return tally
  }

  try {
    const newDelivery = (booked: boolean, receiver = withUid) => async () => {
      const body = await payment(booked)
      return () => deliver(body, 'processed', receiver)
    }
    const duplicate = async () => {
      const body = await payment(true)
      await deliver(body, 'processed')
      return () => deliver(body, 'duplicate')
    }
    const batch = (deliveries: number) => async () => {
      const written = entries(deliveries)
      return () => store.appendTimeline(written)
    }
    // Every script once, so that the server has them cached (EVALSHA, not EVAL).
    for (const warm of [newDelivery(true), newDelivery(true, tokenOnly), newDelivery(false), duplicate, batch(1)]) await (await warm())()

    const rows: [string, Tally][] = [
      ['new delivery, order booked', await measure(newDelivery(true))],
      ['new delivery, order booked, no uid', await measure(newDelivery(true, tokenOnly))],
      ['new delivery, order not booked', await measure(newDelivery(false))],
      ['duplicate', await measure(duplicate)],
      ['timeline batch: 1 delivery (3 entries)', await measure(batch(1))],
      ['timeline batch: 100 deliveries of 100 payments (300 entries)', await measure(batch(100))],
    ]
    const total = (counts: Map<string, number>) => [...counts.values()].reduce((sum, count) => sum + count, 0) / OPS
    const list = (counts: Map<string, number>) =>
      [...counts]
        .filter(([, count]) => count > 0)
        .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
        .map(([name, count]) => `${name} ${Number((count / OPS).toFixed(2))}`)
        .join(', ')
    console.log(`Redis work per step, mean of ${OPS} (redis-server ${(await admin.info('server')).match(/redis_version:(\S+)/)?.[1]}, ${prefix})\n`)
    console.log('| step | commands sent (round trips) | commands the server ran | of which |')
    console.log('|---|---|---|---|')
    for (const [label, tally] of rows) console.log(`| ${label} | ${total(tally.sent)} (${list(tally.sent)}) | ${total(tally.served)} | ${list(tally.served)} |`)
  } finally {
    await Promise.all([withUid.close(), tokenOnly.close()])
    client.disconnect()
    admin.disconnect()
    await server.stop()
  }
}

await main()
