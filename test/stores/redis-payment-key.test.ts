import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { currentOfBits, PAYMENT_STATES, STATE_BIT } from '../../src/core/payment.js'
import type { PaymentState } from '../../src/index.js'
import { redisStore } from '../../src/stores/redis/store.js'
import { luaScript, rawCommand } from '../../src/stores/redis/client.js'
import { CLAIM } from '../../src/stores/redis/payment-key.js'
import { isRegression } from '../../src/contract/store.js'
import { storeContract } from './contract.js'
import { connectedRedis, dropAndQuit } from './redis-scratch.js'
import { REDIS_URL, serviceAvailable } from './services.js'

/*
 * The claim script's twin of the stale rule (isRegression in src/contract/store.ts). The plain `SET … NX GET` decides
 * most late deliveries in TypeScript, so a broken rule in the Lua would only show where the script alone decides:
 * on a Redis before 7.0 (every claim is the script), and wherever the key holds a lease, live or expired.
 */

const available = await serviceAvailable('Redis', REDIS_URL)
const RUN_PREFIX = `fpx-test:${randomUUID()}:`

/** A client that answers a SET carrying both NX and GET as a server before 7.0 does, so every claim is the script. */
function olderServer(client: Redis): { call(command: string, ...args: string[]): Promise<unknown>; plainTries: () => number } {
  const send = rawCommand(client)
  let tries = 0
  return {
    call: async (command, ...args) => {
      if (command === 'SET' && args.includes('NX') && args.includes('GET')) {
        tries++
        throw new Error('ERR syntax error')
      }
      return send([command, ...args])
    },
    plainTries: () => tries,
  }
}

describe.skipIf(!available)('Redis claim script: the stale rule where the script alone decides', () => {
  let client: Redis
  beforeAll(async () => {
    client = await connectedRedis()
  })
  afterAll(() => dropAndQuit(client, RUN_PREFIX))

  // The whole store contract (late pending, failure after success, takeover of expired leases) through the script.
  storeContract({
    name: 'redis, every claim through the script (before 7.0)',
    shared: true,
    open: async (options) => ({
      store: redisStore({ client: olderServer(client), prefix: `${RUN_PREFIX}older-contract:`, inspect: false, ...options }),
      close: async () => {},
      keptTimeline: (kind, value) => client.llen(`${RUN_PREFIX}older-contract:timeline:${kind}:${value}`),
    }),
  })

  it('calls a late 99 stale after its 00 on a Redis before 7.0, having tried the plain claim once', async () => {
    const older = olderServer(client)
    const store = redisStore({ client: older, prefix: `${RUN_PREFIX}older:`, inspect: false })
    const ex = `EX-${randomUUID()}`
    const approved = { exchangeNumber: ex, state: 'succeeded' as const, owner: 'first' }
    expect(await store.claim({ ...approved, leaseMs: 30_000 })).toEqual({ outcome: 'claimed', previousState: null })
    expect(await store.complete(approved)).toBe(true)
    expect(await store.claim({ exchangeNumber: ex, state: 'pending', owner: 'second', leaseMs: 30_000 })).toEqual({ outcome: 'stale', currentState: 'succeeded' })
    expect(await store.claim({ exchangeNumber: ex, state: 'failed', owner: 'third', leaseMs: 30_000 })).toEqual({ outcome: 'stale', currentState: 'succeeded' })
    expect(older.plainTries()).toBe(1)
  })

  it('calls a late 99 stale when the key holds an expired lease of a later state', async () => {
    // A failure handled, then a success claimed by a process that died: its lease has ended, its value is still
    // there, so the plain claim hands the late 99 to the script.
    const prefix = `${RUN_PREFIX}expired:`
    const store = redisStore({ client, prefix, inspect: false })
    const ex = `EX-${randomUUID()}`
    const key = `${prefix}{${ex}}:handled`
    const crashed = `2:L:${Date.now() - 60_000}:succeeded:crashed`
    await client.set(key, crashed, 'PX', 3_600_000)
    expect(await store.claim({ exchangeNumber: ex, state: 'pending', owner: 'late', leaseMs: 30_000 })).toEqual({ outcome: 'stale', currentState: 'failed' })
    // A stale claim writes nothing.
    expect(await client.get(key)).toBe(crashed)
    // The success itself is taken over, and a 99 after it is stale too.
    expect(await store.claim({ exchangeNumber: ex, state: 'succeeded', owner: 'next', leaseMs: 30_000 })).toEqual({ outcome: 'claimed', previousState: 'failed' })
    expect(await store.complete({ exchangeNumber: ex, state: 'succeeded', owner: 'next' })).toBe(true)
    expect(await store.claim({ exchangeNumber: ex, state: 'pending', owner: 'later', leaseMs: 30_000 })).toEqual({ outcome: 'stale', currentState: 'succeeded' })
  })

  it('answers every handled set and state as the TypeScript rule does, with no lease and with an expired one', async () => {
    const claim = luaScript(rawCommand(client), CLAIM)
    const mismatches: string[] = []
    for (let handled = 0; handled <= 7; handled++) {
      const current = currentOfBits(handled)
      for (const state of PAYMENT_STATES) {
        const expected = isRegression(current, state)
          ? ['stale', current]
          : handled & STATE_BIT[state]
            ? ['duplicate']
            : ['claimed', current ?? '']
        for (const [label, value] of [
          ['no lease', `${handled}:N::`],
          ['an expired lease', `${handled}:L:${Date.now() - 60_000}:${other(state)}:crashed`],
        ] as const) {
          const key = `${RUN_PREFIX}table:{${handled}-${state}-${label}}:handled`
          await client.set(key, value, 'PX', 3_600_000)
          const reply = await claim([key], ['owner', state, '30000'])
          if (JSON.stringify(reply) !== JSON.stringify(expected))
            mismatches.push(`handled ${handled}, ${state}, ${label}: ${JSON.stringify(reply)}, expected ${JSON.stringify(expected)}`)
        }
      }
    }
    expect(mismatches).toEqual([])
  })
})

/** Some state other than `state`, for the dead owner's lease. */
function other(state: PaymentState): PaymentState {
  return state === 'succeeded' ? 'failed' : 'succeeded'
}
