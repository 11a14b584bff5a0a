import { describe, expect, it } from 'vitest'
import { emulatorWithMerchant, settled } from './delivery-merchant.js'

/**
 * callbackTransport 'query' against a real merchant app (Express + the receiver's adapter): the fields arrive in
 * the query of an empty POST, after the callback_url's own `?shop=42`, and still verify; the shop's own
 * parameter reaches the handler apart from the signed fields.
 */
const { emulator, merchant } = await emulatorWithMerchant({ delivery: { attempts: 2, initialDelayMs: 5, maxDelayMs: 10, timeoutMs: 5000, callbackTransport: 'query' } })

describe('query-string callbacks, end to end', () => {
  it('verifies and handles the result once, the own query kept as unsigned', async () => {
    const exchangeNumber = await emulator.pay({ callback_url: `${merchant.callbackUrl}?shop=42`, redirect_url: merchant.redirectUrl })
    await emulator.complete(exchangeNumber, 'approve')
    const [delivery] = await settled(emulator, exchangeNumber)
    expect(delivery?.attempts.map((attempt) => attempt.status)).toEqual([200])
    const events = merchant.events.filter((event) => event.payment.exchangeNumber === exchangeNumber)
    expect(events.map((event) => event.state)).toEqual(['succeeded'])
    expect(events[0]?.unsignedQuery).toEqual({ shop: '42' })
    expect(events[0]?.fields).not.toHaveProperty('shop')
  })
})
