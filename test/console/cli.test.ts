import type { ChildProcessWithoutNullStreams } from 'node:child_process'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { REDIS_URL } from '../stores/services.js'
import { startCli } from '../cli/run.js'
import { type ConsoleRig, noDialogs, shot, skipRedis, startConsoleRig } from './rig.js'
import { placeSixOrders, type SixOrders } from './six-orders.js'
import { expectOverview, expectStandings, findOrder, lifeOf, retryDeadLetter, searchByEmail, untilStanding } from './walk.js'

/**
 * `fpx-collect console --store redis://…` as an operator runs it beside a fleet: a process of its own over the
 * Redis store the app's receiver uses, on 127.0.0.1, entered through the one-time link it prints.
 */
const NAME = 'Ravi (night shift)'

describe.skipIf(skipRedis)('fpx-collect console over the shared Redis store', () => {
  let rig: ConsoleRig
  let orders: SixOrders
  let cli: ChildProcessWithoutNullStreams
  let output = ''
  let link: string
  let base: string
  let context: BrowserContext
  let page: Page
  const dialogs: string[] = []

  beforeAll(async () => {
    rig = await startConsoleRig('express')
    orders = await placeSixOrders(rig)
    cli = startCli(['console', '--store', REDIS_URL, '--prefix', rig.redisPrefix, '--port', '0', '--name', NAME])
    cli.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
    cli.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
    await new Promise<void>((resolve, reject) => {
      cli.stdout.on('data', () => output.includes('Press Ctrl+C') && resolve())
      cli.once('close', (code) => reject(new Error(`fpx-collect console exited with ${code}: ${output}`)))
    })
    link = /open\s+(\S+)/.exec(output)?.[1] ?? ''
    base = new URL(link).origin
    context = await rig.browser.newContext()
    page = await context.newPage()
    page.setDefaultTimeout(5_000)
    noDialogs(page, dialogs)
  }, 60_000)
  afterAll(async () => {
    await context?.close()
    cli?.kill('SIGTERM')
    await rig?.close()
  })

  it('listens on 127.0.0.1 only, refuses a browser without the link, and lets the link in once', async () => {
    expect(link).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/login\?token=[\w-]{43}$/)
    // The store by its host alone: a URL's password is never printed.
    expect(output).toContain(`fpx-collect console for redis://${new URL(REDIS_URL).host}\n`)
    expect((await page.goto(base))?.status()).toBe(403)
    await page.goto(link)
    expect(new URL(page.url()).pathname).toBe('/')
    expect(await page.locator('h1').textContent()).toBe('Overview')
    const cookie = (await context.cookies(base)).find((one) => one.name === 'fpx_console_session')
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict' })
    // A second browser with the same link gets nothing.
    const other = await rig.browser.newPage()
    expect((await other.goto(link))?.status()).toBe(403)
    expect(await other.locator('h1').textContent()).toBe('Link used already')
    await other.close()
  })

  it('shows the six orders where an operator expects them, from the store alone', async () => {
    await expectStandings(page, base, orders)
    await searchByEmail(page, base, 'MEI@example.com', orders.paid)
    await expectOverview(page, base)
    await shot(page, 'cli-overview')
    // No receiver here: nothing is looked up from this process.
    await findOrder(page, base, orders.lost)
    expect(await page.locator('button[name="lookup"]').count()).toBe(0)
    await page.goto(`${base}/refusals`)
    expect(await page.locator('main').textContent()).toContain('Mount the console in the app')
    expect(dialogs).toEqual([])
  })

  it('retries the dead letter: the app’s inbox workers run the handler once, and the timeline names who retried', async () => {
    rig.failing.delete(orders.throwing)
    await retryDeadLetter(page, base, orders.throwing)
    await findOrder(page, base, orders.throwing)
    await untilStanding(page, 'succeeded')
    await shot(page, 'cli-payment-retried')
    expect(await lifeOf(page)).toContain('console:retried')
    expect(await page.locator('tr[data-event="retried"]').textContent()).toContain(NAME)
    expect(rig.runs.get(orders.throwing)).toBe(1)
  })

  it('stops on SIGTERM with exit code 0', async () => {
    const closed = new Promise<number | null>((resolve) => cli.once('close', resolve))
    cli.kill('SIGTERM')
    expect(await closed).toBe(0)
    expect(output).toContain('stopped (SIGTERM)')
  })
})
