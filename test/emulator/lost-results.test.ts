import { describe, expect, it } from 'vitest'
import { amongShare } from '../../src/emulator/faults.js'
import { deliveriesOf, emulatorWithMerchant, settled, until } from './delivery-merchant.js'

/** The faults that lose results altogether: the merchant hears nothing and must ask the status API. */
const { emulator, merchant } = await emulatorWithMerchant({ delivery: { attempts: 2, initialDelayMs: 5, maxDelayMs: 20 } })

const setFaults = (faults: Record<string, unknown>) => emulator.control('/faults', faults)
const pay = (overrides: Record<string, string> = {}) => emulator.pay({ callback_url: merchant.callbackUrl, redirect_url: merchant.redirectUrl, ...overrides })
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('lost results', () => {
  it('lose_results: 1 loses the redirect and the callback; the status API still knows the payment', async () => {
    expect(await (await setFaults({ lose_results: 1 })).json()).toEqual({ duplicate: 0, out_of_order: false, delay_ms: 0, redirect_lost: false, lose_results: 1 })
    const exchangeNumber = await pay()
    const page = await emulator.postForm(`/pay/${exchangeNumber}/authorize`, { outcome: 'approve', bank_code: 'MB2U0227' }, null)
    const html = await page.text()
    expect(html).toContain('data-fault="redirect_lost"')
    expect(html).not.toContain(merchant.redirectUrl)
    await pause(50)
    expect((await deliveriesOf(emulator, exchangeNumber)).map((delivery) => [delivery.state, delivery.attempts.length])).toEqual([['lost', 0]])
    expect(merchant.callbacks).toEqual([])
    const found = (await (await emulator.get(`/v1/transactions/search?search_reference=exchange_number&reference_number=${exchangeNumber}`)).json()) as { payment_status: boolean }[]
    expect(found[0]?.payment_status).toBe(true)
    // A redelivery is the tester's own act: faults shape only the service's sends.
    expect((await emulator.control(`/payments/${exchangeNumber}/redeliver`, {})).status).toBe(202)
    const both = await until(() => deliveriesOf(emulator, exchangeNumber), (list) => list[1]?.state === 'delivered', 'the redelivery')
    expect(both.map((delivery) => delivery.state)).toEqual(['lost', 'delivered'])
  })

  it('lose_approvals: 1 delivers a B2B1 99 and loses the 00 that follows the approval', async () => {
    await setFaults({ lose_approvals: 1 })
    const exchangeNumber = await pay({ model: 'B2B1' })
    await emulator.complete(exchangeNumber, 'pending')
    await settled(emulator, exchangeNumber, 1)
    await emulator.control(`/payments/${exchangeNumber}/approve`, {})
    await pause(50)
    expect((await deliveriesOf(emulator, exchangeNumber)).map((delivery) => [delivery.fpx_debit_auth_code, delivery.state])).toEqual([
      ['99', 'delivered'],
      ['00', 'lost'],
    ])
    expect(merchant.events.map((event) => event.state)).toEqual(['pending'])
    // A B2B1 payment approved at once (no 99 first) is not a "later 00": it goes out.
    const direct = await pay({ model: 'B2B1' })
    await emulator.complete(direct, 'approve')
    expect((await settled(emulator, direct))[0]?.state).toBe('delivered')
  })

  it('a share picks the same payments every time, spread over them', async () => {
    const numbers = Array.from({ length: 2000 }, (_, i) => `ABCDE${String(1_700_000_000 + i)}`)
    const chosen = numbers.filter((number) => amongShare(number, 0.3, 'results'))
    expect(chosen.length / numbers.length).toBeGreaterThan(0.25)
    expect(chosen.length / numbers.length).toBeLessThan(0.35)
    expect(numbers.filter((number) => amongShare(number, 0.3, 'results'))).toEqual(chosen)
    expect(numbers.some((number) => amongShare(number, 0, 'results'))).toBe(false)
    expect(numbers.every((number) => amongShare(number, 1, 'results'))).toBe(true)

    await setFaults({ lose_results: 0.5 })
    const outcomes: string[] = []
    for (let i = 0; i < 12; i++) {
      const exchangeNumber = await pay()
      await emulator.complete(exchangeNumber, 'approve')
      outcomes.push(amongShare(exchangeNumber, 0.5, 'results') ? 'lost' : 'delivered')
    }
    await pause(100)
    const states = await Promise.all(
      (await (await emulator.control('/payments')).json() as { payments: { exchange_number: string }[] }).payments.map(async (p) => (await deliveriesOf(emulator, p.exchange_number))[0]?.state),
    )
    expect(states).toEqual(outcomes)
  })

  it('refuses shares outside 0..1', async () => {
    const refused = await setFaults({ lose_results: 1.5, lose_approvals: 'half' })
    expect(refused.status).toBe(422)
    expect(Object.keys(((await refused.json()) as { fields: object }).fields).sort()).toEqual(['lose_approvals', 'lose_results'])
  })
})
