/*
 * A payment state no handler listens to is never recorded as handled: the sender is told to retry (503
 * no_handler), and a handler registered later gets it from a redelivery, a reconciliation or the inbox.
 * And the default logger: warnings and errors on the console, `false` for silence.
 */
import { PGlite } from '@electric-sql/pglite'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { answerDelivery, createReceiver, type Logger, type PaymentState, type Receiver } from '../../src/index.js'
import { postgresStore } from '../../src/stores/postgres/store.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'
import { uniqueTable } from '../stores/postgres-suites.js'

const TOKEN = 'ab'.repeat(32)
let exchange = 0

function fieldsOf(state: PaymentState, exchangeNumber = `EX-UNHANDLED-${++exchange}`) {
  const status =
    state === 'succeeded'
      ? { payment_status: 'true', fpx_debit_auth_code: '00' }
      : state === 'failed'
        ? { payment_status: 'false', fpx_debit_auth_code: '51', transaction_amount_received: '0.00' }
        : { payment_status: 'false', fpx_debit_auth_code: '99', fpx_model: 'B2B1', transaction_amount_received: '0.00' }
  return samplePaymentFields({ exchange_number: exchangeNumber, order_number: `ORD-${exchangeNumber}`, ...status })
}

function delivery(fields: Record<string, unknown>, kind: 'callback' | 'redirect' = 'callback') {
  const signed = signCallback(fields as never, TOKEN)
  return { kind, body: Buffer.from(signed.body), contentType: signed.contentType }
}

function collectingLogger(): Logger & { lines: { level: string; details: object; message: string }[] } {
  const lines: { level: string; details: object; message: string }[] = []
  const at = (level: string) => (details: object, message: string) => void lines.push({ level, details, message })
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
}

describe('a state with no handler', () => {
  it.each(['succeeded', 'failed', 'pending'] as const)('%s: a callback gets 503 no_handler and a warning, and a handler registered later gets the redelivery', async (state) => {
    const logger = collectingLogger()
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, logger })
    const fields = fieldsOf(state)
    const first = await receiver.handle(delivery(fields))
    expect([first.status, first.outcome, first.error?.code]).toEqual([503, 'failed', 'no_handler'])
    expect(first.error?.message).toMatch(new RegExp(`payment\\.${state}`))
    expect(JSON.parse(first.body)).toEqual({ error: { code: 'no_handler', message: first.error?.message } })
    expect(first.payment?.state).toBe(state)
    const warnings = logger.lines.filter((line) => line.level === 'warn' && /no handler is registered/.test(line.message))
    expect(warnings).toHaveLength(1)
    expect(warnings[0]!.message).toMatch(/NOT recorded as handled/)
    expect(warnings[0]!.details).toMatchObject({ state, exchangeNumber: fields.exchange_number, delivery: 'callback' })

    // Still not recorded: the same delivery is refused again, not acknowledged as a duplicate.
    expect((await receiver.handle(delivery(fields))).error?.code).toBe('no_handler')

    const seen: string[] = []
    receiver.on(`payment.${state}`, (event) => void seen.push(event.id))
    expect(await receiver.handle(delivery(fields))).toMatchObject({ status: 200, outcome: 'processed' })
    expect(await receiver.handle(delivery(fields))).toMatchObject({ status: 200, outcome: 'duplicate' })
    expect(seen).toEqual([`${String(fields.exchange_number)}:${state}`])
  })

  it('reaches a handler registered later through a reconciliation (handleTrusted)', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, logger: false })
    const { checksum: _checksum, ...record } = fieldsOf('succeeded') as Record<string, string>
    expect(await receiver.handleTrusted(record)).toMatchObject({ status: 503, outcome: 'failed', error: { code: 'no_handler' } })
    const seen: string[] = []
    receiver.onAny((event) => void seen.push(`${event.delivery} ${event.state}`))
    expect(await receiver.handleTrusted(record)).toMatchObject({ status: 200, outcome: 'processed' })
    expect(seen).toEqual(['reconcile succeeded'])
  })

  it('is counted as handled by an onAny handler, and another state’s handler does not cover it', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, logger: false })
    receiver.on('payment.succeeded', () => {})
    expect((await receiver.handle(delivery(fieldsOf('failed')))).error?.code).toBe('no_handler')
    receiver.onAny(() => {})
    expect((await receiver.handle(delivery(fieldsOf('failed')))).outcome).toBe('processed')
  })

  it('leaves a state handled before alone: its redelivery is still a duplicate after the handler is removed', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, logger: false })
    const remove = receiver.on('payment.succeeded', () => {})
    const fields = fieldsOf('succeeded')
    expect((await receiver.handle(delivery(fields))).outcome).toBe('processed')
    remove()
    expect(await receiver.handle(delivery(fields))).toMatchObject({ status: 200, outcome: 'duplicate' })
  })

  it('a redirect shows the buyer the page for the verified state, and the result stays unrecorded', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, logger: false })
    const options = { successUrl: '/thanks', failureUrl: '/try-again' }
    const succeeded = fieldsOf('succeeded')
    expect(await answerDelivery(receiver, delivery(succeeded, 'redirect'), options, undefined)).toMatchObject({ status: 303, headers: { location: '/thanks' } })
    expect(await answerDelivery(receiver, delivery(fieldsOf('failed'), 'redirect'), options, undefined)).toMatchObject({ status: 303, headers: { location: '/try-again' } })
    // No URL for the state: the built-in page for it, not an error page.
    const pending = await answerDelivery(receiver, delivery(fieldsOf('pending'), 'redirect'), options, undefined)
    expect(pending.status).toBe(200)
    expect(pending.body).toContain('Payment awaiting approval')
    // onResult sees what the receiver said.
    const own = await answerDelivery(receiver, delivery(succeeded, 'redirect'), { onResult: ({ response }) => ({ body: `${response.status} ${response.error?.code}` }) }, undefined)
    expect(own.body).toBe('503 no_handler')

    let ran = 0
    receiver.on('payment.succeeded', () => void ran++)
    expect((await receiver.handle(delivery(succeeded))).outcome).toBe('processed')
    expect(ran).toBe(1)
  })
})

