import express from 'express'
import { describe, expect, it } from 'vitest'
import { fpxCallback } from '../../adapters/express.js'
import { createReceiver, type PaymentEvent } from '../../src/index.js'
import { DEMO, launch } from '../emulator/harness.js'
import { settled } from '../emulator/delivery-merchant.js'
import { serve } from '../adapters/harness.js'

/**
 * End to end over real HTTP: the emulator delivers callbacks the way real shops have seen them (fields in the
 * body, appended after callback_url's own query, or both) to an Express app mounting fpxCallback.
 */
const FAST = { attempts: 2, initialDelayMs: 5, maxDelayMs: 10, timeoutMs: 5000 }

describe.each(['body', 'query', 'both'] as const)('an emulator callback with transport %s to a callback_url with its own query', (transport) => {
  it('is verified, handled once, and the URL’s own parameters reach the handler unsigned', async () => {
    const emulator = await launch({ log: () => {}, delivery: { ...FAST, callbackTransport: transport } })
    const receiver = createReceiver({ environment: { baseUrl: emulator.baseUrl }, credentials: DEMO })
    const events: PaymentEvent[] = []
    receiver.on('payment.succeeded', (event) => void events.push(event))
    const app = express()
    app.post('/fpx/callback', fpxCallback(receiver))
    const shop = await serve(app)
    try {
      const exchangeNumber = await emulator.pay({ callback_url: `${shop.url}/fpx/callback?shop=42&securepay_return=1` })
      await emulator.complete(exchangeNumber, 'approve')
      const [delivery] = await settled(emulator, exchangeNumber)
      expect(delivery?.state).toBe('delivered')
      expect(delivery?.attempts.map((attempt) => attempt.status)).toEqual([200])
      expect(events.map((event) => [event.payment.exchangeNumber, { ...event.unsignedQuery }, 'shop' in event.fields])).toEqual([
        [exchangeNumber, { shop: '42', securepay_return: '1' }, false],
      ])
    } finally {
      await emulator.stop()
      await shop.close()
    }
  })
})
