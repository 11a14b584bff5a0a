import { existsSync, mkdirSync } from 'node:fs'
import { type Browser, chromium, type Page } from 'playwright-core'
import { expect } from 'vitest'
import { startExpressShop } from '../../examples/express/app.js'
import type { Order, RunningShop } from '../../examples/shared/shop.js'
import { DEMO, type Emulator, launch } from '../emulator/harness.js'
import { missing, skipping } from '../requirements.js'

/**
 * The browser tests' rig: real Chromium (Debian's package; playwright cannot download its own here), the
 * emulator and the Express example shop, each on 127.0.0.1 port 0, all in this process so the tests can read
 * the shop's order book and log.
 */
// CHROMIUM_PATH points at another build.
export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium'
// A missing browser fails the files that need it, naming what to install, unless FPX_SKIP=browser asks to skip them:
// a run that skipped them silently would pass without testing the pages.
export const skipBrowser = skipping('browser')
if (!skipBrowser && !existsSync(CHROMIUM)) throw missing('browser', `Chromium is not at ${CHROMIUM}`)

const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync']
const SHOTS = 'test-results/browser'

export interface Rig {
  readonly browser: Browser
  readonly emulator: Emulator
  readonly shop: RunningShop
  /** Every line the shop logged, handler lines included. */
  readonly log: string[]
  close(): Promise<void>
}

export async function startRig(bankPageTimeoutMs?: number): Promise<Rig> {
  mkdirSync(SHOTS, { recursive: true })
  // The browser first: when it cannot start there are no servers left open.
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS })
  const emulator = await launch(bankPageTimeoutMs === undefined ? {} : { bankPageTimeoutMs })
  const log: string[] = []
  const shop = await startExpressShop({ config: { baseUrl: emulator.baseUrl, ...DEMO }, log: (line) => log.push(line) })
  return {
    browser,
    emulator,
    shop,
    log,
    async close() {
      await browser.close()
      await shop.close()
      await emulator.stop()
    },
  }
}

/** A full-page screenshot under test-results/browser/, named after the test and the page. */
export async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: `${SHOTS}/${name.replace(/[^a-z0-9-]+/gi, '-')}.png`, fullPage: true })
}

/**
 * The buyer fills the shop's checkout form and pays; the browser then posts the shop's own signed payment
 * request to the emulator. The shop never sends the service's display options (grid, cancel_url, timeout_url,
 * model); they are outside the checksum, so the test adds them to that same request on its way, built from the
 * order number the shop chose. Ends on the emulator's "payment created" page.
 */
export async function checkout(rig: Rig, page: Page, name: string, extra: (orderNumber: string) => Record<string, string> = () => ({})): Promise<string> {
  let orderNumber = ''
  await page.route(`${rig.emulator.baseUrl}/v1/payments`, async (route) => {
    const body = route.request().postData() ?? ''
    orderNumber = new URLSearchParams(body).get('order_number') ?? ''
    const added = new URLSearchParams(extra(orderNumber)).toString()
    await route.continue({ postData: added === '' ? body : `${body}&${added}` })
  })
  await page.goto(`${rig.shop.url}/`)
  await page.fill('input[name="name"]', 'Tan Mei Ling')
  await page.fill('input[name="email"]', 'mei@example.com')
  await page.fill('input[name="phone"]', '+60129876543')
  await page.fill('input[name="amount"]', '42.50')
  await page.fill('input[name="product"]', 'Teh tarik set')
  await shot(page, `${name}-1-shop-checkout`)
  await page.click('button[type="submit"]')
  await page.waitForURL(`${rig.emulator.baseUrl}/v1/payments`)
  expect(await page.locator('h1').textContent()).toBe('Pay RM 42.50')
  await shot(page, `${name}-2-payment-created`)
  expect(orderNumber).toMatch(/^ORD-/)
  return orderNumber
}

