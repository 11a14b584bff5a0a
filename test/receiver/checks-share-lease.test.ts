/**
 * The steps between a claim and its handlers (the API's confirmation, the store's "paid meanwhile?" and the merchant's
 * `expect` hook) were each bounded by half the lease, but not together: three slow answers, each within its own bound,
 * took the delivery past its lease before any handler ran. A duplicate on another receiver sharing the store then
 * claimed the expired lease and ran payment.failed, and the first delivery ran it again. They now share one budget of
 * half the lease from the claim, so the handlers keep the other half.
 */
import { describe, expect, it } from 'vitest'
import { createReceiver, memoryStore, type ReceiverStore } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

const TOKEN = 'ab'.repeat(32)
const LEASE_MS = 1_000
/** Each slow answer: within half the lease on its own, past the lease together. */
const SLOW_MS = 450
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** The real memory store, whose first answer to `paidBy` is slow (a busy store server). */
function slowFirstPaidBy(store: ReceiverStore<unknown>): ReceiverStore<unknown> {
  let asked = 0
  const paidBy: NonNullable<ReceiverStore<unknown>['paidBy']> = async (request) => {
    if (asked++ === 0) await sleep(SLOW_MS)
    return store.paidBy!(request)
  }
  return new Proxy(store, {
    get(target, name) {
      if (name === 'paidBy') return paidBy
      const value = Reflect.get(target, name, target) as unknown
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
    },
  })
}

describe('the checks before the handlers', () => {
  it('leave the handlers half the lease, so a slow API, store and expect hook never run a handler twice', async () => {
    const fields = samplePaymentFields({ payment_status: 'false', fpx_status: 'false', fpx_status_message: 'Declined', payment_stage: 'payment_failed' })
    let searches = 0
    const client = {
      async searchTransactions(_by: string, value: string) {
        if (searches++ === 0) await sleep(SLOW_MS)
        return value === fields.exchange_number ? [{ ...fields, payment_status: false }] : []
      },
    }
    let expects = 0
    const expectHook = async () => {
      if (expects++ === 0) await sleep(SLOW_MS)
      return undefined
    }
    const shared = slowFirstPaidBy(memoryStore() as ReceiverStore<unknown>)
    const runs: string[] = []
    const receivers = [0, 1].map(() => {
      const receiver = createReceiver({ client, checksumToken: TOKEN, store: shared, leaseMs: LEASE_MS, expect: expectHook, logger: false, timeline: false } as never)
      receiver.on('payment.failed', (event) => void runs.push(event.id))
      return receiver
    })
    const signed = signCallback(fields, TOKEN)
    const delivery = { kind: 'callback' as const, body: Buffer.from(signed.body), contentType: signed.contentType }
    const first = receivers[0]!.handle(delivery)
    // The service's retry, on another process, once the first delivery's lease has run out.
    await sleep(LEASE_MS + 100)
    const second = await receivers[1]!.handle(delivery)
    const answers = [await first, second].map((answer) => answer.error?.code ?? answer.outcome)
    await Promise.all(receivers.map((receiver) => receiver.close()))
    expect(runs).toHaveLength(1)
    // The first ran out of its budget before its handlers: a fault on our side the sender retries, not a refusal.
    expect(answers).toEqual(['store_unavailable', 'processed'])
  })
})
