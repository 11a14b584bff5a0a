import { describe, expect, it } from 'vitest'
import { deliveriesOf, emulatorWithMerchant, settled } from './delivery-merchant.js'

/** Faults injected through the control API, against a real merchant app: its handler must still run once. */
const { emulator, merchant } = await emulatorWithMerchant({ delivery: { attempts: 4, initialDelayMs: 5, maxDelayMs: 20 } })

async function setFaults(faults: Record<string, unknown>): Promise<Response> {
  return emulator.control('/faults', faults)
}

function pay(overrides: Record<string, string> = {}): Promise<string> {
  return emulator.pay({ callback_url: merchant.callbackUrl, redirect_url: merchant.redirectUrl, ...overrides })
}

function eventsOf(exchangeNumber: string): string[] {
  return merchant.events.filter((event) => event.payment.exchangeNumber === exchangeNumber).map((event) => event.state)
}

describe('fault injection', () => {
  it('duplicate: the same callback arrives three times at once; the handler runs once', async () => {
    expect(await (await setFaults({ duplicate: 2 })).json()).toEqual({ duplicate: 2, out_of_order: false, delay_ms: 0, redirect_lost: false })
    const exchangeNumber = await pay()
    await emulator.complete(exchangeNumber, 'approve')
    const deliveries = await settled(emulator, exchangeNumber, 3)
    expect(deliveries.map((delivery) => delivery.reason)).toEqual(['result', 'duplicate', 'duplicate'])
    expect(deliveries.every((delivery) => delivery.state === 'delivered')).toBe(true)
    expect(merchant.callbacks.filter((callback) => callback.status === 200)).toHaveLength(3)
    expect(eventsOf(exchangeNumber)).toEqual(['succeeded'])
  })

  it('out of order: the B2B1 99 is held until approval, then 00 arrives before 99; the late 99 changes nothing', async () => {
    await setFaults({ out_of_order: true })
    const exchangeNumber = await pay({ model: 'B2B1' })
    await emulator.complete(exchangeNumber, 'pending')
    const [held] = await deliveriesOf(emulator, exchangeNumber)
    expect(held).toMatchObject({ state: 'held', fpx_debit_auth_code: '99', attempts: [] })
    await emulator.control(`/payments/${exchangeNumber}/approve`, {})
    const deliveries = await settled(emulator, exchangeNumber, 2)
    expect(deliveries.map((delivery) => [delivery.fpx_debit_auth_code, delivery.state])).toEqual([
      ['99', 'delivered'],
      ['00', 'delivered'],
    ])
    expect(merchant.callbacks.map((callback) => callback.code)).toEqual(['00', '99'])
    expect(eventsOf(exchangeNumber)).toEqual(['succeeded'])
  })

  it('out of order applies to B2B1 only: a B2C result goes out at once', async () => {
    await setFaults({ out_of_order: true })
    const exchangeNumber = await pay()
    await emulator.complete(exchangeNumber, 'reject')
    expect((await settled(emulator, exchangeNumber))[0]?.state).toBe('delivered')
    expect(eventsOf(exchangeNumber)).toEqual(['failed'])
  })

  it('delay: the first attempt is scheduled that much later', async () => {
    await setFaults({ delay_ms: 60_000 })
    const exchangeNumber = await pay()
    await emulator.complete(exchangeNumber, 'approve')
    const [waiting] = await deliveriesOf(emulator, exchangeNumber)
    expect(waiting).toMatchObject({ state: 'scheduled', attempts: [] })
    expect(Date.parse(waiting?.next_attempt_at ?? '') - Date.parse(waiting?.created_at ?? '')).toBeGreaterThanOrEqual(59_000)
    expect(merchant.callbacks).toEqual([])
  })

  it('delay: a short delay still ends delivered', async () => {
    await setFaults({ delay_ms: 20 })
    const exchangeNumber = await pay()
    await emulator.complete(exchangeNumber, 'approve')
    expect((await settled(emulator, exchangeNumber))[0]?.state).toBe('delivered')
    expect(eventsOf(exchangeNumber)).toEqual(['succeeded'])
  })

  it('redirect lost: the bank page never sends the browser back, the callback still arrives', async () => {
    await setFaults({ redirect_lost: true })
    const exchangeNumber = await pay()
    const page = await emulator.postForm(`/pay/${exchangeNumber}/authorize`, { outcome: 'approve', bank_code: 'MB2U0227' }, null)
    expect(page.status).toBe(200)
    const html = await page.text()
    expect(html).toContain('data-fault="redirect_lost"')
    expect(html).not.toContain(merchant.redirectUrl)
    expect((await settled(emulator, exchangeNumber))[0]?.state).toBe('delivered')
    expect(merchant.events.map((event) => [event.state, event.delivery])).toEqual([['succeeded', 'callback']])
  })

  it('refuses unknown faults and bad values, and reset clears the faults', async () => {
    const refused = await setFaults({ duplicate: -1, delay_ms: 'soon', redirect_lost: 'yes', surprise: true })
    expect(refused.status).toBe(422)
    expect(Object.keys(((await refused.json()) as { fields: object }).fields).sort()).toEqual(['delay_ms', 'duplicate', 'redirect_lost', 'surprise'])
    await setFaults({ redirect_lost: true, duplicate: 1 })
    await emulator.control('/reset', {})
    expect(await (await emulator.control('/faults')).json()).toEqual({ duplicate: 0, out_of_order: false, delay_ms: 0, redirect_lost: false })
  })
})