/** From the "payment created" page to the bank selection page; answers the payment's exchange_number. */
export async function toBankSelection(page: Page, name: string): Promise<string> {
  await page.click('text=Continue to bank selection')
  await page.waitForURL(/\/api\/pay\/[^/]+$/)
  const exchangeNumber = await page.locator('[data-exchange-number]').getAttribute('data-exchange-number')
  await shot(page, `${name}-3-bank-selection`)
  expect(exchangeNumber).toBeTruthy()
  return exchangeNumber!
}

/**
 * After a bank was chosen: the bank's log-in page (its name and colour, no logo), then its confirmation page.
 * `step` numbers the screenshots.
 */
export async function logInAtBank(page: Page, name: string, bankName: string, step: number): Promise<void> {
  await page.waitForURL(/\/(bank|api\/pay\/[^/]+)$/)
  await page.locator('#bank-login').waitFor()
  expect(await page.locator('[data-bank]').textContent()).toBe(bankName)
  expect(await page.locator('h1').textContent()).toBe('Log in')
  await shot(page, `${name}-${step}-bank-login`)
  await page.fill('#user_id', 'tan.mei')
  await page.fill('#password', 'not-checked')
  await page.click('button:has-text("Log in")')
  await page.waitForURL(/\/login$/)
  expect(await page.locator('h1').textContent()).toBe('Confirm payment')
  expect(await page.locator('[data-user-id]').textContent()).toBe('tan.mei')
  await shot(page, `${name}-${step + 1}-bank-confirm`)
}

/**
 * Clicks the bank's answer and screenshots the processing page. The page posts the result to the shop after a
 * pause; the shop's redirect route is held until the screenshot is taken, so a slow machine cannot move on first.
 */
export async function answerAndShowProcessing(rig: Rig, page: Page, name: string, outcome: string, step: number): Promise<void> {
  let release = () => {}
  const released = new Promise<void>((resolve) => (release = resolve))
  const redirectRoute = `${rig.shop.url}/fpx/redirect`
  await page.route(redirectRoute, async (route) => {
    await released
    await route.continue()
  })
  try {
    await page.click(`button[value="${outcome}"]`)
    await page.locator('h1', { hasText: 'Processing your payment' }).waitFor()
    expect(await page.locator('.spinner').count()).toBe(1)
    await shot(page, `${name}-${step}-processing`)
  } finally {
    release()
  }
}

export function order(rig: Rig, orderNumber: string): Order {
  const found = rig.shop.orders.get(orderNumber)
  expect(found, `the shop has order ${orderNumber}`).toBeDefined()
  return found!
}

export interface DeliveryView {
  state: string
  attempts: { status: number | null }[]
  fields: Record<string, unknown>
}

/** The emulator's callback deliveries for a payment, from its control API. */
export async function deliveriesOf(rig: Rig, exchangeNumber: string): Promise<DeliveryView[]> {
  const response = await rig.emulator.control(`/deliveries?exchange_number=${encodeURIComponent(exchangeNumber)}`)
  return ((await response.json()) as { deliveries: DeliveryView[] }).deliveries
}

const answered2xx = (delivery: DeliveryView) => delivery.attempts.some((attempt) => attempt.status !== null && attempt.status >= 200 && attempt.status < 300)

/** Waits (on the emulator's delivery log, not a clock) until `count` callbacks for the payment got a 2xx answer. */
export async function callbackDelivered(rig: Rig, exchangeNumber: string, count = 1): Promise<DeliveryView[]> {
  let deliveries: DeliveryView[] = []
  await expect
    .poll(async () => {
      deliveries = await deliveriesOf(rig, exchangeNumber)
      return deliveries.filter(answered2xx).length
    }, { timeout: 10_000 })
    .toBe(count)
  return deliveries
}

/** The shop's handler lines about an order, such as "order ORD-… paid RM 42.50 (callback)". */
export function handlerLines(rig: Rig, orderNumber: string, what: string): string[] {
  return rig.log.filter((line) => line.startsWith(`order ${orderNumber} ${what}`))
}
