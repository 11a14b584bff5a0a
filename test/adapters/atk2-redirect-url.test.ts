/**
 * A successUrl / failureUrl / pendingUrl function of the app's that throws, or answers what is no URL text: the
 * payment is handled, and the browser must get what an onResult that throws gets on every adapter (500
 * internal_error page, the cause logged), never the framework's own error page, a stack, or an unhandled rejection.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createReceiver, type Logger } from '../../src/index.js'
import { MAX_BODY_BYTES, post, signed, type Started, TOKEN } from './harness.js'
import { opens } from './atk2-opens.js'

interface Line {
  level: keyof Logger
  details: Record<string, unknown>
  message: string
}

describe.each(opens)('%s adapter: a redirect URL function of the app that fails', (_name, open) => {
  const started: Started[] = []
  const unhandled: unknown[] = []
  const onUnhandled = (reason: unknown) => void unhandled.push(reason)
  beforeEach(() => {
    unhandled.length = 0
    process.on('unhandledRejection', onUnhandled)
  })
  afterEach(async () => {
    await new Promise((resolve) => setTimeout(resolve, 20))
    process.off('unhandledRejection', onUnhandled)
    await Promise.all(started.splice(0).map((app) => app.close()))
    expect(unhandled).toEqual([])
  })

  const cases: [string, () => unknown][] = [
    ['throws an Error', () => {
      throw new Error('orders table is missing')
    }],
    ['throws null', () => {
      throw null
    }],
    ['answers a number', () => 42],
  ]

  it.each(cases)('successUrl %s: 500 internal_error page, the cause logged, the payment handled once', async (_case, successUrl) => {
    const lines: Line[] = []
    const at = (level: keyof Logger) => (details: object, message: string) => void lines.push({ level, details: details as Record<string, unknown>, message })
    const receiver = createReceiver({
      signatureOnly: true,
      checksumToken: TOKEN,
      maxBodyBytes: MAX_BODY_BYTES,
      logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') },
    })
    const runs: string[] = []
    receiver.onAny((event) => void runs.push(event.id))
    const app = await open(receiver, { successUrl: successUrl as never })
    started.push(app)
    const delivery = signed()
    const reply = await post(app.url, '/fpx/redirect', delivery)
    expect([reply.status, reply.headers['content-type']], reply.text).toEqual([500, 'text/html; charset=utf-8'])
    expect(reply.text).toContain('internal_error')
    expect(reply.text).not.toMatch(/at .*\(.*:\d+:\d+\)/)
    expect(runs).toHaveLength(1)
    expect(lines.filter((line) => line.level === 'error' && 'err' in line.details)).toHaveLength(1)
    // The server still serves, and the payment is not handled again.
    const again = await post(app.url, '/fpx/callback', delivery)
    expect([again.status, again.text]).toEqual([200, 'OK'])
    expect(runs).toHaveLength(1)
  })
})
