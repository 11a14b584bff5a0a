import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { currentOfBits, PAYMENT_STATES, type PaymentState, STATE_BIT, STATE_RANK } from '../../src/core/payment.js'
import { isRegression } from '../../src/contract/store.js'
import { luaScript, rawCommand } from '../../src/stores/redis/client.js'
import { redisInbox } from '../../src/stores/redis/inbox.js'
import { luaTable } from '../../src/stores/redis/lua-table.js'
import { CLAIM, COMPLETE } from '../../src/stores/redis/payment-key.js'
import { connectedRedis, dropAndQuit } from './redis-scratch.js'
import { REDIS_URL, serviceAvailable } from './services.js'

/*
 * The Lua scripts get core's STATE_BIT and STATE_RANK as rendered tables (src/stores/redis/lua-table.ts). These run
 * the real scripts on the real server for every state, so that a table rendered wrong, or a script reading it
 * wrong, fails here rather than in a payment. The claim script's stale rule over every handled set is in
 * redis-payment-key.test.ts.
 */

const available = await serviceAvailable('Redis', REDIS_URL)
const RUN_PREFIX = `fpx-test:${randomUUID()}:`

/** Every set of states, as its STATE_BIT bits and its members. */
const SETS = Array.from({ length: 1 << PAYMENT_STATES.length }, (_, bits) => ({
  bits,
  states: PAYMENT_STATES.filter((state) => bits & STATE_BIT[state]),
}))

describe('luaTable', () => {
  it('refuses an entry that would not be a plain Lua name = integer', () => {
    expect(() => luaTable({ 'not-a-name': 1 })).toThrow(TypeError)
    expect(() => luaTable({ name: 0.5 })).toThrow(TypeError)
  })
})

describe.skipIf(!available)('Redis scripts: core state tables on the server, every state', () => {
  let client: Redis
  beforeAll(async () => {
    client = await connectedRedis()
  })
  afterAll(() => dropAndQuit(client, RUN_PREFIX))

  it('completes every state onto every handled set with the state’s STATE_BIT (the script’s BIT)', async () => {
    const complete = luaScript(rawCommand(client), COMPLETE)
    const mismatches: string[] = []
    for (const { bits } of SETS) {
      for (const state of PAYMENT_STATES) {
        // A lease with an end on every handled set, completed through the script's BIT table.
        const key = `${RUN_PREFIX}complete:{${bits}-${state}}:handled`
        await client.set(key, `${bits}:L:${Date.now() + 60_000}:${state}:owner`, 'PX', 3_600_000)
        const reply = await complete([key], [`${state}:owner`, state, '3600000'])
        const value = await client.get(key)
        const expected = `${bits | STATE_BIT[state]}:D::${state}:owner`
        if (reply !== 1 || value !== expected) mismatches.push(`handled ${bits}, ${state}: ${String(reply)} ${value}, expected 1 ${expected}`)
      }
    }
    expect(mismatches).toEqual([])
  })

  it('carries every legacy set of handled states over as its STATE_BIT bits, and claims on it as TypeScript does', async () => {
    const claim = luaScript(rawCommand(client), CLAIM)
    const mismatches: string[] = []
    for (const { bits, states } of SETS.filter((set) => set.bits > 0)) {
      const current = currentOfBits(bits)
      for (const state of PAYMENT_STATES) {
        const key = `${RUN_PREFIX}legacy:{${bits}-${state}}:handled`
        await client.sadd(key, ...states)
        const reply = await claim([key], ['owner', state, '30000'])
        const expected = isRegression(current, state) ? ['stale', current] : bits & STATE_BIT[state] ? ['duplicate'] : ['claimed', current]
        const value = await client.type(key) === 'string' ? await client.get(key) : null
        // A claim taken writes the carried-over bits in front of its lease; the others leave the set alone.
        const written = expected[0] === 'claimed' ? value?.startsWith(`${bits}:L:`) : value === null
        if (JSON.stringify(reply) !== JSON.stringify(expected) || !written)
          mismatches.push(`set ${states.join('+')}, ${state}: ${JSON.stringify(reply)} ${value}, expected ${JSON.stringify(expected)}`)
      }
    }
    expect(mismatches).toEqual([])
  })

  it('holds back a later entry behind a dead-lettered one of higher STATE_RANK only (the take script’s RANK)', async () => {
    const send = rawCommand(client)
    const mismatches: string[] = []
    for (const first of PAYMENT_STATES) {
      for (const later of PAYMENT_STATES.filter((state) => state !== first)) {
        // A queue per pair: an entry held back is due again a second later and must not reach another pair's take.
        const queue = redisInbox(send, `${RUN_PREFIX}inbox-${first}-${later}:`)
        const exchangeNumber = `EX-${randomUUID()}`
        const entry = (state: PaymentState) => ({ exchangeNumber, state, source: 'callback' as const, orderNumber: null, fields: '{}', rendering: 'plain' as const })
        await queue.enqueue(entry(first))
        const [taken] = await queue.take('worker', 10, 30_000)
        expect(taken?.state).toBe(first)
        await queue.fail(taken!, { error: 'gave up', delayMs: 0, dead: true })
        await queue.enqueue(entry(later))
        const states = (await queue.take('worker', 10, 30_000)).map((next) => next.state)
        const expected = STATE_RANK[first] > STATE_RANK[later] ? [] : [later]
        if (JSON.stringify(states) !== JSON.stringify(expected))
          mismatches.push(`${later} after a dead ${first}: took ${JSON.stringify(states)}, expected ${JSON.stringify(expected)}`)
      }
    }
    expect(mismatches).toEqual([])
  })
})
