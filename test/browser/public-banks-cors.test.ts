import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type Browser, chromium } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Emulator, launch } from '../emulator/harness.js'
import { CHROMIUM, skipBrowser } from './harness.js'

/**
 * A shop page on another origin loads the public bank list from the browser, as real checkout pages do
 * (issue 9 §1). Chromium enforces CORS, so this fails unless the emulator answers with Access-Control-Allow-Origin.
 */
describe.skipIf(skipBrowser)('public bank lists read cross-origin in Chromium', () => {
  let browser: Browser
  let emulator: Emulator
  let shop: Server
  let shopUrl: string

  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu'] })
    emulator = await launch()
    shop = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>shop</title>'))
    await new Promise<void>((resolve) => shop.listen(0, '127.0.0.1', resolve))
    shopUrl = `http://127.0.0.1:${(shop.address() as AddressInfo).port}/`
  }, 30_000)
  afterAll(async () => {
    await browser?.close()
    await emulator?.stop()
    await new Promise((resolve) => shop?.close(resolve))
  })

  it('lets a page on another origin fetch /public/v1/banks/b2c, with and without a preflight, but not a private endpoint', async () => {
    const page = await browser.newPage()
    await page.goto(shopUrl)
    const outcome = await page.evaluate(async (base) => {
      const read = async (url: string, init?: RequestInit) => {
        try {
          const response = await fetch(url, init)
          return `${response.status}:${((await response.json()) as { fpx_bankList?: unknown[] }).fpx_bankList?.length ?? 'none'}`
        } catch (error) {
          return `blocked:${(error as Error).name}`
        }
      }
      return {
        simple: await read(`${base}/public/v1/banks/b2c`),
        // A custom header makes the browser send an OPTIONS preflight first.
        preflighted: await read(`${base}/public/v1/banks/b2b?status=`, { headers: { 'x-requested-with': 'XMLHttpRequest' } }),
        private: await read(`${base}/v1/banks/b2c`),
      }
    }, emulator.baseUrl)
    await page.close()
    expect(outcome.simple).toMatch(/^200:[1-9]\d*$/)
    expect(outcome.preflighted).toMatch(/^200:[1-9]\d*$/)
    expect(outcome.private).toBe('blocked:TypeError')
  })
})
