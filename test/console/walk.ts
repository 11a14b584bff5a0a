import type { Page } from 'playwright-core'
import { expect } from 'vitest'
import type { SixOrders } from './six-orders.js'

/**
 * What an operator does with the six orders, in the browser: finds each by the search box, reads where it stands,
 * looks the lost one up, fixes the failing handler's cause and retries its dead letter. The expectations are an
 * operator's: paid is paid, the never-paid ones say so, and "paid, handler failing" stands apart from them.
 */
export const EXPECTED: Readonly<Record<keyof SixOrders, string>> = {
  paid: 'succeeded',
  rejected: 'failed',
  abandoned: 'abandoned',
  pending: 'pending',
  lost: 'open',
  throwing: 'failing',
}

/** Types the order number into the search box and lands on its page. */
export async function findOrder(page: Page, consoleUrl: string, orderNumber: string): Promise<void> {
  await page.goto(consoleUrl)
  await page.fill('input[name="q"]', orderNumber)
  await page.click('header button[type="submit"]')
  await page.waitForURL(/\/payment\?/)
  expect(await page.locator('h1 .mono').textContent()).toBe(orderNumber)
}

export const standingOf = (page: Page) => page.locator('[data-standing]').getAttribute('data-standing')

/** The events of the page's life table, in order, as `source:event` of each step's last entry. */
export const lifeOf = async (page: Page): Promise<string[]> =>
  page.locator('table.life tbody tr[data-event]').evaluateAll((rows) => rows.map((row) => `${row.getAttribute('data-source')}:${row.getAttribute('data-event')}`))

export async function expectStandings(page: Page, consoleUrl: string, orders: SixOrders): Promise<void> {
  for (const [which, standing] of Object.entries(EXPECTED) as [keyof SixOrders, string][]) {
    await findOrder(page, consoleUrl, orders[which])
    expect({ which, standing: await standingOf(page) }).toEqual({ which, standing })
    expect((await lifeOf(page))[0], `${which} begins with its creation`).toBe('client:created')
  }
}

/**
 * The overview after the six orders: the one paid order whose handler fails stands apart as the most urgent line,
 * and the window's counts say what the operator saw order by order.
 */
export async function expectOverview(page: Page, consoleUrl: string): Promise<void> {
  await page.goto(consoleUrl)
  const count = (key: string) => page.locator(`[data-count="${key}"]`).textContent()
  expect({
    paidFailing: await count('paid_failing'),
    dead: await count('dead'),
    paid: await count('succeeded'),
    notPaid: await count('not_paid'),
    open: await count('open'),
    failed: await count('failed'),
    abandoned: await count('abandoned'),
  }).toEqual({ paidFailing: '1', dead: '1', paid: '1', notPaid: '5', open: '3', failed: '1', abandoned: '1' })
  expect(await page.locator('[data-age="under an hour"]').textContent()).toBe('3')
  // Results handled in the window, per hour: the paid, the rejected and the 99.
  expect(await page.locator('svg.chart').getAttribute('aria-label')).toBe('Results handled per hour: 3 in the window')
}

/** The buyer's e-mail, in any case, finds the one payment it was used for. */
export async function searchByEmail(page: Page, consoleUrl: string, emailAddress: string, orderNumber: string): Promise<void> {
  await page.goto(consoleUrl)
  await page.fill('input[name="q"]', emailAddress)
  await page.click('header button[type="submit"]')
  await page.waitForURL(/\/payment\?/)
  expect(await page.locator('h1 .mono').textContent()).toBe(orderNumber)
}

/** Reloads the page until its payment stands as `standing` (the inbox's workers run the handlers a moment later). */
export async function untilStanding(page: Page, standing: string): Promise<void> {
  await expect
    .poll(async () => {
      await page.reload()
      return standingOf(page)
    }, { timeout: 10_000 })
    .toBe(standing)
}

/**
 * The dead letter of the failing order, retried from the dead letters page once its cause is fixed: by its own
 * button, or by the one that retries every entry the filter shows (here filtered to the order).
 */
export async function retryDeadLetter(page: Page, consoleUrl: string, orderNumber: string, how: 'one' | 'all shown' = 'one'): Promise<void> {
  await page.goto(`${consoleUrl}/inbox`)
  expect(await page.locator('[data-count="dead"]').textContent()).toBe('1')
  const row = page.locator('tr[data-inbox="dead"]', { hasText: orderNumber })
  expect(await row.textContent()).toContain('handler_failed: the ERP refused order')
  if (how === 'one') await row.locator('button', { hasText: 'Retry now' }).click()
  else {
    await page.fill('input[name="order"]', orderNumber)
    await page.click('form.filters button[type="submit"]')
    await page.waitForURL(/order=/)
    await page.click('button[name="retry-all"]')
  }
  await page.waitForURL(/done=retry/)
  expect(await page.locator('[role="status"]').textContent()).toContain('1 inbox entry made due now')
}
