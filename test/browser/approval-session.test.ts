import type { Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { callbackDelivered, checkout, handlerLines, logInAtBank, order, type Rig, shot, skipBrowser, startRig, toBankSelection } from './harness.js'

/**
 * The two longer journeys in real Chromium: a corporate (B2B1) payment that waits for the authorizer's approval,
 * and a payment session whose hosted form asks the buyer for what the merchant did not send.
 */
describe.skipIf(skipBrowser)('B2B1 approval and payment sessions in Chromium', () => {
  let rig: Rig
  let page: Page

  beforeAll(async () => {
    rig = await startRig()
  }, 30_000)
  afterAll(() => rig?.close())
  beforeEach(async () => {
    page = await rig.browser.newPage()
  })
  afterEach(() => page?.close())

  it('shows a B2B1 order awaiting approval after code 99, and paid once the authorizer approves', async () => {
    const orderNumber = await checkout(rig, page, 'b2b1', () => ({ model: 'B2B1', fpx_bank_selection: 'grid' }))
    const exchangeNumber = await toBankSelection(page, 'b2b1')
    expect(await page.locator('body').textContent()).toContain('corporate (B2B1)')
    // The corporate list, not the retail one.
    await page.locator('[data-layout="grid"] button', { hasText: 'Maybank2E' }).click()
    await logInAtBank(page, 'b2b1', 'Maybank2E', 4)

    await page.click('button[value="pending"]')
    await page.waitForURL(`${rig.shop.url}/orders/${orderNumber}`)
    await shot(page, 'b2b1-6-shop-awaiting-approval')
    expect(await page.locator('body').textContent()).toContain('Your corporate account must approve the payment')
    const pending = await callbackDelivered(rig, exchangeNumber)
    expect(pending.map((delivery) => delivery.fields.fpx_debit_auth_code)).toEqual(['99'])
    expect(order(rig, orderNumber).state).toBe('awaiting approval')
    expect(handlerLines(rig, orderNumber, 'awaits corporate approval')).toHaveLength(1)

    await page.goto(`${rig.emulator.baseUrl}/pay/${exchangeNumber}/approval`)
    await shot(page, 'b2b1-7-approval')
    await page.click('button[value="approve"]')
    // The answer comes back on the same address, so wait for its heading rather than for the URL.
    await page.locator('h1', { hasText: 'Approved' }).waitFor()
    await shot(page, 'b2b1-8-approved')

    // The approval reaches the shop by callback only: the buyer is no longer on the bank's pages.
    const both = await callbackDelivered(rig, exchangeNumber, 2)
    expect(both.map((delivery) => delivery.fields.fpx_debit_auth_code)).toEqual(['99', '00'])
    await page.goto(`${rig.shop.url}/orders/${orderNumber}`)
    await shot(page, 'b2b1-9-shop-paid')
    expect(await page.locator('body').textContent()).toContain('Thank you, your payment was received.')
    expect(order(rig, orderNumber).state).toBe('paid')
    expect(handlerLines(rig, orderNumber, 'paid')).toHaveLength(1)
  })

  it('completes a payment session: the buyer fills the missing fields, picks a bank, approves and lands on a paid order', async () => {
    // The merchant records the order before asking for the session, as the shop's checkout would.
    const orderNumber = `ORD-SESSION${Date.now().toString(36).toUpperCase()}`
    rig.shop.orders.add({
      orderNumber,
      product: 'Kopi beans, 1 kg',
      amount: '35.00',
      buyer: { name: 'Lim Wei Jie', email: '', phone: '' },
      createdAt: new Date(),
      state: 'awaiting payment',
      note: null,
      exchangeNumber: null,
    })
    const created = await rig.emulator.postForm('/apis/payments', {
      transaction_amount: '35.00',
      order_number: orderNumber,
      product_description: 'Kopi beans, 1 kg',
      buyer_name: 'Lim Wei Jie',
      callback_url: `${rig.shop.url}/fpx/callback`,
      redirect_url: `${rig.shop.url}/fpx/redirect`,
    })
    expect(created.status).toBe(200)
    const session = (await created.json()) as { payment_url: string }

    await page.goto(session.payment_url)
    expect(await page.locator('input').evaluateAll((inputs) => inputs.map((input) => input.getAttribute('name')))).toEqual(['buyer_email', 'buyer_phone'])
    await page.fill('#buyer_email', 'weijie@example.com')
    // Local formats pass (as the real service takes them, with a warning), but not a phone longer than one can be.
    await page.fill('#buyer_phone', '0'.repeat(60))
    await shot(page, 'session-1-form')
    await page.click('button[type="submit"]')
    // The problem comes back shown next to the phone, the e-mail kept.
    expect(await page.locator('#buyer_phone-error').textContent()).toContain('Phone number must be at most 50 characters')
    expect(await page.inputValue('#buyer_email')).toBe('weijie@example.com')
    await shot(page, 'session-2-form-problem')

    await page.fill('#buyer_phone', '012-765 4321')
    await page.click('button[type="submit"]')
    await page.waitForURL(/\/api\/pay\/[^/]+$/)
    await shot(page, 'session-3-bank-selection')
    const exchangeNumber = (await page.locator('[data-exchange-number]').getAttribute('data-exchange-number'))!
    await page.selectOption('#bank', 'PBB0233')
    await page.click('button:has-text("Proceed")')
    await logInAtBank(page, 'session', 'Public Bank', 4)

    await page.click('button[value="approve"]')
    await page.waitForURL(`${rig.shop.url}/orders/${orderNumber}`)
    await shot(page, 'session-6-shop-order')
    expect(await page.locator('body').textContent()).toContain('paid: paid through Public Bank')
    const deliveries = await callbackDelivered(rig, exchangeNumber)
    expect(deliveries[0]?.fields).toMatchObject({ buyer_email: 'weijie@example.com', buyer_phone: '012-765 4321' })
    const warnings = (await (await fetch(`${rig.emulator.url}/__emulator/warnings?exchange_number=${exchangeNumber}`)).json()) as { warnings: { message: string }[] }
    expect(warnings.warnings.map((warning) => warning.message)).toEqual(['buyer_phone "012-765 4321" is not in international format (such as +60123456789); accepted as sent'])
    expect(handlerLines(rig, orderNumber, 'paid')).toHaveLength(1)
  })
})
