import { describe, expect, it } from 'vitest'
import { emulatorWithMerchant, settled } from './delivery-merchant.js'

/** A payment the emulator took only by tolerance still reaches a real merchant app (Express + the receiver) as a valid result. */
const { emulator, merchant } = await emulatorWithMerchant({ log: () => {}, delivery: { attempts: 2, initialDelayMs: 5, maxDelayMs: 10, timeoutMs: 5000 } })

describe('tolerated requests, end to end', () => {
  it('amount 200 and an empty phone: the signed callback carries 200.00 and "", and the handler runs once', async () => {
    const exchangeNumber = await emulator.pay({ transaction_amount: '200', buyer_phone: '', callback_url: merchant.callbackUrl, redirect_url: merchant.redirectUrl })
    await emulator.complete(exchangeNumber, 'approve')
    const [delivery] = await settled(emulator, exchangeNumber)
    expect(delivery?.state).toBe('delivered')
    const events = merchant.events.filter((event) => event.payment.exchangeNumber === exchangeNumber)
    expect(events.map((event) => event.state)).toEqual(['succeeded'])
    expect(events[0]?.fields).toMatchObject({ transaction_amount: '200.00', buyer_phone: '' })
  })
})
