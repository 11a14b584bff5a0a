import { describe, expect, it, vi } from 'vitest'
import { createReceiver, type Logger, memoryStore, type Receiver, type ReceiverStore, type TimelineEntry } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

const TOKEN = 'ab'.repeat(32)
const OTHER_TOKEN = 'cd'.repeat(32)

function collectingLogger(): Logger & { lines: { level: string; details: object; message: string }[] } {
  const lines: { level: string; details: object; message: string }[] = []
  const at = (level: string) => (details: object, message: string) => void lines.push({ level, details, message })
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
}

function deliver(receiver: Receiver, fields: Record<string, unknown>, options: { token?: string; lazy?: boolean } = {}) {
  const signed = signCallback(fields as never, options.token ?? TOKEN)
  if (options.lazy) return receiver.handle({ kind: 'callback', readBody: async () => signed.body, contentType: signed.contentType })
  return receiver.handle({ kind: 'callback', body: Buffer.from(signed.body), contentType: signed.contentType })
}

const events = (entries: TimelineEntry[]) => entries.map((entry) => entry.event)
/** Past the 200 ms the receiver lets timeline entries wait for others to share their write (receiver/timeline.ts). */
const pastWriteWindow = () => new Promise((resolve) => setTimeout(resolve, 300))

describe('receiver.timeline', () => {
  it('keeps every entry of a loop of deliveries that never yields to timers (reconciliation over the memory store)', async () => {
    const logger = collectingLogger()
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, logger })
    receiver.on('payment.succeeded', () => {})
    const sample = samplePaymentFields() as Record<string, string>
    const numbers = Array.from({ length: 4000 }, (_, i) => `LOOP${String(i).padStart(10, '0')}`)
    for (const exchange_number of numbers) expect((await receiver.handleTrusted({ ...sample, exchange_number, order_number: `O-${exchange_number}` })).outcome).toBe('processed')
    expect(logger.lines.filter((line) => line.level === 'error')).toEqual([])
    for (const exchangeNumber of [numbers[0] as string, numbers[3999] as string]) expect(events(await receiver.timeline({ exchangeNumber }))).toEqual(['received', 'verified', 'processed'])
  })

  it('records received, verified and the outcome of each delivery, findable by order_number and exchange_number', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    let fail = true
    receiver.on('payment.succeeded', () => {
      if (fail) throw new Error('the ERP is down')
    })
    const fields = samplePaymentFields()
    expect(await deliver(receiver, fields)).toMatchObject({ status: 500, outcome: 'failed' })
    fail = false
    expect(await deliver(receiver, fields)).toMatchObject({ status: 200, outcome: 'processed' })
    expect(await deliver(receiver, fields)).toMatchObject({ status: 200, outcome: 'duplicate' })

    const byOrder = await receiver.timeline(String(fields.order_number))
    expect(events(byOrder)).toEqual(['received', 'verified', 'handler_failed', 'received', 'verified', 'processed', 'received', 'verified', 'duplicate'])
    expect(await receiver.timeline({ exchangeNumber: String(fields.exchange_number) })).toEqual(byOrder)
    expect(await receiver.timeline({ orderNumber: String(fields.order_number) })).toEqual(byOrder)
    for (const entry of byOrder)
      expect(entry).toMatchObject({
        exchangeNumber: fields.exchange_number,
        orderNumber: fields.order_number,
        state: 'succeeded',
        source: 'callback',
        verified: true,
      })
    // One attempt id per delivery, three entries each.
    expect(new Set(byOrder.map((entry) => entry.attempt)).size).toBe(3)
    expect(byOrder[2]).toMatchObject({ code: 'handler_failed', status: 500 })
    // Why the handler failed, for the operator (never part of the answer the sender gets).
    expect(byOrder[2]?.message).toMatch(/\. Error: the ERP is down$/)
    expect(byOrder[5]).toMatchObject({ code: null, status: 200 })
    expect(byOrder[0]!.at.getTime()).toBeLessThanOrEqual(byOrder[8]!.at.getTime())
    // The memory store keeps a delivery's attempt and times compactly; they read back whole and in order.
    for (let i = 0; i < 9; i += 3) {
      const [received, verified, outcome] = byOrder.slice(i, i + 3) as [TimelineEntry, TimelineEntry, TimelineEntry]
      expect(received.attempt).toMatch(/^[0-9a-f]{8}-\d+$/)
      expect([verified.attempt, outcome.attempt]).toEqual([received.attempt, received.attempt])
      expect(received.at.getTime()).toBeLessThanOrEqual(verified.at.getTime())
      expect(verified.at.getTime()).toBeLessThanOrEqual(outcome.at.getTime())
    }
  })

  it('adds entries to a payment whose only record so far is one delivery, and keeps both', async () => {
    const store = memoryStore()
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store })
    receiver.onAny(() => {})
    const fields = samplePaymentFields()
    expect(await deliver(receiver, fields)).toMatchObject({ outcome: 'processed' })
    await receiver.flush()
    const later: TimelineEntry = {
      at: new Date(Date.now() + 1000),
      event: 'dead_lettered',
      exchangeNumber: String(fields.exchange_number),
      orderNumber: String(fields.order_number),
      state: 'succeeded',
      source: 'inbox',
      attempt: 'inbox-1',
      verified: true,
      code: null,
      status: null,
      message: 'given up',
    }
    await store.appendTimeline!([later])
    for (const query of [String(fields.order_number), { exchangeNumber: String(fields.exchange_number) }])
      expect(events(await receiver.timeline(query))).toEqual(['received', 'verified', 'processed', 'dead_lettered'])
  })

  it('records stale results and reconciled records', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    receiver.onAny(() => {})
    const fields = samplePaymentFields({ fpx_model: 'B2B1' })
    expect(await deliver(receiver, fields)).toMatchObject({ outcome: 'processed' })
    const pending = { ...fields, payment_status: 'false', fpx_debit_auth_code: '99', fpx_status: 'false', transaction_amount_received: '0.00' }
    expect(await deliver(receiver, pending)).toMatchObject({ outcome: 'stale' })
    expect(await receiver.handleTrusted(fields)).toMatchObject({ outcome: 'duplicate' })
    const entries = await receiver.timeline(String(fields.order_number))
    expect(events(entries).filter((event) => !['received', 'verified'].includes(event))).toEqual(['processed', 'stale', 'duplicate'])
    expect(entries.find((entry) => entry.event === 'stale')).toMatchObject({ state: 'pending', status: 200 })
    expect(entries.at(-1)).toMatchObject({ source: 'reconcile' })
  })

  it('files a refused delivery under the numbers its body claims, marked unverified, also when the body is read lazily', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    receiver.onAny(() => {})
    const fields = samplePaymentFields()
    expect(await deliver(receiver, fields, { token: OTHER_TOKEN })).toMatchObject({ status: 401 })
    expect(await deliver(receiver, fields, { token: OTHER_TOKEN, lazy: true })).toMatchObject({ status: 401 })
    const refused = await receiver.timeline({ exchangeNumber: String(fields.exchange_number) })
    expect(events(refused)).toEqual(['received', 'refused', 'received', 'refused'])
    for (const entry of refused)
      expect(entry).toMatchObject({ verified: false, state: null, orderNumber: fields.order_number, exchangeNumber: fields.exchange_number })
    expect(refused[1]).toMatchObject({ code: 'checksum_mismatch', status: 401 })
    // The genuine delivery that follows is told apart by `verified`.
    expect(await deliver(receiver, fields, { lazy: true })).toMatchObject({ status: 200 })
    const all = await receiver.timeline(String(fields.order_number))
    expect(all.map((entry) => `${entry.event}:${entry.verified}`)).toEqual([
      'received:false',
      'refused:false',
      'received:false',
      'refused:false',
      'received:true',
      'verified:true',
      'processed:true',
    ])
  })

  it('orders a refusal and the deliveries after it as they came, also within one millisecond', async () => {
    // Every delivery in the same millisecond: only the receiver's own sequence can tell their order.
    const now = vi.spyOn(Date, 'now').mockReturnValue(Date.parse('2026-01-01T00:00:00Z'))
    try {
      const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
      receiver.onAny(() => {})
      const fields = samplePaymentFields()
      expect(await deliver(receiver, fields, { token: OTHER_TOKEN })).toMatchObject({ status: 401 })
      expect(await deliver(receiver, fields)).toMatchObject({ status: 200 })
      expect(await deliver(receiver, fields, { token: OTHER_TOKEN })).toMatchObject({ status: 401 })
      expect(await deliver(receiver, fields)).toMatchObject({ status: 200 })
      const all = await receiver.timeline(String(fields.order_number))
      expect(all.map((entry) => `${entry.event}:${entry.verified}`)).toEqual([
        'received:false',
        'refused:false',
        'received:true',
        'verified:true',
        'processed:true',
        'received:false',
        'refused:false',
        'received:true',
        'verified:true',
        'duplicate:true',
      ])
    } finally {
      now.mockRestore()
    }
  })

  it('records nothing for a refusal that names no payment, and nothing when turned off', async () => {
    const store = memoryStore()
    const appended: unknown[] = []
    const watched: ReceiverStore = { ...store, appendTimeline: async (entries) => void appended.push(...entries) }
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store: watched })
    expect(await receiver.handle({ kind: 'callback', body: 'a=1', contentType: 'application/x-www-form-urlencoded' })).toMatchObject({ status: 401 })
    expect(await receiver.handle({ kind: 'callback', body: '', contentType: 'application/x-www-form-urlencoded' })).toMatchObject({ status: 400 })
    await pastWriteWindow()
    expect(appended).toEqual([])

    const off = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store: watched, timeline: false })
    off.onAny(() => {})
    expect(await deliver(off, samplePaymentFields())).toMatchObject({ status: 200 })
    await pastWriteWindow()
    expect(appended).toEqual([])
    await expect(off.timeline('ORD-1')).rejects.toThrow(/timeline: false/)
  })

  it('answers without waiting for the timeline write, and logs a failed write', async () => {
    const logger = collectingLogger()
    const store = memoryStore()
    let writes = 0
    // A store whose timeline never finishes writing, then one that fails.
    const hanging: ReceiverStore = { ...store, appendTimeline: () => (writes++ === 0 ? new Promise<void>(() => {}) : Promise.reject(new Error('disk full'))) }
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store: hanging, logger })
    receiver.onAny(() => {})
    expect(await deliver(receiver, samplePaymentFields())).toMatchObject({ status: 200, outcome: 'processed' })
    await pastWriteWindow()
    expect(writes).toBe(1)

    const failing: ReceiverStore = { ...store, appendTimeline: () => Promise.reject(new Error('disk full')) }
    const second = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store: failing, logger })
    second.onAny(() => {})
    expect(await deliver(second, samplePaymentFields())).toMatchObject({ status: 200, outcome: 'processed' })
    await pastWriteWindow()
    const failure = logger.lines.find((line) => line.level === 'error' && /timeline entries/.test(line.message))
    expect(failure).toMatchObject({ details: { entries: 3 } })
    expect((failure!.details as { err: Error }).err.message).toBe('disk full')
  })

  it('writes what arrives while the store is busy with a batch as one next batch, and flush() waits for all of it', async () => {
    const store = memoryStore()
    const own = store.appendTimeline!
    const batches: number[] = []
    let open: () => void = () => {}
    const gate = new Promise<void>((resolve) => (open = resolve))
    store.appendTimeline = async (entries) => {
      batches.push(entries.length)
      if (batches.length === 1) await gate
      await own(entries)
    }
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store })
    receiver.onAny(() => {})
    const first = samplePaymentFields()
    expect(await deliver(receiver, first)).toMatchObject({ outcome: 'processed' })
    await pastWriteWindow()
    expect(batches).toEqual([3])
    // Five deliveries in separate turns of the event loop while the first write is out: each would have been a
    // write of its own, one after another.
    const later = Array.from({ length: 5 }, () => samplePaymentFields())
    for (const fields of later) {
      expect(await deliver(receiver, fields)).toMatchObject({ outcome: 'processed' })
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    expect(batches).toEqual([3])
    const flushed = receiver.flush()
    open()
    await flushed
    expect(batches).toEqual([3, 15])
    for (const fields of [first, ...later]) expect(events(await receiver.timeline(String(fields.order_number)))).toEqual(['received', 'verified', 'processed'])
  })

    it('writes the deliveries of a moment together, and flush() writes at once', async () => {
    const store = memoryStore()
    const own = store.appendTimeline!
    const batches: number[] = []
    store.appendTimeline = async (entries) => {
      batches.push(entries.length)
      await own(entries)
    }
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store })
    receiver.onAny(() => {})
    // Three deliveries in separate turns of the event loop, well within the window: one write of all their entries.
    for (let i = 0; i < 3; i++) {
      expect(await deliver(receiver, samplePaymentFields())).toMatchObject({ outcome: 'processed' })
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    expect(batches).toEqual([])
    await pastWriteWindow()
    expect(batches).toEqual([9])
    // flush() does not wait for the window.
    expect(await deliver(receiver, samplePaymentFields())).toMatchObject({ outcome: 'processed' })
    await receiver.flush()
    expect(batches).toEqual([9, 3])
  })

