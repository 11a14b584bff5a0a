import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createClient, type FpxClient } from '../../src/client/index.js'
import { createReceiver, type PaymentEvent, type Receiver, type ReceiverOptions, type SweepOptions } from '../../src/index.js'
import { DEMO, type Emulator, launch, paymentInput } from '../client/helpers.js'
import { BOOK_STORES } from './book-stores.js'
import { type CallbackCapture, captureCallbacks } from './callback-capture.js'

const FORM = 'application/x-www-form-urlencoded'
const FAST: SweepOptions = { inProcess: false, firstLookupAfterMs: 1, backoff: { baseMs: 20, maxMs: 40 }, abandonAfterMs: 60_000, maxLookupsPerMinute: 60_000 }
/** A second merchant of the same receiver (a partner's): its own API UID, Auth Token and Checksum Token. */
const OTHER = { uid: '11111111-2222-4333-8444-555555555555', authToken: 'OtherAuthToken000000', checksumToken: 'ab'.repeat(32) }
const TOKENS: Record<string, string> = { [DEMO.uid]: DEMO.checksumToken, [OTHER.uid]: OTHER.checksumToken }

/** How a receiver serving both merchants knows their Checksum Tokens: configured sets, or looked up by uid. */
const KEYS = [
  { keys: 'credentials', options: { credentials: [DEMO, OTHER].map(({ uid, checksumToken }) => ({ uid, checksumToken })) } },
  { keys: 'resolveChecksumToken', options: { resolveChecksumToken: (uid: string) => TOKENS[uid] } },
] as const

const CASES = BOOK_STORES.flatMap((store) => KEYS.map((keys) => ({ ...store, ...keys })))

/**
 * Order numbers are unique per merchant only (spec: "Merchant-generated unique"): two merchants of one receiver may
 * each create the same one, and each one's genuine results must be handled, checked against its own record.
 */
describe.each(CASES)('two merchants recording one order_number ($name store, $keys)', ({ make, options }) => {
  let emulator: Emulator
  let capture: CallbackCapture
  let opened: Awaited<ReturnType<(typeof BOOK_STORES)[number]['make']>>
  let receiver: Receiver<unknown>
  let events: PaymentEvent<unknown>[]
  let clientOf: (credentials: typeof DEMO) => FpxClient

  beforeAll(async () => {
    capture = await captureCallbacks()
    emulator = await launch({
      config: { merchants: [{ name: 'Kedai A', credentials: [DEMO] }, { name: 'Kedai B', credentials: [OTHER] }], partners: [] },
      delivery: { attempts: 1, initialDelayMs: 1, maxDelayMs: 1, timeoutMs: 2000 },
    })
  })
  afterAll(async () => {
    await emulator.stop()
    await capture.close()
  })
  beforeEach(async () => {
    await emulator.control('/reset', {})
    opened = await make()
    const api = (credentials: typeof DEMO) => createClient({ environment: { baseUrl: emulator.baseUrl }, ...credentials, logger: false })
    const apis: Record<string, FpxClient> = { [DEMO.uid]: api(DEMO), [OTHER.uid]: api(OTHER) }
    receiver = createReceiver({
      ...options,
      store: opened.store,
      client: (credential) => apis[credential?.uid ?? DEMO.uid] as FpxClient,
      signatureOnly: true,
      logger: false as never,
      sweep: FAST,
    } as ReceiverOptions<unknown>)
    events = []
    for (const name of ['payment.succeeded', 'payment.failed'] as const) receiver.on(name, (event) => void events.push(event))
    clientOf = (credentials) => createClient({ environment: { baseUrl: emulator.baseUrl }, ...credentials, book: receiver, logger: false })
  })
  afterEach(async () => {
    await receiver.close()
    await opened.close()
  })

  it("handles each merchant's result against its own record, and find tells them apart", async () => {
    const input = paymentInput({ transaction_amount: '10.00', callback_url: capture.url })
    const mine = await clientOf(DEMO).createPayment(input)
    const theirs = await clientOf(OTHER).createPayment({ ...input, transaction_amount: '20.00' })
    await emulator.complete(theirs.exchangeNumber as string, 'approve')
    const [body] = await capture.bodies(theirs.exchangeNumber as string, 1)
    const answer = await receiver.handle({ kind: 'callback', body: body as string, contentType: FORM })
    expect(answer.outcome, JSON.stringify(answer.error)).toBe('processed')
    expect(events.map((event) => [event.booked?.uid, event.booked?.amountSen])).toEqual([[OTHER.uid, 2000]])
    expect(await receiver.payments.find(input.order_number, { uid: OTHER.uid })).toMatchObject({ status: 'succeeded', amountSen: 2000 })
    expect(await receiver.payments.find(input.order_number, { uid: DEMO.uid })).toMatchObject({ status: 'open', amountSen: 1000 })
    // Without uid: the one created last.
    expect(await receiver.payments.find(input.order_number)).toMatchObject({ uid: OTHER.uid })

    await emulator.complete(mine.exchangeNumber as string, 'approve')
    const [myBody] = await capture.bodies(mine.exchangeNumber as string, 1)
    expect((await receiver.handle({ kind: 'callback', body: myBody as string, contentType: FORM })).outcome).toBe('processed')
    expect(events.map((event) => [event.booked?.uid, event.booked?.amountSen])).toEqual([
      [OTHER.uid, 2000],
      [DEMO.uid, 1000],
    ])
    expect(await receiver.payments.listOpen()).toEqual([])
  })

  it('a result of a merchant that did not record the order is handled as unrecorded, not refused', async () => {
    const input = paymentInput({ transaction_amount: '10.00', callback_url: capture.url })
    await clientOf(DEMO).createPayment(input)
    // Merchant B created the same order_number without a book.
    const theirs = await createClient({ environment: { baseUrl: emulator.baseUrl }, ...OTHER, logger: false }).createPayment({ ...input, transaction_amount: '20.00' })
    await emulator.complete(theirs.exchangeNumber as string, 'approve')
    const [body] = await capture.bodies(theirs.exchangeNumber as string, 1)
    expect((await receiver.handle({ kind: 'callback', body: body as string, contentType: FORM })).outcome).toBe('processed')
    expect(events.map((event) => event.booked)).toEqual([undefined])
    expect(await receiver.payments.find(input.order_number, { uid: DEMO.uid })).toMatchObject({ status: 'open' })
  })

  it("sweeps the second merchant's payment of a shared order_number and closes it", async () => {
    const input = paymentInput({ transaction_amount: '10.00', callback_url: capture.url })
    await clientOf(DEMO).createPayment(input)
    await emulator.control('/faults', { lose_results: 1 })
    const theirs = await clientOf(OTHER).createPayment({ ...input, transaction_amount: '20.00' })
    await emulator.complete(theirs.exchangeNumber as string, 'approve')
    const report = await receiver.sweep()
    expect(report).toMatchObject({ processed: 1, closed: 1, failures: 0 })
    expect(events.map((event) => [event.booked?.uid, event.delivery])).toEqual([[OTHER.uid, 'reconcile']])
    expect(await receiver.payments.find(input.order_number, { uid: OTHER.uid })).toMatchObject({ status: 'succeeded' })
    expect(await receiver.payments.find(input.order_number, { uid: DEMO.uid })).toMatchObject({ status: 'open', lookups: 1 })
  })
})