describe('a state with no handler, PostgreSQL store (PGlite)', () => {
  const db = new PGlite()
  beforeAll(() => db.waitReady, 60_000)
  afterAll(async () => {
    await db.close()
  })
  const receivers: Receiver<unknown>[] = []
  afterEach(async () => {
    for (const receiver of receivers.splice(0)) await receiver.inbox.stop()
  })

  it('transactional: the claim is rolled back, and a later handler gets the redelivery', async () => {
    const store = postgresStore({ client: db, table: uniqueTable('unhandled'), transactional: true })
    const receiver = createReceiver<unknown>({ signatureOnly: true, checksumToken: TOKEN, store, logger: false })
    const fields = fieldsOf('succeeded')
    expect((await receiver.handle(delivery(fields))).error?.code).toBe('no_handler')
    let ran = 0
    receiver.on('payment.succeeded', () => void ran++)
    expect((await receiver.handle(delivery(fields))).outcome).toBe('processed')
    expect((await receiver.handle(delivery(fields))).outcome).toBe('duplicate')
    expect(ran).toBe(1)
  })

  it('inbox mode: the entry stays in the inbox, retried, until a handler takes it', async () => {
    const store = postgresStore({ client: db, table: uniqueTable('unhandled_inbox') })
    const receiver = createReceiver<unknown>({ signatureOnly: true, checksumToken: TOKEN, store, logger: false, inbox: { pollMs: 50, backoff: { baseMs: 50, maxMs: 100 } } })
    receivers.push(receiver)
    const fields = fieldsOf('failed')
    expect(await receiver.handle(delivery(fields))).toMatchObject({ status: 200, outcome: 'queued' })
    const retried = async () => (await receiver.inbox.list()).some((item) => item.attempts >= 2 && /no_handler/.test(item.lastError ?? ''))
    await vi.waitFor(async () => expect(await retried()).toBe(true), { timeout: 20_000, interval: 50 })
    const seen: string[] = []
    receiver.on('payment.failed', (event) => void seen.push(event.id))
    await vi.waitFor(async () => expect(await receiver.inbox.counts()).toEqual({ pending: 0, dead: 0 }), { timeout: 20_000, interval: 50 })
    expect(seen).toEqual([`${String(fields.exchange_number)}:failed`])
  })
})

describe('the default logger', () => {
  const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
  const error = vi.spyOn(console, 'error').mockImplementation(() => {})
  const info = vi.spyOn(console, 'info').mockImplementation(() => {})
  const log = vi.spyOn(console, 'log').mockImplementation(() => {})
  afterEach(() => vi.clearAllMocks())
  afterAll(() => vi.restoreAllMocks())

  it('writes warnings and errors to the console, never info, debug or a token', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    // The one warning at creation says what signature-only mode is (tested in security tests).
    expect(String(warn.mock.calls[0]?.[0])).toMatch(/^fpx-collect: signature-only receiver/)
    warn.mockClear()
    receiver.on('payment.succeeded', () => {})
    const forged = signCallback(fieldsOf('succeeded') as never, 'cd'.repeat(32))
    expect((await receiver.handle({ kind: 'callback', ...forged })).status).toBe(401)
    expect(warn).toHaveBeenCalledTimes(1)
    expect(String(warn.mock.calls[0]![0])).toMatch(/^fpx-collect: refused a delivery: .*checksum/)
    expect(warn.mock.calls[0]![1]).toMatchObject({ code: 'checksum_mismatch', delivery: 'callback' })

    expect((await receiver.handle(delivery(fieldsOf('failed')))).error?.code).toBe('no_handler')
    expect(warn).toHaveBeenCalledTimes(2)
    expect(String(warn.mock.calls[1]![0])).toMatch(/no handler is registered for payment\.failed/)

    receiver.on('payment.failed', () => {
      throw new Error('the ERP is down')
    })
    expect((await receiver.handle(delivery(fieldsOf('failed')))).error?.code).toBe('handler_failed')
    expect(error).toHaveBeenCalledTimes(1)
    expect(String(error.mock.calls[0]![0])).toMatch(/^fpx-collect: a payment\.failed handler threw/)

    // A processed payment is info: quiet.
    const before = warn.mock.calls.length + error.mock.calls.length
    expect((await receiver.handle(delivery(fieldsOf('succeeded')))).outcome).toBe('processed')
    expect(warn.mock.calls.length + error.mock.calls.length).toBe(before)
    expect(info).not.toHaveBeenCalled()
    expect(log).not.toHaveBeenCalled()
    const printed = JSON.stringify([...warn.mock.calls, ...error.mock.calls].map((call) => call.map(String)))
    expect(printed).not.toContain(TOKEN)
  })

  it('is silenced by logger: false, and replaced by a logger given', async () => {
    const silent = createReceiver({ signatureOnly: true, checksumToken: TOKEN, logger: false })
    expect((await silent.handle(delivery(fieldsOf('failed')))).error?.code).toBe('no_handler')
    const logger = collectingLogger()
    const own = createReceiver({ signatureOnly: true, checksumToken: TOKEN, logger })
    expect((await own.handle(delivery(fieldsOf('failed')))).error?.code).toBe('no_handler')
    expect(warn).not.toHaveBeenCalled()
    expect(error).not.toHaveBeenCalled()
    expect(logger.lines.some((line) => line.level === 'warn')).toBe(true)
  })
})
