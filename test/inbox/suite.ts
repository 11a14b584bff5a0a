import { randomUUID } from 'node:crypto'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createReceiver, type PaymentEvent, type PaymentState, type Receiver, type ReceiverStore } from '../../src/index.js'
import type { InboxOptions } from '../../src/inbox/inbox.js'
import type { InboxQueue, TakenEntry } from '../../src/contract/inbox-queue.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

export const TOKEN = 'ef'.repeat(32)
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export type InboxStore = ReceiverStore<unknown> & { openInbox(): InboxQueue }

export interface InboxSubject {
  name: string
  /** A store on its own connection (as another process would have), sharing the inbox with the others. */
  open(): Promise<{ store: InboxStore; close(): Promise<void> }>
  /** The store's clock counts milliseconds (PGlite's): entries of one millisecond cannot be told apart by time. */
  coarseClock?: boolean
}

const STATUS = { succeeded: { payment_status: 'true' }, failed: { payment_status: 'false' }, pending: { payment_status: 'false', fpx_debit_auth_code: '99' } }

export function fieldsFor(exchangeNumber: string, state: PaymentState, orderNumber = `ORD-${exchangeNumber.slice(-8)}`) {
  const extra = state === 'succeeded' ? { fpx_debit_auth_code: '00' } : state === 'failed' ? { fpx_debit_auth_code: '51' } : {}
  return samplePaymentFields({ exchange_number: exchangeNumber, order_number: orderNumber, ...STATUS[state], ...extra })
}

export function deliver(receiver: Receiver<unknown>, exchangeNumber: string, state: PaymentState, orderNumber?: string) {
  const signed = signCallback(fieldsFor(exchangeNumber, state, orderNumber), TOKEN)
  return receiver.handle({ kind: 'callback', body: Buffer.from(signed.body), contentType: signed.contentType })
}

