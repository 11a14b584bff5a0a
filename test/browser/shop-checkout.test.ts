import type { Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import {
  answerAndShowProcessing,
  callbackDelivered,
  checkout,
  deliveriesOf,
  handlerLines,
  logInAtBank,
  order,
  type Rig,
  shot,
  skipBrowser,
  startRig,
  toBankSelection,
} from './harness.js'

/**
 * A buyer in real Chromium on the Express example shop, paying through the emulator's hosted pages: the grid
 * of banks, the simulated bank's log-in and confirmation, the processing page, the way back; and leaving by the
 * cancel button or the page's time-out. Every page is screenshotted to test-results/browser/.
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

    // The scheme's identity as text on its colour, on every scheme page.
    expect(await page.locator('[data-scheme]').textContent()).toBe('FPX')

    await grid.locator('button', { hasText: 'Maybank2U' }).click()
    await logInAtBank(page, 'grid', 'Maybank2U', 4)
    // The bank's own colour on its bar (Maybank's yellow), the scheme's blue gone.
    expect(await page.evaluate('getComputedStyle(document.querySelector(".bar")).backgroundColor')).toBe('rgb(255, 194, 14)')
    await answerAndShowProcessing(rig, page, 'grid', 'approve', 6)
    await page.waitForURL(`${rig.shop.url}/orders/${orderNumber}`)
    await shot(page, 'grid-7-shop-order')
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

  it('a rejected payment in the dropdown layout; then the service\'s status page, its retry page and the refusal of a finished payment', async () => {
    const orderNumber = await checkout(rig, page, 'reject')
    const exchangeNumber = await toBankSelection(page, 'reject')
    await page.selectOption('#bank', 'BCBB0235')
    await page.click('button:has-text("Proceed")')
    await logInAtBank(page, 'reject', 'CIMB Clicks', 4)
    await answerAndShowProcessing(rig, page, 'reject', 'reject', 6)
    expect(await page.locator('[data-outcome]').getAttribute('data-outcome')).toBe('51')
    await page.waitForURL(`${rig.shop.url}/orders/${orderNumber}`)
    await shot(page, 'reject-7-shop-order')
    const [delivery] = await callbackDelivered(rig, exchangeNumber)
    expect(order(rig, orderNumber).state).toBe('failed')

    await page.goto(String(delivery?.fields.status_url))
    expect(await page.locator('h1').textContent()).toBe('Payment unsuccessful')
    await shot(page, 'reject-8-service-status')
    await page.click('#retry')
    expect(await page.locator('h1').textContent()).toBe('Try the payment again')
    await shot(page, 'reject-9-service-retry')

    await page.goto(`${rig.emulator.baseUrl}/pay/${exchangeNumber}`)
    expect(await page.locator('h1').textContent()).toBe('This payment cannot go on')
    await shot(page, 'reject-10-finished-payment')
  })
})
