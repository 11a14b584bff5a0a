import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ConsoleRig, type Mount, noDialogs, OPERATOR, shot, skipRedis, startConsoleRig } from './rig.js'
import { placeSixOrders, type SixOrders } from './six-orders.js'
import { expectOverview, expectStandings, findOrder, lifeOf, retryDeadLetter, searchByEmail, standingOf, untilStanding } from './walk.js'

/**
 * The operator's walk through the six orders, on the console mounted in an app (Express or Fastify) whose receiver
 * runs in inbox mode on Redis, driven in Chromium.
 */
export function operatorWalk(mount: Mount): void {
  describe.skipIf(skipRedis)(`the console on ${mount}`, () => {
    let rig: ConsoleRig
    let orders: SixOrders
    let context: BrowserContext
    let page: Page
    const dialogs: string[] = []

    beforeAll(async () => {
      rig = await startConsoleRig(mount)
      orders = await placeSixOrders(rig)
      context = await rig.operator()
      page = await context.newPage()
      page.setDefaultTimeout(5_000)
      noDialogs(page, dialogs)
    }, 60_000)
    afterAll(async () => {
      await context?.close()
      await rig?.close()
    })

    it('shows each of the six orders where an operator expects it', async () => {
      await expectStandings(page, rig.consoleUrl, orders)
      await searchByEmail(page, rig.consoleUrl, 'MEI@example.com', orders.paid)
      await expectOverview(page, rig.consoleUrl)
      await shot(page, `${mount}-overview`, mount === 'express' ? 'console-overview.png' : undefined)
      await findOrder(page, rig.consoleUrl, orders.throwing)
      await shot(page, `${mount}-payment-failing`)
      expect(dialogs).toEqual([])
    }, 60_000)

    it('looks the lost payment up now: the API record shows it paid, the handlers run once, the timeline names the operator', async () => {
      await findOrder(page, rig.consoleUrl, orders.lost)
      expect(await page.locator('table.api-record').textContent()).toContain('payment_status')
      await page.click('button[name="lookup"]')
      await page.waitForURL(/done=lookup/)
      await untilStanding(page, 'succeeded')
      const looked = page.locator('tr[data-event="looked_up"]')
      expect(await looked.textContent()).toContain(`looked up by ${OPERATOR}`)
      expect(rig.runs.get(orders.lost)).toBe(1)
    })

    it('retries the dead letter once its cause is fixed: the handler runs once and the payment is paid', async () => {
      await findOrder(page, rig.consoleUrl, orders.throwing)
      expect(await standingOf(page)).toBe('failing')
      expect(await page.locator('tr[data-event="handler_failed"]').first().textContent()).toContain('Error: the ERP refused order [field value]: its ledger is locked')
      expect(rig.runs.get(orders.throwing)).toBeUndefined()
      rig.failing.delete(orders.throwing)
      // Express's operator retries the one entry; Fastify's, every entry the filter shows.
      await retryDeadLetter(page, rig.consoleUrl, orders.throwing, mount === 'express' ? 'one' : 'all shown')
      await findOrder(page, rig.consoleUrl, orders.throwing)
      await untilStanding(page, 'succeeded')
      await shot(page, `${mount}-payment-retried`, mount === 'express' ? 'console-payment.png' : undefined)
      expect(await lifeOf(page)).toContain('console:retried')
      expect(await page.locator('tr[data-event="retried"]').textContent()).toContain(OPERATOR)
      expect(rig.runs.get(orders.throwing)).toBe(1)
    })
  })
}