it('says clearly when a custom store keeps no timeline, and still handles deliveries', async () => {
    const store = memoryStore()
    const plain: ReceiverStore = { claim: store.claim, complete: store.complete, release: store.release }
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store: plain })
    receiver.onAny(() => {})
    expect(await deliver(receiver, samplePaymentFields())).toMatchObject({ status: 200 })
    await expect(receiver.timeline('ORD-1')).rejects.toThrow(/this store keeps no timeline: it has no readTimeline\(\)/)
    await expect(createReceiver({ signatureOnly: true, checksumToken: TOKEN }).timeline({} as never)).rejects.toThrow(TypeError)
  })
  it('hands the entries to an appendTimeline that replaced the memory store’s own, which keeps deliveries whole otherwise', async () => {
    const store = memoryStore()
    const own = store.appendTimeline!
    const seen: TimelineEntry[] = []
    // Replaced on the store object itself (not a { ...store } copy): the store's internal path must not bypass it.
    store.appendTimeline = async (entries) => {
      seen.push(...entries)
      await own(entries)
    }
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store })
    receiver.onAny(() => {})
    const fields = samplePaymentFields()
    expect(await deliver(receiver, fields)).toMatchObject({ outcome: 'processed' })
    await receiver.flush()
    expect(events(seen)).toEqual(['received', 'verified', 'processed'])
    expect(await receiver.timeline(String(fields.order_number))).toEqual(seen)

    // The memory store's own path gives the same entries.
    const plain = createReceiver({ signatureOnly: true, checksumToken: TOKEN, store: memoryStore() })
    plain.onAny(() => {})
    expect(await deliver(plain, fields)).toMatchObject({ outcome: 'processed' })
    const kept = await plain.timeline({ exchangeNumber: String(fields.exchange_number) })
    expect(kept.map(({ at: _at, attempt: _attempt, ...entry }) => entry)).toEqual(seen.map(({ at: _at, attempt: _attempt, ...entry }) => entry))
    for (const entry of kept) expect(entry.at).toBeInstanceOf(Date)
  })
})
