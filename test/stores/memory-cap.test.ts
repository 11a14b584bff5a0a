import { describe, expect, it } from 'vitest'
import { type LeaseRef, memoryStore, type PaymentState, type ReceiverStore } from '../../src/index.js'

const LEASE_MS = 60_000
const ref = (exchangeNumber: string, state: PaymentState = 'succeeded', owner = `owner-${exchangeNumber}`): LeaseRef => ({
  exchangeNumber,
  state,
  owner,
})

async function handle(store: ReceiverStore, exchangeNumber: string, state: PaymentState = 'succeeded'): Promise<void> {
  const claim = await store.claim({ ...ref(exchangeNumber, state), leaseMs: LEASE_MS })
  expect(claim.outcome).toBe('claimed')
  expect(await store.complete(ref(exchangeNumber, state))).toBe(true)
}

/** Whether the store still remembers a handled success: a second claim is a duplicate, not a new claim. */
async function remembers(store: ReceiverStore, exchangeNumber: string): Promise<boolean> {
  const claim = await store.claim({ ...ref(exchangeNumber, 'succeeded', 'probe'), leaseMs: LEASE_MS })
  if (claim.outcome === 'claimed') await store.release(ref(exchangeNumber, 'succeeded', 'probe'))
  return claim.outcome === 'duplicate'
}

describe('memoryStore maxEntries', () => {
  it('refuses a cap that is not a positive integer', () => {
    for (const maxEntries of [0, -1, 1.5, Number.NaN]) expect(() => memoryStore({ maxEntries })).toThrow(/maxEntries must be a positive integer/)
  })

  it('refuses a retention that is not a positive number, and takes an infinite one', async () => {
    for (const retentionMs of [0, -1, Number.NaN]) expect(() => memoryStore({ retentionMs })).toThrow(/retentionMs must be a positive number/)
    const store = memoryStore({ retentionMs: Number.POSITIVE_INFINITY })
    await handle(store, 'EX1')
    expect(await remembers(store, 'EX1')).toBe(true)
  })

  it('forgets the payment completed longest ago first, and keeps the newest up to the cap', async () => {
    const store = memoryStore({ maxEntries: 3 })
    for (const ex of ['EX1', 'EX2', 'EX3']) await handle(store, ex)
    await handle(store, 'EX4')
    expect(await remembers(store, 'EX1')).toBe(false)
    // EX2 made way for EX4; the probe of EX1 was released and took no slot.
    expect(await remembers(store, 'EX3')).toBe(true)
    expect(await remembers(store, 'EX4')).toBe(true)
  })

  it('counts a payment as touched when a later state of it is handled', async () => {
    const store = memoryStore({ maxEntries: 2 })
    await handle(store, 'EX1', 'pending')
    await handle(store, 'EX2')
    await handle(store, 'EX1', 'succeeded') // EX1 is now the most recently touched
    await handle(store, 'EX3')
    expect(await remembers(store, 'EX1')).toBe(true)
    expect(await remembers(store, 'EX3')).toBe(true)
  })

  it('counts a new payment as touched when its handlers finish, not when they started, past one tick', async () => {
    // 1 s of retention: a tick is 1 ms.
    const store = memoryStore({ maxEntries: 3, retentionMs: 1000 })
    expect((await store.claim({ ...ref('EX-slow'), leaseMs: LEASE_MS })).outcome).toBe('claimed')
    await handle(store, 'EX1')
    await handle(store, 'EX2')
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(await store.complete(ref('EX-slow'))).toBe(true)
    await handle(store, 'EX3')
    // EX1, completed before EX-slow, made way for EX3.
    expect(await remembers(store, 'EX-slow')).toBe(true)
    expect(await remembers(store, 'EX1')).toBe(false)
  })

  it('never forgets a claim in flight: its owner still completes it, and a duplicate meanwhile is busy', async () => {
    const store = memoryStore({ maxEntries: 2 })
    expect((await store.claim({ ...ref('EX-held'), leaseMs: LEASE_MS })).outcome).toBe('claimed')
    for (let i = 0; i < 5; i++) await handle(store, `EX${i}`)
    expect((await store.claim({ ...ref('EX-held', 'succeeded', 'someone else'), leaseMs: LEASE_MS })).outcome).toBe('busy')
    expect(await store.complete(ref('EX-held'))).toBe(true)
    expect(await remembers(store, 'EX-held')).toBe(true)
  })

  it('keeps no record for a claim that was released: probes of new payments push no handled payment out', async () => {
    const store = memoryStore({ maxEntries: 2 })
    for (const ex of ['EX1', 'EX2']) await handle(store, ex)
    for (let i = 0; i < 5; i++) expect(await remembers(store, `EX-probe${i}`)).toBe(false)
    expect(await remembers(store, 'EX1')).toBe(true)
    expect(await remembers(store, 'EX2')).toBe(true)
  })

  it('counts a payment taken over from an expired claim against the cap when it completes', async () => {
    const store = memoryStore({ maxEntries: 2 })
    for (const ex of ['EX1', 'EX2']) await handle(store, ex)
    expect((await store.claim({ ...ref('EX3', 'succeeded', 'vanished'), leaseMs: 1 })).outcome).toBe('claimed')
    await new Promise((resolve) => setTimeout(resolve, 10))
    await handle(store, 'EX3')
    expect(await remembers(store, 'EX1')).toBe(false)
    expect(await remembers(store, 'EX2')).toBe(true)
    expect(await remembers(store, 'EX3')).toBe(true)
  })

  it('keeps forgetting the payment completed longest ago as payments keep coming past the cap, around a claim in flight', async () => {
    const store = memoryStore({ maxEntries: 3 })
    expect((await store.claim({ ...ref('EX-held'), leaseMs: LEASE_MS })).outcome).toBe('claimed')
    const expectNewest = async (done: string[], gone: string[]) => {
      for (const ex of done) expect(await remembers(store, ex)).toBe(true)
      for (const ex of gone) expect(await remembers(store, ex)).toBe(false)
    }
    // Many times round the map: the store resumes its walk from where the last forgetting stopped (oldest-first.ts).
    for (let i = 0; i < 20; i++) {
      await handle(store, `EX${i}`)
      if (i >= 3) await expectNewest([`EX${i - 1}`, `EX${i}`], [`EX${i - 2}`])
    }
    expect((await store.claim({ ...ref('EX-held', 'succeeded', 'someone else'), leaseMs: LEASE_MS })).outcome).toBe('busy')
    expect(await store.complete(ref('EX-held'))).toBe(true)
    for (let i = 20; i < 30; i++) {
      await handle(store, `EX${i}`)
      await expectNewest([`EX${i - 1}`, `EX${i}`], [`EX${i - 3}`])
    }
  })

  it('lets the map exceed the cap rather than refuse when every entry is in flight', async () => {
    const store = memoryStore({ maxEntries: 2 })
    for (const ex of ['EX1', 'EX2', 'EX3']) expect((await store.claim({ ...ref(ex), leaseMs: LEASE_MS })).outcome).toBe('claimed')
    for (const ex of ['EX1', 'EX2', 'EX3']) expect(await store.complete(ref(ex))).toBe(true)
  })
})

