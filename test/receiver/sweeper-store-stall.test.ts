/**
 * A store or API client that never answers one call (a paused server, a client with no time-out) must not stop the
 * sweeper for good: the pass waiting for it held `running` and the lock (renewed by its heartbeat), so no later pass
 * ran in any process sharing the store, and a paid payment whose results were lost was never found. Each call is
 * bounded (src/receiver/sweeper.ts); the pass fails, and the next one sweeps again. close() ends too.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createReceiver, memoryStore, type Receiver, type ReceiverOptions, type ReceiverStore } from '../../src/index.js'
import { samplePaymentFields } from '../../src/testing.js'
import { stalling } from './never-answers.js'

const TOKEN = 'cd'.repeat(32)
const UID = '6f1c2a4e-8b3d-4f7a-9c2e-1d5b7a9e3f10'
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Resolves `'ended'` when `promise` settles within `ms`, else `'still waiting'`. */
const within = (promise: Promise<unknown>, ms: number) =>
  Promise.race([promise.then(() => 'ended', () => 'ended'), pause(ms).then(() => 'still waiting')])

async function until(condition: () => boolean, ms: number): Promise<boolean> {
  for (const start = Date.now(); !condition(); await pause(10)) if (Date.now() - start > ms) return false
  return true
}

type Part = 'book' | 'lock' | 'client'
const CASES: [Part, string, number][] = [
  ['lock', 'acquire', 1],
  ['lock', 'renew', 2],
  ['lock', 'notePass', 1],
  ['book', 'listOpen', 1],
  ['book', 'summary', 1],
  ['book', 'find', 1],
  ['book', 'noteLookup', 1],
  ['client', 'searchTransactions', 1],
  ['client', 'transactions', 1],
]

const made: Receiver<unknown>[] = []
afterEach(async () => {
  // Bounded here too: a receiver whose close() hangs must not hold the test run.
  await Promise.all(made.splice(0).map((receiver) => within(receiver.close(), 5000)))
})

describe('the in-process sweeper when one store or API call never answers', () => {
  it.each(CASES)('%s.%s: the pass fails, later passes still run, and close() ends', async (part, method, times) => {
    const real = memoryStore() as ReceiverStore<unknown>
    const realBook = real.paymentBook?.()
    const realLock = real.sweepLock?.()
    if (realBook === undefined || realLock === undefined) throw new Error('the memory store has a book and a lock')
    const stalled = stalling({ book: realBook, lock: realLock, client: {} }[part] as object, method, 1, times)
    // Every pass reads the open payments first: their count is how the test sees passes run.
    const passes = stalling(part === 'book' ? (stalled.object as typeof realBook) : realBook, 'listOpen', Infinity)
    const lock = part === 'lock' ? (stalled.object as typeof realLock) : realLock
    const store = { ...real, paymentBook: () => passes.object, sweepLock: () => lock } as ReceiverStore<unknown>
    // The API shows nothing yet: the payment stays open and is due again at each pass.
    const apiClient = { searchTransactions: async () => [], transactions: async () => ({ transactions: [], next_page: null, total_page: 1 }) }
    const client = part === 'client' ? stalling(apiClient, method, 1, times) : undefined
    const logged: string[] = []
    const log = (details: object, message: string) => {
      const err = (details as { err?: unknown }).err
      logged.push(`${message}: ${err instanceof Error ? err.message : String(err)}`)
    }
    const receiver = createReceiver({
      credentials: { uid: UID, checksumToken: TOKEN },
      client: client?.object ?? apiClient,
      store,
      logger: { debug: () => {}, info: () => {}, warn: log, error: log },
      sweep: { everyMs: 100, lockMs: 400, firstLookupAfterMs: 1, backoff: { baseMs: 20, maxMs: 40 }, maxLookupsPerMinute: 60_000 },
    } as ReceiverOptions<unknown>)
    made.push(receiver)
    const fields = samplePaymentFields()
    await receiver.payments.record({ orderNumber: fields.order_number as string, amountSen: 10_020, uid: UID, kind: 'payment', createdAt: new Date(Date.now() - 60_000), exchangeNumber: null, attached: {} })
    const calls = (client ?? stalled).calls
    expect(await until(() => calls() >= 1, 3000)).toBe(true)
    const before = passes.calls()
    // With the call unbounded, the pass waiting for it never ended and no pass came after it.
    expect(await until(() => passes.calls() >= before + 3, 5000)).toBe(true)
    // Logged with its cause: the store's time-out with its message, the API's by its kind alone (an API's error
    // may echo the credentials, so none of its messages is logged).
    expect(logged.some((line) => /did not answer within|TimeoutError/.test(line))).toBe(true)
    expect(await within(receiver.close(), 3000)).toBe('ended')
  })
})

describe('close() while a sweep pass hands a result to a handler that never returns', () => {
  it('ends after the lock\'s lease, not the hand-over\'s, and says what it left', async () => {
    const fields = samplePaymentFields()
    const record = { ...fields, payment_status: true, interface_uid: UID }
    const logged: string[] = []
    const log = (_details: object, message: string) => logged.push(message)
    const receiver = createReceiver({
      credentials: { uid: UID, checksumToken: TOKEN },
      client: { searchTransactions: async () => [record] },
      store: memoryStore(),
      // The hand-over is given twice the lease: 10 s here, well past the 3 s this test waits for close().
      leaseMs: 5000,
      logger: { debug: () => {}, info: () => {}, warn: log, error: log },
      sweep: { inProcess: false, lockMs: 400, firstLookupAfterMs: 1, maxLookupsPerMinute: 60_000 },
    } as ReceiverOptions)
    made.push(receiver as Receiver<unknown>)
    let entered = false
    receiver.on('payment.succeeded', async () => {
      entered = true
      await new Promise(() => {})
    })
    await receiver.payments.record({ orderNumber: fields.order_number as string, amountSen: 10_020, uid: UID, kind: 'payment', createdAt: new Date(Date.now() - 60_000), exchangeNumber: null, attached: {} })
    void receiver.sweep()
    expect(await until(() => entered, 3000)).toBe(true)
    expect(await within(receiver.close(), 3000)).toBe('ended')
    expect(logged.some((line) => line.includes('sweep pass'))).toBe(true)
  })
})
