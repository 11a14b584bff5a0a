/**
 * A delivery that finds its payment held by another process waits for the holder (issue 37, point 1): a completion
 * of its own state by that holder answers it with no second claim, and it keeps waiting, within the same bound,
 * when the next holder is the payment's other state: a B2B1 approval (00) that takes the payment over the moment
 * its 99 is done. Receivers with their own store objects share one Redis, as processes would.
 */
import { randomUUID } from 'node:crypto'
import { EventEmitter } from 'node:events'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { createReceiver, memoryStore, type Receiver, type ReceiverStore } from '../../src/index.js'
import { WAITS_FOR_HOLDER_MS } from '../../src/receiver/dispatch.js'
import { redisStore } from '../../src/stores/redis/store.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { REDIS_URL, serviceAvailable } from '../stores/services.js'

const available = await serviceAvailable('Redis', REDIS_URL)
const TOKEN = 'ef'.repeat(32)

function opened(): { promise: Promise<void>; open(): void } {
  let open = () => {}
  const promise = new Promise<void>((resolve) => (open = resolve))
  return { promise, open }
}

describe.skipIf(!available)('waiting for the holder of a payment elsewhere', () => {
  const redis = new Redis(REDIS_URL)
  const prefix = `fpx-wait-holders:${randomUUID()}:`
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`)
    if (keys.length > 0) await redis.del(...keys)
    await redis.quit()
  })

  const deliver = (receiver: Receiver, fields: ReturnType<typeof samplePaymentFields>) => receiver.handle({ kind: 'callback', ...signCallback(fields, TOKEN) })

  /**
   * Has `store` listen for lease ends from now until `close()`: a wait that first opens the feed may miss a
   * completion sent meanwhile (it then claims again, rightly), which is not what these tests are about. One wait
   * proves the feed listens (it ends once its lease's completion is heard, or found ended); another keeps it open.
   */
  async function keepFeedOpen(store: ReceiverStore) {
    const helper = redisStore({ client: redis, prefix, logger: { warn: () => {}, debug: () => {} } })
    const lease = () => ({ exchangeNumber: randomUUID(), state: 'succeeded' as const, owner: randomUUID(), leaseMs: 60_000 })
    const [opener, keeper] = [lease(), lease()]
    await helper.claim(opener)
    await helper.claim(keeper)
    const opening = store.awaitLeaseEnd!(opener.exchangeNumber, 10_000)
    const keeping = store.awaitLeaseEnd!(keeper.exchangeNumber, 30_000)
    await helper.complete(opener)
    await opening
    return {
      close: async () => {
        await helper.release(keeper)
        await keeping
      },
    }
  }

  /**
   * The 99 is held by one receiver and the 00 waits for it on another; a duplicate of `duplicateOf` arrives on a
   * third, whose claims after the first wait until the approval holds the payment (the order these tests are about).
   */
  async function handover(duplicateOf: 'pending' | 'approved') {
    const pending = samplePaymentFields({ fpx_model: 'B2B1', fpx_debit_auth_code: '99', payment_status: 'false' })
    const approved = { ...pending, fpx_debit_auth_code: '00', payment_status: 'true' }
    const pendingHeld = opened()
    const pendingGate = opened()
    const approvedHeld = opened()
    const approvedGate = opened()
    const receiver = (store: ReceiverStore) => {
      const made = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store, logger: false })
      made.on('payment.pending', async () => {
        pendingHeld.open()
        await pendingGate.promise
      })
      made.on('payment.succeeded', async () => {
        approvedHeld.open()
        await approvedGate.promise
      })
      return made
    }
    const first = receiver(redisStore({ client: redis, prefix }))
    const third = receiver(redisStore({ client: redis, prefix }))
    const own = redisStore({ client: redis, prefix })
    const answered: string[] = []
    let firstBusyAt = 0
    const late: ReceiverStore = {
      ...own,
      claim: async (request) => {
        if (answered.length > 0) await approvedHeld.promise
        const claim = await own.claim(request)
        if (answered.length === 0) firstBusyAt = performance.now()
        answered.push(claim.outcome)
        return claim
      },
      awaitLeaseEnd: own.awaitLeaseEnd!.bind(own),
    }
    const second = receiver(late)
    const until = async (done: () => boolean) => {
      while (!done()) await new Promise((resolve) => setTimeout(resolve, 5))
    }
    const feed = await keepFeedOpen(own)

    const handling = deliver(first, pending)
    await pendingHeld.promise
    // The approval waits first, so that the duplicate's bounded wait (WAITS_FOR_HOLDER_MS from its first busy answer)
    // spans only the handovers below, not the approval's start as well: on a loaded machine that can take a while.
    const approval = deliver(third, approved)
    await new Promise((resolve) => setTimeout(resolve, 200))
    const duplicate = deliver(second, duplicateOf === 'pending' ? pending : approved)
    await until(() => answered.length === 1)
    pendingGate.open()
    await approvedHeld.promise
    if (duplicateOf === 'approved') await until(() => answered.length === 2)
    approvedGate.open()
    expect(await handling).toMatchObject({ status: 200, outcome: 'processed' })
    expect(await approval).toMatchObject({ status: 200, outcome: 'processed' })
    const answer = await duplicate
    const waited = performance.now() - firstBusyAt
    await feed.close()
    return { answer, answered, waited }
  }

  it("answers a duplicate 99 200 at the 99's completion, with no second claim", async () => {
    const { answer, answered } = await handover('pending')
    // The completion named the owner the busy claim found, and the duplicate's state: nothing left to ask.
    expect(answer).toMatchObject({ status: 200, outcome: 'duplicate' })
    expect(answered).toEqual(['busy'])
  })

  it("keeps waiting when the 00 takes the payment over from its 99, and answers the 00's duplicate at its completion", async () => {
    const { answer, answered, waited } = await handover('approved')
    if (answer.outcome === 'busy') {
      // Only a machine too loaded to hand the payment over twice within the bound may answer 409, and then only
      // once the whole wait is used: never at the first wake-up, as before.
      expect(waited).toBeGreaterThanOrEqual(WAITS_FOR_HOLDER_MS - 20)
    } else {
      // Woken at the 99's end (another state: it claims again), it found the 00 holding, and heard it complete.
      expect(answer).toMatchObject({ status: 200, outcome: 'duplicate' })
      expect(answered).toEqual(['busy', 'busy'])
    }
  })
})

describe("a store of the merchant's own whose wait resolves with a value", () => {
  it('only wakes the waiting delivery: the claim decides, and a released payment is handled, not acknowledged', async () => {
    // Two receivers as two processes on one store, whose wait passes on what its feed heard: the ended lease's state.
    const inner = memoryStore()
    const ends = new EventEmitter()
    const store: ReceiverStore = {
      ...inner,
      complete: async (completion) => {
        const done = await inner.complete(completion)
        ends.emit(completion.exchangeNumber, completion.state)
        return done
      },
      release: async (lease) => {
        const done = await inner.release(lease)
        ends.emit(lease.exchangeNumber, lease.state)
        return done
      },
      awaitLeaseEnd: (exchangeNumber, timeoutMs) =>
        new Promise((resolve) => {
          ends.once(exchangeNumber, resolve)
          setTimeout(resolve, timeoutMs)
        }),
    }
    const held = opened()
    const failing = opened()
    const first = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store, logger: false })
    first.on('payment.succeeded', async () => {
      held.open()
      await failing.promise
      throw new Error('the handler failed')
    })
    const second = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store, logger: false })
    const runs: string[] = []
    second.on('payment.succeeded', (event) => void runs.push(event.id))
    const fields = samplePaymentFields()
    const redirect = first.handle({ kind: 'redirect', ...signCallback(fields, TOKEN) })
    await held.promise
    const callback = second.handle({ kind: 'callback', ...signCallback(fields, TOKEN) })
    await new Promise((resolve) => setTimeout(resolve, 50))
    failing.open()
    expect(await redirect).toMatchObject({ status: 500, error: { code: 'handler_failed' } })
    // The release's 'succeeded' woke the callback, which claimed again and ran the handler: nothing was recorded yet.
    expect(await callback).toMatchObject({ status: 200, outcome: 'processed' })
    expect(runs).toEqual([`${fields.exchange_number as string}:succeeded`])
  })
})

describe('a store that answers a claim too late', () => {
  it('answers 503 store_unavailable, and gives the late claim back so that the next delivery is not kept waiting', async () => {
    const store = memoryStore()
    let slow = true
    let landed: Promise<unknown> = Promise.resolve()
    const late: ReceiverStore = {
      ...store,
      claim: async (request) => {
        if (slow) await (landed = new Promise((resolve) => setTimeout(resolve, 300)))
        return store.claim(request)
      },
    }
    // A lease of 200 ms: each store call gets 100.
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store: late, leaseMs: 200, logger: false })
    const runs: string[] = []
    receiver.onAny((event) => void runs.push(event.id))
    const fields = samplePaymentFields()
    const delivery = () => receiver.handle({ kind: 'callback', ...signCallback(fields, TOKEN) })
    expect(await delivery()).toMatchObject({ status: 503, error: { code: 'store_unavailable' } })
    slow = false
    // The late claim lands at 300 ms and is released; the lease would otherwise hold until 500.
    await landed
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(await delivery()).toMatchObject({ status: 200, outcome: 'processed' })
    expect(runs).toEqual([`${fields.exchange_number as string}:succeeded`])
  })
})