describe('memoryStore maxEntries and the timeline', () => {
  it('counts a list as touched when it is written again, so the least recently written goes first', async () => {
    const retentionMs = 640 // written again after more than retentionMs / 64 moves a list to the end
    const store = memoryStore({ maxEntries: 2, retentionMs })
    const entry = (order: string) => ({
      at: new Date(),
      event: 'processed' as const,
      exchangeNumber: null,
      orderNumber: order,
      state: 'succeeded' as const,
      source: 'callback' as const,
      attempt: `a-${order}`,
      verified: true,
      code: null,
      status: 200,
      message: null,
    })
    await store.appendTimeline!([entry('A'), entry('A')])
    await store.appendTimeline!([entry('B')])
    await new Promise((resolve) => setTimeout(resolve, 30))
    await store.appendTimeline!([entry('A')])
    await store.appendTimeline!([entry('C')])
    expect(await store.readTimeline!({ orderNumber: 'A' })).toHaveLength(3)
    expect(await store.readTimeline!({ orderNumber: 'B' })).toEqual([])
    expect(await store.readTimeline!({ orderNumber: 'C' })).toHaveLength(1)
  })

  it('keeps at most two timeline lists per capped payment, forgetting the least recently written first', async () => {
    const store = memoryStore({ maxEntries: 2 })
    const entry = (n: number) => ({
      at: new Date(),
      event: 'processed' as const,
      exchangeNumber: `EX${n}`,
      orderNumber: `ORD${n}`,
      state: 'succeeded' as const,
      source: 'callback' as const,
      attempt: `a-${n}`,
      verified: true,
      code: null,
      status: 200,
      message: null,
    })
    for (let n = 1; n <= 3; n++) await store.appendTimeline!([entry(n)])
    expect(await store.readTimeline!({ orderNumber: 'ORD1' })).toEqual([])
    expect(await store.readTimeline!({ exchangeNumber: 'EX1' })).toEqual([])
    expect(await store.readTimeline!({ orderNumber: 'ORD2' })).toHaveLength(1)
    expect(await store.readTimeline!({ exchangeNumber: 'EX3' })).toHaveLength(1)
  })
})
