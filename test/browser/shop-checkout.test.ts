import type { Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { callbackDelivered, checkout, deliveriesOf, handlerLines, order, type Rig, shot, skipBrowser, startRig, toBankSelection } from './harness.js'

/**
 * A buyer in real Chromium on the Express example shop, paying through the emulator's hosted pages: the grid
 * of banks, the simulated bank, the way back; and leaving by the cancel button or the page's time-out.
 */
describe.skipIf(skipBrowser)('the example shop in Chromium', () => {
  let rig: Rig
  let page: Page

  // Short enough to wait out in a test, long enough for a loaded machine to show the page first; it only
  // applies to payments that carry a timeout_url.
  beforeAll(async () => {
    rig = await startRig(3000)
  }, 30_000)
  afterAll(() => rig?.close())
  beforeEach(async () => {
    page = await rig.browser.newPage()
  })
  afterEach(() => page?.close())

  it('checks out, picks a bank on the grid, approves, comes back to a paid order; the callback arrives and the handler runs once', async () => {
    const orderNumber = await checkout(rig, page, 'grid', () => ({ fpx_bank_selection: 'grid' }))
    const exchangeNumber = await toBankSelection(page, 'grid')
    const grid = page.locator('[data-layout="grid"]')
    await expect.poll(() => grid.count()).toBe(1)
    // The offline bank is on the grid but cannot be picked.
    expect(await grid.locator('button', { hasText: 'UOB Bank' }).isDisabled()).toBe(true)

    await grid.locator('button', { hasText: 'Maybank2U' }).click()
    await page.waitForURL(/\/bank$/)
    expect(await page.locator('h1').textContent()).toBe('Maybank2U')
    await shot(page, 'grid-4-simulated-bank')

    await page.click('button[value="approve"]')
    await page.waitForURL(`${rig.shop.url}/orders/${orderNumber}`)
    await shot(page, 'grid-5-shop-order')
    const shown = await page.locator('body').textContent()
    expect(shown).toContain('Thank you, your payment was received.')
    expect(shown).toContain('paid: paid through Maybank2U')
    expect(shown).toContain(exchangeNumber)

    const deliveries = await callbackDelivered(rig, exchangeNumber)
    expect(deliveries).toHaveLength(1)
    expect(deliveries[0]?.state).toBe('delivered')
    // Redirect and callback both carried the result; the receiver let the handler act on it once.
    expect(handlerLines(rig, orderNumber, 'paid')).toHaveLength(1)
    expect(order(rig, orderNumber).state).toBe('paid')
  })

  it('takes the buyer to cancel_url by the cancel button, with the order still unpaid and no callback', async () => {
    const cancelUrl = (orderNumber: string) => `${rig.shop.url}/orders/${orderNumber}?cancelled=1`
    const orderNumber = await checkout(rig, page, 'cancel', (number) => ({ fpx_bank_selection: 'grid', cancel_url: cancelUrl(number) }))
    const exchangeNumber = await toBankSelection(page, 'cancel')

    await page.click('button[name="cancel"]')
    await page.waitForURL(cancelUrl(orderNumber))
    await shot(page, 'cancel-4-cancel-url')
    expect(await page.locator('body').textContent()).toContain('We have not received the payment result yet.')
    expect(order(rig, orderNumber).state).toBe('awaiting payment')
    expect(await deliveriesOf(rig, exchangeNumber)).toEqual([])
  })

  it('sends a buyer who lingers on bank selection to timeout_url when the page times out', async () => {
    const timeoutUrl = (orderNumber: string) => `${rig.shop.url}/orders/${orderNumber}?timed-out=1`
    const orderNumber = await checkout(rig, page, 'timeout', (number) => ({ fpx_bank_selection: 'grid', timeout_url: timeoutUrl(number) }))
    await toBankSelection(page, 'timeout')
    expect(await page.locator('#timeout').textContent()).toMatch(/times out in \d+ seconds/)

    // The page's own timer leaves it; the buyer does nothing.
    await page.waitForURL(timeoutUrl(orderNumber), { timeout: 15_000 })
    await shot(page, 'timeout-4-timeout-url')
    expect(order(rig, orderNumber).state).toBe('awaiting payment')
  })
})