/** Polls `check` until it holds or `ms` passes; returns whether it held. */
export async function eventually(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<boolean> {
  const until = Date.now() + ms
  while (Date.now() < until) {
    if (await check()) return true
    await sleep(25)
  }
  return check()
}

// INBOX_DEBUG=1 shows what the receivers log.
const debugLogger = process.env.INBOX_DEBUG
  ? { debug() {}, info: (details: unknown, message: string) => console.log(message, details), warn: (details: unknown, message: string) => console.log(message, details), error: (details: unknown, message: string) => console.log(message, details) }
  : false

const FAST: InboxOptions = { pollMs: 50, backoff: { baseMs: 50, maxMs: 200 }, maxAttempts: 5 }

export function inboxSuite(subject: InboxSubject): void {
  describe(`${subject.name}: inbox mode`, () => {
    const closers: (() => Promise<void>)[] = []
    const receivers: Receiver<unknown>[] = []
    let queue: InboxQueue
    beforeAll(async () => {
      const { store, close } = await subject.open()
      closers.push(close)
      queue = store.openInbox()
    })
    // Every receiver's workers share the inbox: stopped after each test, so none runs the next test's entries;
    // then their stores' connections are closed.
    const testClosers: (() => Promise<void>)[] = []
    afterEach(async () => {
      const stopping = receivers.splice(0)
      await Promise.all(stopping.map((receiver) => receiver.inbox.stop()))
      await Promise.all(stopping.map((receiver) => receiver.flush()))
      for (const close of testClosers.splice(0)) await close()
    })
    afterAll(async () => {
      for (const close of closers) await close()
    })

    /** A receiver on a store of its own; `runs` records every handler call. */
    async function receiver(options: InboxOptions = FAST, handler?: (event: PaymentEvent<unknown>) => void | Promise<void>) {
      const { store, close } = await subject.open()
      testClosers.push(close)
      const runs: string[] = []
      const created = createReceiver<unknown>({ checksumToken: TOKEN, signatureOnly: true, store, leaseMs: 5_000, inbox: options, logger: debugLogger })
      for (const name of ['payment.succeeded', 'payment.failed', 'payment.pending'] as const)
        created.on(name, async (event) => {
          await handler?.(event)
          runs.push(event.id)
        })
      receivers.push(created)
      return { receiver: created, runs }
    }
    const exchange = () => `EX-${randomUUID()}`

    it('answers 200 as soon as the result is written, and runs the handlers from the inbox once', async () => {
      let release!: () => void
      const gate = new Promise<void>((resolve) => (release = resolve))
      const { receiver: r, runs } = await receiver(FAST, () => gate)
      const ex = exchange()
      const response = await deliver(r, ex, 'succeeded')
      expect(response).toMatchObject({ status: 200, outcome: 'queued', body: 'OK' })
      expect(runs).toEqual([])
      // A redelivery while the first is queued or running adds nothing. Awaited once the handler may return: the
      // receiver makes a present entry due again (queue.retry), and with PGlite in transactional mode the store's
      // one session is the running handler's until it returns.
      const again = deliver(r, ex, 'succeeded')
      release()
      expect((await again).outcome).toBe('queued')
      expect(await eventually(async () => runs.length === 1 && (await queue.show(ex)).length === 0)).toBe(true)
      expect(runs).toEqual([`${ex}:succeeded`])
      // After it was handled, a redelivery is queued again and found a duplicate: the handler does not run.
      await deliver(r, ex, 'succeeded')
      expect(await eventually(async () => (await queue.show(ex)).length === 0)).toBe(true)
      expect(runs).toEqual([`${ex}:succeeded`])
    })

    it('retries a failing handler with backoff, keeping the error for operators, until it succeeds', async () => {
      let failures = 3
      const { receiver: r, runs } = await receiver(FAST, () => {
        if (failures-- > 0) throw new Error('ERP unreachable')
      })
      const ex = exchange()
      await deliver(r, ex, 'succeeded')
      expect(await eventually(async () => (await queue.show(ex))[0]?.lastError?.includes('ERP unreachable') === true)).toBe(true)
      const [item] = await queue.show(ex)
      expect(item).toMatchObject({ id: `${ex}:succeeded`, status: 'pending', source: 'callback', lastError: 'handler_failed: ERP unreachable' })
      expect(item?.fields.exchange_number).toBe(ex)
      expect(await eventually(() => runs.length === 1)).toBe(true)
      expect(await eventually(async () => (await queue.show(ex)).length === 0)).toBe(true)
      expect(runs).toEqual([`${ex}:succeeded`])
    })

    it('dead-letters after maxAttempts, lists it, and runs it once an operator retries', async () => {
      let broken = true
      const { receiver: r, runs } = await receiver({ ...FAST, maxAttempts: 2 }, () => {
        if (broken) throw new Error('still down')
      })
      const ex = exchange()
      await deliver(r, ex, 'failed', `ORD-${ex}`)
      expect(await eventually(async () => (await queue.show(ex))[0]?.status === 'dead')).toBe(true)
      const dead = await r.inbox.list({ status: 'dead', orderNumber: `ORD-${ex}` })
      expect(dead).toEqual([expect.objectContaining({ id: `${ex}:failed`, status: 'dead', attempts: 2, lastError: 'handler_failed: still down' })])
      expect((await r.inbox.counts()).dead).toBeGreaterThanOrEqual(1)
      // Dead entries wait for an operator, however long.
      await sleep(400)
      expect((await queue.show(ex))[0]?.status).toBe('dead')
      broken = false
      expect(await r.inbox.retry({ exchangeNumber: ex })).toBe(1)
      expect(await eventually(async () => (await queue.show(ex)).length === 0)).toBe(true)
      expect(runs).toEqual([`${ex}:failed`])
      expect(await r.inbox.retry({ exchangeNumber: ex })).toBe(0)
    })

    it('never runs a 99 that arrives after its 00, even while the 00 is still failing', async () => {
      let broken = true
      const { receiver: r, runs } = await receiver(FAST, () => {
        if (broken) throw new Error('down')
      })
      const ex = exchange()
      await deliver(r, ex, 'succeeded')
      expect(await eventually(async () => ((await queue.show(ex))[0]?.attempts ?? 0) >= 1)).toBe(true)
      // The 99 is written, but waits behind the queued 00.
      expect((await deliver(r, ex, 'pending')).outcome).toBe('queued')
      await sleep(300)
      broken = false
      expect(await eventually(async () => (await queue.show(ex)).length === 0)).toBe(true)
      expect(runs).toEqual([`${ex}:succeeded`])
    })

    it('runs a 99 and its 00 in the order they arrived, even when both waited out an outage', async () => {
      let broken = true
      const { receiver: r, runs } = await receiver(FAST, () => {
        if (broken) throw new Error('down')
      })
      const ex = exchange()
      await deliver(r, ex, 'pending')
      await sleep(20)
      await deliver(r, ex, 'succeeded')
      expect(await eventually(async () => ((await queue.show(ex))[0]?.attempts ?? 0) >= 2)).toBe(true)
      // The 00 waits behind the failing 99 instead of overtaking it (which would make the 99 stale).
      expect((await queue.show(ex)).find((item) => item.state === 'succeeded')?.attempts).toBe(0)
      broken = false
      expect(await eventually(async () => (await queue.show(ex)).length === 0)).toBe(true)
      expect(runs).toEqual([`${ex}:pending`, `${ex}:succeeded`])
    })

    it('lets a 00 run when the 99 before it was dead-lettered: money arriving is never held back by it', async () => {
      let failPending = true
      const { receiver: r, runs } = await receiver({ ...FAST, maxAttempts: 1 }, (event) => {
        if (failPending && event.state === 'pending') throw new Error('pending handler broken')
      })
      const ex = exchange()
      await deliver(r, ex, 'pending')
      expect(await eventually(async () => (await queue.show(ex))[0]?.status === 'dead')).toBe(true)
      await deliver(r, ex, 'succeeded')
      expect(await eventually(() => runs.length === 1)).toBe(true)
      expect(runs).toEqual([`${ex}:succeeded`])
      // Retried afterwards, the 99 is stale: it never runs after its 00.
      failPending = false
      expect(await r.inbox.retry({ exchangeNumber: ex, state: 'pending' })).toBe(1)
      expect(await eventually(async () => (await queue.show(ex)).length === 0)).toBe(true)
      expect(runs).toEqual([`${ex}:succeeded`])
    })

    it('shares one inbox among workers of several receivers: every result handled exactly once', async () => {
      const fleet = await Promise.all([receiver(), receiver(), receiver()])
      const results = Array.from({ length: 40 }, (_, i) => ({ ex: exchange(), state: (i % 3 === 0 ? 'failed' : 'succeeded') as PaymentState }))
      // Every result to two receivers at once, as concurrent redeliveries would arrive.
      await Promise.all(results.flatMap(({ ex, state }, i) => [deliver(fleet[i % 3]!.receiver, ex, state), deliver(fleet[(i + 1) % 3]!.receiver, ex, state)]))
      const all = () => fleet.flatMap((member) => member.runs)
      expect(await eventually(() => all().length >= results.length)).toBe(true)
      await sleep(200)
      const ids = all().sort()
      expect(ids).toEqual(results.map(({ ex, state }) => `${ex}:${state}`).sort())
      // The work was spread: more than one receiver's worker ran handlers.
      expect(fleet.filter((member) => member.runs.length > 0).length).toBeGreaterThan(1)
    })

    // Both entries fail once and wait 30–60 s; an operator's retry of one of them then succeeds.
    async function outageThenOneRetried(resumeOnRecovery: boolean) {
      let broken = true
      const { receiver: r, runs } = await receiver({ ...FAST, resumeOnRecovery, backoff: { baseMs: 60_000 } }, () => {
        if (broken) throw new Error('ERP down')
      })
      const [first, second] = [exchange(), exchange()]
      await Promise.all([deliver(r, first, 'succeeded'), deliver(r, second, 'succeeded')])
      const waiting = async (ex: string) => ((await queue.show(ex))[0]?.nextAttemptAt?.getTime() ?? 0) > Date.now() + 20_000
      expect(await eventually(async () => (await waiting(first)) && (await waiting(second)))).toBe(true)
      broken = false
      expect(await r.inbox.retry({ exchangeNumber: first })).toBe(1)
      expect(await eventually(() => runs.includes(`${first}:succeeded`))).toBe(true)
      return { r, runs, second, waiting }
    }

    it('once an entry that had failed succeeds, runs the others at once instead of after their backoff', async () => {
      const { runs, second } = await outageThenOneRetried(true)
      expect(await eventually(() => runs.includes(`${second}:succeeded`), 5_000)).toBe(true)
      expect(await eventually(async () => (await queue.show(second)).length === 0)).toBe(true)
      expect(runs.sort()).toEqual(runs.filter((id) => id.endsWith(':succeeded')).sort())
      expect(runs).toHaveLength(2)
    })

    it('with resumeOnRecovery: false, leaves the others to their backoff', async () => {
      const { r, runs, second, waiting } = await outageThenOneRetried(false)
      await sleep(300)
      expect(await waiting(second)).toBe(true)
      expect(runs).not.toContain(`${second}:succeeded`)
      // Drained here, so that no later test's workers find it.
      expect(await r.inbox.retry({ exchangeNumber: second })).toBe(1)
      expect(await eventually(() => runs.includes(`${second}:succeeded`))).toBe(true)
    })

    it('hasten() moves only entries waiting after a failed attempt: not busy-deferred, leased or dead ones', async () => {
      const { receiver: r } = await receiver({ ...FAST, work: false })
      const ids = { busy: exchange(), leased: exchange(), dead: exchange(), failed: exchange() }
      for (const ex of Object.values(ids)) await deliver(r, ex, 'succeeded')
      const owner = `test-${randomUUID()}`
      let held: Awaited<ReturnType<InboxQueue['take']>>[number] | undefined
      for (const entry of await queue.take(owner, 100, 60_000)) {
        const ex = entry.exchangeNumber
        if (ex === ids.leased) held = entry
        else if (ex === ids.dead) await queue.fail(entry, { error: 'x', delayMs: 0, dead: true })
        else if (ex === ids.failed) await queue.fail(entry, { error: 'x', delayMs: 60_000, dead: false })
        // A busy attempt does not count; anything else (nothing, normally) goes back as it was.
        else await queue.fail(entry, { error: 'busy', delayMs: ex === ids.busy ? 60_000 : 0, dead: false, refund: true })
      }
      expect(held).toBeDefined()
      expect(await queue.hasten()).toBe(1)
      const item = async (ex: string) => (await queue.show(ex))[0]
      expect((await item(ids.failed))?.nextAttemptAt?.getTime()).toBeLessThanOrEqual(Date.now() + 1000)
      expect((await item(ids.busy))?.nextAttemptAt?.getTime()).toBeGreaterThan(Date.now() + 30_000)
      expect(await item(ids.dead)).toMatchObject({ status: 'dead' })
      expect((await item(ids.leased))?.leasedUntil).not.toBeNull()
      // Cleaned up (a later test's workers must find nothing): lease and dead-letter lifted, then handled.
      await queue.fail(held!, { error: 'x', delayMs: 0, dead: false, refund: true })
      await queue.retry({ allDead: true })
      await queue.retry({ exchangeNumber: ids.busy })
      const worker = r.inbox.work({ pollMs: 50 })
      const gone = async () => (await Promise.all(Object.values(ids).map((ex) => queue.show(ex)))).every((items) => items.length === 0)
      expect(await eventually(gone)).toBe(true)
      await worker.stop()
    })

    it('takes in reconciled records through handleTrusted, and runs handlers only in processes that work', async () => {
      const accepting = await receiver({ ...FAST, work: false })
      const ex = exchange()
      const response = await accepting.receiver.handleTrusted(fieldsFor(ex, 'succeeded') as Record<string, string>)
      expect(response).toMatchObject({ status: 200, outcome: 'queued' })
      await sleep(200)
      expect((await queue.show(ex))[0]).toMatchObject({ source: 'reconcile', status: 'pending' })
      const worker = accepting.receiver.inbox.work({ pollMs: 50 })
      expect(await eventually(() => accepting.runs.length === 1)).toBe(true)
      expect(accepting.runs).toEqual([`${ex}:succeeded`])
      await worker.stop()
    })
    // The queue's own answers, asked directly: every store must give the same ones, so that an application (or the
    // CLI) moved from one store to another sees no difference.
    const queued = (exchangeNumber: string, state: PaymentState = 'succeeded', orderNumber: string | null = null) =>
      ({ exchangeNumber, state, source: 'callback', orderNumber, fields: '{}', rendering: 'plain' }) as const
    const takeMine = async (owner: string, mine: string[], leaseMs = 60_000) =>
      (await queue.take(owner, 100, leaseMs)).filter((entry) => mine.includes(entry.exchangeNumber))
    const shown = async (ex: string) =>
      (await queue.show(ex)).map((item) => ({
        state: item.state,
        status: item.status,
        attempts: item.attempts,
        leased: item.leasedUntil !== null,
        due: (item.nextAttemptAt?.getTime() ?? Infinity) <= Date.now() + 1000,
      }))

    it('retry() counts what it made due: fresh, backed-off, dead and lease-expired entries, not leased or absent ones', async () => {
      const ids = { fresh: exchange(), leased: exchange(), dead: exchange(), backoff: exchange(), expired: exchange(), both: exchange() }
      const mine = Object.values(ids)
      const owner = `test-${randomUUID()}`
      const before = await queue.counts()
      // The expired one first, alone, under a lease short enough to run out.
      expect(await queue.enqueue(queued(ids.expired))).toBe('queued')
      const [expired] = await takeMine(`test-${randomUUID()}`, mine, 100)
      expect(expired).toMatchObject({ exchangeNumber: ids.expired, attempts: 1 })
      for (const ex of [ids.leased, ids.dead, ids.backoff]) expect(await queue.enqueue(queued(ex))).toBe('queued')
      expect(await queue.enqueue(queued(ids.both, 'pending'))).toBe('queued')
      const taken = new Map((await takeMine(owner, mine)).map((entry) => [entry.exchangeNumber, entry]))
      expect([...taken.keys()].sort()).toEqual([ids.leased, ids.dead, ids.backoff, ids.both].sort())
      expect(await queue.fail(taken.get(ids.dead)!, { error: 'x', delayMs: 0, dead: true })).toBe(true)
      expect(await queue.fail(taken.get(ids.both)!, { error: 'x', delayMs: 0, dead: true })).toBe(true)
      expect(await queue.fail(taken.get(ids.backoff)!, { error: 'x', delayMs: 60_000, dead: false })).toBe(true)
      // Never attempted: enqueued after the take, and no take follows before the retries.
      expect(await queue.enqueue(queued(ids.fresh))).toBe('queued')
      expect(await queue.enqueue(queued(ids.both, 'succeeded'))).toBe('queued')
      expect(await queue.enqueue(queued(ids.dead))).toBe('present')
      expect(await queue.counts()).toEqual({ pending: before.pending + 5, dead: before.dead + 2 })
      await sleep(250)

      const absent = exchange()
      expect([await queue.retry({ exchangeNumber: absent }), await queue.retry({ exchangeNumber: absent, state: 'failed' })]).toEqual([0, 0])
      expect(await queue.retry({ exchangeNumber: ids.fresh, state: 'failed' }), 'another state of a queued payment').toBe(0)
      expect(await queue.retry({ exchangeNumber: ids.fresh, state: 'succeeded' })).toBe(1)
      expect(await shown(ids.fresh)).toEqual([{ state: 'succeeded', status: 'pending', attempts: 0, leased: false, due: true }])
      expect(await queue.retry({ exchangeNumber: ids.leased, state: 'succeeded' })).toBe(0)
      expect(await shown(ids.leased)).toEqual([{ state: 'succeeded', status: 'pending', attempts: 0, leased: true, due: true }])
      expect(await queue.retry({ exchangeNumber: ids.dead, state: 'succeeded' })).toBe(1)
      expect(await shown(ids.dead)).toEqual([{ state: 'succeeded', status: 'pending', attempts: 0, leased: false, due: true }])
      expect(await queue.retry({ exchangeNumber: ids.backoff })).toBe(1)
      expect(await shown(ids.backoff)).toEqual([{ state: 'succeeded', status: 'pending', attempts: 1, leased: false, due: true }])
      // Its lease ran out and nobody took it since: not leased (as list and show say), so made due and counted.
      expect(await shown(ids.expired)).toEqual([{ state: 'succeeded', status: 'pending', attempts: 1, leased: false, due: true }])
      expect(await queue.retry({ exchangeNumber: ids.expired, state: 'succeeded' })).toBe(1)
      expect(await shown(ids.expired)).toEqual([{ state: 'succeeded', status: 'pending', attempts: 0, leased: false, due: true }])
      // Its worker reports at last: retried meanwhile, it is given back rather than dead-lettered.
      expect(await queue.fail(expired!, { error: 'late', delayMs: 0, dead: true })).toBe('revived')
      expect(await queue.retry({ exchangeNumber: ids.both })).toBe(2)
      expect(await queue.counts()).toEqual({ pending: before.pending + 7, dead: before.dead })

      // Taken again: all but the leased one and the 00 behind its retried 99.
      const again = await takeMine(owner, mine)
      const attempts = (entries: TakenEntry[]) => entries.map((entry) => `${entry.exchangeNumber}:${entry.state}:${entry.attempts}`).sort()
      expect(attempts(again)).toEqual([`${ids.fresh}:succeeded:1`, `${ids.dead}:succeeded:1`, `${ids.backoff}:succeeded:2`, `${ids.expired}:succeeded:1`, `${ids.both}:pending:1`].sort())
      for (const entry of again) {
        if (entry.exchangeNumber === ids.dead || entry.exchangeNumber === ids.fresh) expect(await queue.fail(entry, { error: 'x', delayMs: 0, dead: true })).toBe(true)
        else expect(await queue.finish(entry)).toBe(true)
      }
      expect(await queue.counts()).toEqual({ pending: before.pending + 2, dead: before.dead + 2 })
      expect(await queue.retry({ allDead: true })).toBe(before.dead + 2)
      expect(await queue.counts()).toEqual({ pending: before.pending + before.dead + 4, dead: 0 })

      // Emptied again, so that no later test's workers find them.
      expect(await queue.finish(taken.get(ids.leased)!)).toBe(true)
      expect(
        await eventually(async () => {
          for (const entry of await takeMine(owner, mine)) await queue.finish(entry)
          return (await Promise.all(mine.map((ex) => queue.show(ex)))).flat().length === 0
        }, 8_000),
      ).toBe(true)
    })

    it('hasten() leaves alone an entry that is due but waits behind an earlier state of its payment', async () => {
      const ex = exchange()
      const owner = `test-${randomUUID()}`
      expect(await queue.enqueue(queued(ex, 'pending'))).toBe('queued')
      const [pending] = await takeMine(owner, [ex])
      expect(await queue.fail(pending!, { error: 'x', delayMs: 0, dead: true })).toBe(true)
      // Not held back by a dead 99: taken, and failed once with no backoff.
      expect(await queue.enqueue(queued(ex, 'succeeded'))).toBe('queued')
      const [succeeded] = await takeMine(owner, [ex])
      expect(succeeded).toMatchObject({ state: 'succeeded', attempts: 1 })
      expect(await queue.fail(succeeded!, { error: 'x', delayMs: 0, dead: false })).toBe(true)
      // The 99 retried: pending and earlier, it runs first; the 00 waits, due already, with no backoff to cut short.
      expect(await queue.retry({ exchangeNumber: ex, state: 'pending' })).toBe(1)
      const first = await takeMine(owner, [ex])
      expect(first.map((entry) => entry.state)).toEqual(['pending'])
      expect(await queue.hasten()).toBe(0)
      expect((await shown(ex)).find((item) => item.state === 'succeeded')).toMatchObject({ attempts: 1, leased: false, due: true })
      expect(await queue.finish(first[0]!)).toBe(true)
      let next: TakenEntry[] = []
      expect(await eventually(async () => (next = await takeMine(owner, [ex])).length > 0, 3_000)).toBe(true)
      expect(next.map((entry) => [entry.state, entry.attempts])).toEqual([['succeeded', 2]])
      expect(await queue.finish(next[0]!)).toBe(true)
    })

    it('lists entries in the order they arrived, even within one millisecond', async () => {
      const orderNumber = `ORD-${randomUUID()}`
      const base = exchange()
      // Named against the order they arrive in, so that a list sorted by name instead would show it.
      const arrivals = ['j', 'i', 'h', 'g', 'f', 'e', 'd', 'c', 'b', 'a'].map((tail) => ({ ex: `${base}-${tail}`, state: 'succeeded' as PaymentState }))
      arrivals.push(...(['succeeded', 'pending', 'failed'] as const).map((state) => ({ ex: `${base}-z`, state })))
      for (const { ex, state } of arrivals) {
        expect(await queue.enqueue(queued(ex, state, orderNumber))).toBe('queued')
        // Where the clock counts milliseconds, arrivals a millisecond apart at least: arrival order is all the
        // store can keep (entries of one millisecond come by exchange_number there).
        if (subject.coarseClock === true) await new Promise((resolve) => setTimeout(resolve, 2))
      }
      expect((await queue.list({ orderNumber })).map((item) => item.id)).toEqual(arrivals.map(({ ex, state }) => `${ex}:${state}`))
      expect((await queue.list({ orderNumber, limit: 3 })).map((item) => item.id)).toEqual(arrivals.slice(0, 3).map(({ ex, state }) => `${ex}:${state}`))
      // Emptied again: the states of `-z` are taken one after another, so it takes a few rounds.
      const mine = [...new Set(arrivals.map(({ ex }) => ex))]
      const owner = `test-${randomUUID()}`
      expect(
        await eventually(async () => {
          for (const entry of await takeMine(owner, mine)) await queue.finish(entry)
          return (await queue.list({ orderNumber })).length === 0
        }, 8_000),
      ).toBe(true)
    })
  })
}
