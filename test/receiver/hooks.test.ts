import { describe, expect, it } from 'vitest'
import { createReceiver, type Logger, type PaymentHandlerError, type Receiver } from '../../src/index.js'
import { samplePaymentFields, signCallback } from '../../src/testing.js'

const TOKEN = 'ab'.repeat(32)

function collectingLogger(): Logger & { lines: { level: string; details: object; message: string }[] } {
  const lines: { level: string; details: object; message: string }[] = []
  const at = (level: string) => (details: object, message: string) => void lines.push({ level, details, message })
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
}

function deliver(receiver: Receiver, fields: Record<string, unknown>) {
  const signed = signCallback(fields as never, TOKEN)
  return receiver.handle({ kind: 'callback', body: Buffer.from(signed.body), contentType: signed.contentType })
}

const failedFields = () => samplePaymentFields({ payment_status: 'false', fpx_debit_auth_code: '1C', fpx_status: 'false', transaction_amount_received: '0.00' })

describe('onAny', () => {
  it('runs for every payment event, after the event’s own handlers, until removed', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    const calls: string[] = []
    receiver.on('payment.succeeded', (event) => void calls.push(`own ${event.name}`))
    const remove = receiver.onAny((event) => void calls.push(`any ${event.name}`))
    receiver.on('payment.succeeded', (event) => void calls.push(`own2 ${event.name}`))
    expect(await deliver(receiver, samplePaymentFields())).toMatchObject({ outcome: 'processed' })
    expect(await deliver(receiver, failedFields())).toMatchObject({ outcome: 'processed' })
    expect(calls).toEqual(['own payment.succeeded', 'own2 payment.succeeded', 'any payment.succeeded', 'any payment.failed'])
    remove()
    calls.length = 0
    await deliver(receiver, samplePaymentFields())
    expect(calls).toEqual(['own payment.succeeded', 'own2 payment.succeeded'])
    expect(() => receiver.onAny('nope' as never)).toThrow(TypeError)
  })

  it('fails the delivery when it throws, like any handler, so the next delivery runs it again', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    let runs = 0
    receiver.onAny(() => {
      if (++runs === 1) throw new Error('audit log unavailable')
    })
    const fields = samplePaymentFields()
    expect(await deliver(receiver, fields)).toMatchObject({ status: 500, error: { code: 'handler_failed' } })
    expect(await deliver(receiver, fields)).toMatchObject({ status: 200, outcome: 'processed' })
    expect(runs).toBe(2)
  })
})

describe('onError', () => {
  it('is told of a handler’s error with the event, without delaying the answer', async () => {
    const logger = collectingLogger()
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, logger })
    const thrown = new Error('the ERP is down')
    receiver.on('payment.succeeded', () => {
      throw thrown
    })
    const told: PaymentHandlerError[] = []
    let slowDone = false
    receiver.onError((error) => void told.push(error))
    // Never awaited: a slow or failing error handler changes nothing about the answer.
    receiver.onError(() => new Promise<void>((resolve) => setTimeout(() => resolve(void (slowDone = true)), 200)))
    receiver.onError(() => {
      throw new Error('the error reporter itself failed')
    })
    const removed = receiver.onError(() => void told.push('removed' as never))
    removed()

    const fields = samplePaymentFields()
    expect(await deliver(receiver, fields)).toMatchObject({ status: 500, error: { code: 'handler_failed' } })
    expect(slowDone).toBe(false)
    expect(told).toHaveLength(1)
    const [error] = told as [PaymentHandlerError]
    expect(error).toBeInstanceOf(AggregateError)
    expect(error.errors).toEqual([thrown])
    expect(error.message).toBe('the ERP is down')
    expect(error.event).toMatchObject({ name: 'payment.succeeded', state: 'succeeded', id: `${fields.exchange_number}:succeeded` })
    expect(logger.lines.filter((line) => line.level === 'error').map((line) => line.message)).toContain('an onError handler threw')
  })

  it('is not told of duplicates, refusals or successes', async () => {
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN })
    const told: unknown[] = []
    receiver.onError((error) => void told.push(error))
    receiver.onAny(() => {})
    const fields = samplePaymentFields()
    await deliver(receiver, fields)
    await deliver(receiver, fields)
    await receiver.handle({ kind: 'callback', body: 'a=1', contentType: 'application/x-www-form-urlencoded' })
    expect(told).toEqual([])
  })
})

describe('a state nobody listens to', () => {
  it('is warned about each time it arrives, unless an own or onAny handler is registered', async () => {
    const logger = collectingLogger()
    const receiver = createReceiver({ signatureOnly: true, checksumToken: TOKEN, logger })
    receiver.on('payment.succeeded', () => {})
    expect(await deliver(receiver, failedFields())).toMatchObject({ status: 503, outcome: 'failed', error: { code: 'no_handler' } })
    expect(await deliver(receiver, samplePaymentFields())).toMatchObject({ status: 200 })
    const warnings = logger.lines.filter((line) => line.level === 'warn' && !line.message.startsWith('signature-only receiver'))
    expect(warnings).toHaveLength(1)
    expect(warnings[0]!.message).toMatch(/no handler is registered for payment\.failed; the result was NOT recorded/)
    expect(warnings[0]!.details).toMatchObject({ state: 'failed' })

    receiver.onAny(() => {})
    await deliver(receiver, failedFields())
    expect(logger.lines.filter((line) => line.level === 'warn' && !line.message.startsWith('signature-only receiver'))).toHaveLength(1)
  })
})
