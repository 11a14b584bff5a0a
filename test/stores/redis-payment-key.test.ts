import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { currentOfBits, PAYMENT_STATES, STATE_BIT } from '../../src/core/payment.js'
import type { PaymentState } from '../../src/index.js'
import { redisStore } from '../../src/stores/redis/store.js'
import { luaScript, rawCommand } from '../../src/stores/redis/client.js'
import { CLAIM } from '../../src/stores/redis/payment-key.js'
import { isRegression } from '../../src/contract/store.js'
import { connectedRedis, dropAndQuit } from './redis-scratch.js'
import { REDIS_URL, serviceAvailable } from './services.js'

/*
 * The claim script's twin of the stale rule (isRegression in src/contract/store.ts), where it matters most: over
 * every set of handled states, and wherever the key holds a lease, live or expired.
 */

const available = await serviceAvailable('Redis', REDIS_URL)
const RUN_PREFIX = `fpx-test:${randomUUID()}:`

describe.skipIf(!available)('Redis claim script: the stale rule', () => {
  let client: Redis
  beforeAll(async () => {
    client = await connectedRedis()
  })
  afterAll(() => dropAndQuit(client, RUN_PREFIX))

  it('calls a late 99 stale when the key holds an expired lease of a later state', async () => {
    // A failure handled, then a success claimed by a process that died: its lease has ended, its value is still there.
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
