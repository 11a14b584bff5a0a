import { afterEach, describe, expect, it, vi } from 'vitest'
import { type Claim, type LeaseRef, memoryStore, type PaymentState, type ReceiverStore } from '../../src/index.js'

const LEASE_MS = 60_000
let counter = 0
const freshExchange = (): string => `EX${String(++counter).padStart(10, '0')}`

function lease(exchangeNumber: string, state: PaymentState, owner: string): LeaseRef {
  return { exchangeNumber, state, owner }
}

function claim(store: ReceiverStore, ref: LeaseRef, leaseMs = LEASE_MS): Promise<Claim> {
  return store.claim({ ...ref, leaseMs })
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** Handles one state to completion, as a successful delivery does. */
async function handle(store: ReceiverStore, exchangeNumber: string, state: PaymentState, owner = `owner-${state}`): Promise<Claim> {
  const result = await claim(store, lease(exchangeNumber, state, owner))
  if (result.outcome === 'claimed') expect(await store.complete(lease(exchangeNumber, state, owner))).toBe(true)
  return result
}

describe('claim, complete, duplicate', () => {
  it('claims a new exchange_number with no previous state, completes it, and reports the next claim as a duplicate', async () => {
    const store = memoryStore()
    const ex = freshExchange()

    expect(await claim(store, lease(ex, 'succeeded', 'a'))).toEqual({ outcome: 'claimed', previousState: null })
    expect(await store.complete(lease(ex, 'succeeded', 'a'))).toBe(true)
    expect(await claim(store, lease(ex, 'succeeded', 'b'))).toEqual({ outcome: 'duplicate' })
    expect(await claim(store, lease(ex, 'succeeded', 'a'))).toEqual({ outcome: 'duplicate' })
  })

  it('completes only once', async () => {
    const store = memoryStore()
    const ex = freshExchange()
    await claim(store, lease(ex, 'succeeded', 'a'))
    expect(await store.complete(lease(ex, 'succeeded', 'a'))).toBe(true)
    expect(await store.complete(lease(ex, 'succeeded', 'a'))).toBe(false)
    expect(await store.release(lease(ex, 'succeeded', 'a'))).toBe(false)
  })

  it('keeps exchange numbers independent', async () => {
    const store = memoryStore()
    const [one, two] = [freshExchange(), freshExchange()]
    await handle(store, one, 'succeeded')
    expect(await claim(store, lease(two, 'succeeded', 'x'))).toEqual({ outcome: 'claimed', previousState: null })
  })

  it('lets only the owner complete or release, and only for the leased state', async () => {
    const store = memoryStore()
    const ex = freshExchange()
    await claim(store, lease(ex, 'succeeded', 'a'))

    expect(await store.complete(lease(ex, 'succeeded', 'intruder'))).toBe(false)
    expect(await store.release(lease(ex, 'succeeded', 'intruder'))).toBe(false)
    expect(await store.complete(lease(ex, 'failed', 'a'))).toBe(false)
    expect(await store.complete(lease(freshExchange(), 'succeeded', 'a'))).toBe(false)
    // Nothing was recorded by the refused calls: the lease is still held by a.
    expect((await claim(store, lease(ex, 'succeeded', 'b'))).outcome).toBe('busy')
    expect(await store.complete(lease(ex, 'succeeded', 'a'))).toBe(true)
  })
})

describe('release', () => {
  it('gives the claim up without recording anything, so the next claim succeeds', async () => {
    const store = memoryStore()
    const ex = freshExchange()
    await claim(store, lease(ex, 'succeeded', 'a'))

    expect(await store.release(lease(ex, 'succeeded', 'a'))).toBe(true)
    expect(await claim(store, lease(ex, 'succeeded', 'b'))).toEqual({ outcome: 'claimed', previousState: null })
    expect(await store.release(lease(ex, 'succeeded', 'a'))).toBe(false)
    expect(await store.complete(lease(ex, 'succeeded', 'b'))).toBe(true)
  })
})

describe('busy while leased', () => {
  it('answers busy to another owner, whatever the state, until the owner completes', async () => {
    const store = memoryStore()
    const ex = freshExchange()
    await claim(store, lease(ex, 'succeeded', 'a'))
    const busy = await claim(store, lease(ex, 'succeeded', 'b'))
    expect(busy.outcome).toBe('busy')
    if (busy.outcome !== 'busy') return
    expect(busy.retryAfterMs).toBeGreaterThan(0)
    expect(busy.retryAfterMs).toBeLessThanOrEqual(LEASE_MS)
    // Other states of the same exchange_number wait too: one delivery works on an exchange_number at a time.
    expect((await claim(store, lease(ex, 'failed', 'c'))).outcome).toBe('busy')
    expect(await store.complete(lease(ex, 'succeeded', 'a'))).toBe(true)
    expect(await claim(store, lease(ex, 'succeeded', 'b'))).toEqual({ outcome: 'duplicate' })
  })

  it('lets the next delivery claim once the owner releases', async () => {
    const store = memoryStore()
    const ex = freshExchange()
    await claim(store, lease(ex, 'pending', 'a'))
    expect((await claim(store, lease(ex, 'pending', 'b'))).outcome).toBe('busy')
    expect(await store.release(lease(ex, 'pending', 'a'))).toBe(true)
    expect(await claim(store, lease(ex, 'pending', 'b'))).toEqual({ outcome: 'claimed', previousState: null })
  })
})

describe('expired leases', () => {
  it('can be taken over, after which the old owner can neither complete nor release', async () => {
    const store = memoryStore()
    const ex = freshExchange()
    const leaseMs = 5
    expect((await claim(store, lease(ex, 'succeeded', 'crashed'), leaseMs)).outcome).toBe('claimed')
    const waiter = await claim(store, lease(ex, 'succeeded', 'waiter'), leaseMs)
    expect(waiter.outcome).toBe('busy')

    await sleep(leaseMs * 4)

    expect(await claim(store, lease(ex, 'succeeded', 'successor'), leaseMs)).toEqual({ outcome: 'claimed', previousState: null })
    expect(await store.complete(lease(ex, 'succeeded', 'crashed'))).toBe(false)
    expect(await store.release(lease(ex, 'succeeded', 'crashed'))).toBe(false)
    expect(await store.complete(lease(ex, 'succeeded', 'successor'))).toBe(true)
    expect(await claim(store, lease(ex, 'succeeded', 'late'))).toEqual({ outcome: 'duplicate' })
  })

  it('an old owner whose lease expired but was not taken over cannot block the payment forever', async () => {
    const store = memoryStore()
    const ex = freshExchange()
    await claim(store, lease(ex, 'failed', 'slow'), 5)
    await sleep(20)
    expect((await claim(store, lease(ex, 'failed', 'next'))).outcome).toBe('claimed')
    expect(await store.release(lease(ex, 'failed', 'slow'))).toBe(false)
  })
})

describe('state order', () => {
  it.each<[PaymentState, PaymentState]>([
    ['succeeded', 'pending'],
    ['failed', 'pending'],
    ['succeeded', 'failed'],
  ])('after %s, a %s result is stale', async (handled, incoming) => {
    const store = memoryStore()
    const ex = freshExchange()
    await handle(store, ex, handled)

    expect(await claim(store, lease(ex, incoming, 'late'))).toEqual({ outcome: 'stale', currentState: handled })
    // Stale claims hold nothing: the record is free for the next delivery.
    expect(await claim(store, lease(ex, handled, 'again'))).toEqual({ outcome: 'duplicate' })
  })

  it('pending then succeeded then a late pending: claimed with previousState pending, then stale', async () => {
    const store = memoryStore()
    const ex = freshExchange()
    expect(await handle(store, ex, 'pending')).toEqual({ outcome: 'claimed', previousState: null })
    expect(await handle(store, ex, 'succeeded')).toEqual({ outcome: 'claimed', previousState: 'pending' })
    expect(await claim(store, lease(ex, 'pending', 'late'))).toEqual({ outcome: 'stale', currentState: 'succeeded' })
  })

  it('pending then failed is allowed with previousState pending', async () => {
    const store = memoryStore()
    const ex = freshExchange()
    await handle(store, ex, 'pending')
    expect(await handle(store, ex, 'failed')).toEqual({ outcome: 'claimed', previousState: 'pending' })
  })

  it('failed then succeeded is allowed (money arriving is never ignored) with previousState failed', async () => {
    const store = memoryStore()
    const ex = freshExchange()
    await handle(store, ex, 'failed')
    expect(await handle(store, ex, 'succeeded')).toEqual({ outcome: 'claimed', previousState: 'failed' })
    // Now succeeded outranks everything handled before it.
    expect(await claim(store, lease(ex, 'failed', 'late'))).toEqual({ outcome: 'stale', currentState: 'succeeded' })
    expect(await claim(store, lease(ex, 'pending', 'late'))).toEqual({ outcome: 'stale', currentState: 'succeeded' })
  })

  it('a released claim records no state', async () => {
    const store = memoryStore()
    const ex = freshExchange()
    await claim(store, lease(ex, 'succeeded', 'a'))
    await store.release(lease(ex, 'succeeded', 'a'))
    // Had the release recorded succeeded, pending would be stale.
    expect(await claim(store, lease(ex, 'pending', 'b'))).toEqual({ outcome: 'claimed', previousState: null })
  })
})

describe('retention', () => {
  // The store sweeps expired records every 1024 claims; this many claims guarantee at least one sweep.
  const SWEEP_GUARANTEE = 1024

  async function rememberedAfterSweep(retentionMs: number): Promise<Claim> {
    const store = memoryStore({ retentionMs })
    const ex = freshExchange()
    await handle(store, ex, 'succeeded')
    await sleep(10)
    for (let i = 0; i < SWEEP_GUARANTEE; i++) {
      const other = lease(`FILLER${i}`, 'succeeded', 'filler')
      await claim(store, other)
      await store.complete(other)
    }
    return claim(store, lease(ex, 'succeeded', 'redelivery'))
  }

  it('forgets completed records once retentionMs has passed and a sweep ran', async () => {
    expect(await rememberedAfterSweep(1)).toEqual({ outcome: 'claimed', previousState: null })
  })

  it('remembers completed records within retentionMs through the same sweeps', async () => {
    expect(await rememberedAfterSweep(60 * 60 * 1000)).toEqual({ outcome: 'duplicate' })
  })

  it('forgets a record past retentionMs at its next claim, without waiting for a sweep', async () => {
    const store = memoryStore({ retentionMs: 1 })
    const ex = freshExchange()
    await handle(store, ex, 'succeeded')
    await sleep(10)
    expect(await claim(store, lease(ex, 'succeeded', 'redelivery'))).toEqual({ outcome: 'claimed', previousState: null })
  })

  it('keeps a payment a retention after a released claim, as after a completion', async () => {
    const DAY = 24 * 60 * 60 * 1000
    const start = Date.UTC(2026, 10, 23)
    vi.useFakeTimers({ toFake: ['Date'] })
    try {
      vi.setSystemTime(start)
      const store = memoryStore({ retentionMs: 30 * DAY })
      const ex = freshExchange()
      await handle(store, ex, 'failed')
      vi.setSystemTime(start + 20 * DAY)
      // A success whose handler threw: released, and its redelivery is coming.
      expect((await claim(store, lease(ex, 'succeeded', 'thrower'))).outcome).toBe('claimed')
      expect(await store.release(lease(ex, 'succeeded', 'thrower'))).toBe(true)
      // 31 days after the failure was handled, 11 after the release: the failure is still remembered.
      vi.setSystemTime(start + 31 * DAY)
      expect(await claim(store, lease(ex, 'failed', 'redelivery'))).toEqual({ outcome: 'duplicate' })
    } finally {
      vi.useRealTimers()
    }
  })

  it('forgets a record past retentionMs whose last claim was abandoned and has expired', async () => {
    const store = memoryStore({ retentionMs: 30 })
    const ex = freshExchange()
    await handle(store, ex, 'failed')
    expect((await claim(store, lease(ex, 'succeeded', 'vanished'), 5)).outcome).toBe('claimed')
    await sleep(60)
    expect(await claim(store, lease(ex, 'failed', 'next'))).toEqual({ outcome: 'claimed', previousState: null })
  })

  it('does not sweep a record whose lease is still held', async () => {
    const store = memoryStore({ retentionMs: 1 })
    const ex = freshExchange()
    await claim(store, lease(ex, 'succeeded', 'holder'))
    await sleep(10)
    for (let i = 0; i < SWEEP_GUARANTEE; i++) await claim(store, lease(`FILLER${i}`, 'succeeded', 'filler'))
    expect((await claim(store, lease(ex, 'succeeded', 'other'))).outcome).toBe('busy')
    expect(await store.complete(lease(ex, 'succeeded', 'holder'))).toBe(true)
  })
})

describe('a clock set back', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it('keeps states handled while the clock was behind the store\'s creation for the whole retention', async () => {
    const DAY = 24 * 60 * 60 * 1000
    const start = Date.UTC(2026, 10, 23)
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(start)
    const retentionMs = 1_000_000 // ticks of 1 s
    const store = memoryStore({ retentionMs })
    const ex = freshExchange()
    vi.setSystemTime(start - 5_000)
    await handle(store, ex, 'pending')
    vi.setSystemTime(start + 10_900)
    expect(await handle(store, ex, 'succeeded')).toEqual({ outcome: 'claimed', previousState: 'pending' })
    vi.setSystemTime(start + 10_900 + retentionMs - 500)
    expect(await claim(store, lease(ex, 'succeeded', 'late'))).toEqual({ outcome: 'duplicate' })
    expect(await claim(store, lease(ex, 'pending', 'late'))).toEqual({ outcome: 'stale', currentState: 'succeeded' })
    vi.setSystemTime(start + DAY)
    expect(await claim(store, lease(ex, 'succeeded', 'much later'))).toEqual({ outcome: 'claimed', previousState: null })
  })
})
