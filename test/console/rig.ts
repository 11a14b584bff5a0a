import { randomUUID } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdirSync } from 'node:fs'
import express from 'express'
import Fastify from 'fastify'
import { Redis } from 'ioredis'
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core'
import { fpxCallback, fpxConsole as expressConsole } from '../../adapters/express.js'
import { fpxCollect, fpxConsole as fastifyConsole } from '../../adapters/fastify.js'
import { createClient, type FpxClient } from '../../src/client/index.js'
import { createReceiver, type Receiver, type ReceiverStore } from '../../src/index.js'
import { redisStore } from '../../src/stores/redis/store.js'
import { deleteRedisKeys } from '../../soak/resources.js'
import { CHROMIUM, skipBrowser } from '../browser/harness.js'
import { DEMO, type Emulator, launch } from '../client/helpers.js'
import { REDIS_URL, serviceAvailable } from '../stores/services.js'

/**
 * The console tests' rig: a merchant app (Express or Fastify) receiving the emulator's callbacks with a receiver
 * on Redis in inbox mode, its console mounted under /admin/payments, and real Chromium. Operators are signed in by
 * the app's own cookie, which its authorize hook reads.
 */
export { skipBrowser }
export const skipRedis = skipBrowser || !(await serviceAvailable('Redis', REDIS_URL))

export type Mount = 'express' | 'fastify'
export const OPERATOR = 'Aisyah (operations)'
export const CONSOLE_PATH = '/admin/payments'
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync']
export const SHOTS = 'test-results/console'

/** Sweeper horizons in milliseconds: a test's day is under a second. Swept only when the test says. */
export const SWEEP = { inProcess: false, firstLookupAfterMs: 1, backoff: { baseMs: 50, maxMs: 100 }, abandonAfterMs: 400, pendingAbandonAfterMs: 3_600_000, maxLookupsPerMinute: 60_000 }

export interface ConsoleRig {
  readonly browser: Browser
  readonly emulator: Emulator
  readonly receiver: Receiver<unknown>
  /** The merchant's API client, recording each payment in the receiver's book. */
  readonly client: FpxClient
  readonly store: ReceiverStore<unknown>
  readonly redisPrefix: string
  readonly appUrl: string
  readonly consoleUrl: string
  /** Handler runs that completed, by order number. */
  readonly runs: Map<string, number>
  /** Orders whose handler throws, until taken out. */
  readonly failing: Set<string>
  /** The cookie the app's authorize hook takes as the operator's sign-in. */
  readonly operatorCookie: string
  /** A browser context signed in to the app as the operator; every page it opens fails the test on a dialog. */
  operator(): Promise<BrowserContext>
  close(): Promise<void>
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`))
  })
}

/** Fails the test when a page shows any dialog (an alert() a script injected would open). */
export function noDialogs(page: Page, seen: string[]): void {
  page.on('dialog', (dialog) => {
    seen.push(dialog.message())
    void dialog.dismiss()
  })
}

export async function startConsoleRig(mount: Mount, options: { authorize?: boolean; emulator?: Parameters<typeof launch>[0] } = {}): Promise<ConsoleRig> {
  mkdirSync(SHOTS, { recursive: true })
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS })
  const emulator = await launch(options.emulator)
  const redisPrefix = `fpx-console-test:${randomUUID()}:`
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
  const store = redisStore({ client: redis, prefix: redisPrefix, inspect: false }) as ReceiverStore<unknown>
  const receiver = createReceiver({
    environment: { baseUrl: emulator.baseUrl },
    credentials: DEMO,
    store,
    inbox: { maxAttempts: 2, backoff: { baseMs: 20, maxMs: 40 }, pollMs: 50 },
    sweep: SWEEP,
    logger: process.env.CONSOLE_TEST_LOG ? { debug() {}, info: (d: object, m: string) => console.log('info', m, d), warn: (d: object, m: string) => console.log('warn', m, d), error: (d: object, m: string) => console.log('error', m, d) } : false,
  } as Parameters<typeof createReceiver<unknown>>[0])
  const runs = new Map<string, number>()
  const failing = new Set<string>()
  for (const name of ['payment.succeeded', 'payment.failed', 'payment.pending'] as const)
    receiver.on(name, (event) => {
      const order = event.payment.orderNumber
      if (failing.has(order)) throw new Error(`the ERP refused order ${order}: its ledger is locked`)
      runs.set(order, (runs.get(order) ?? 0) + 1)
    })
  const client = createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO, book: receiver, retryDelayMs: 1, logger: false })
  const operatorCookie = randomUUID()
  const authorize = options.authorize === false ? undefined : (request: Request) => (request.headers.get('cookie')?.includes(`shop_operator=${operatorCookie}`) ? OPERATOR : false)

  let appUrl: string
  let stopApp: () => Promise<void>
  if (mount === 'express') {
    const app = express()
    app.post('/fpx/callback', fpxCallback(receiver))
    // A body parser the app mounts for its own forms, before the console: the console reads what it parsed.
    app.use(express.urlencoded({ extended: false }))
    app.use(CONSOLE_PATH, expressConsole(receiver, authorize === undefined ? {} : { authorize }))
    const server = createServer(app)
    appUrl = await listen(server)
    stopApp = () =>
      new Promise((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
  } else {
    const app = Fastify()
    await app.register(fpxCollect, { receiver, callbackPath: '/fpx/callback', redirectPath: false })
    await app.register(fastifyConsole, { receiver, prefix: CONSOLE_PATH, ...(authorize === undefined ? {} : { authorize }) })
    await app.listen({ port: 0, host: '127.0.0.1' })
    appUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
    stopApp = () => app.close()
  }

  return {
    browser,
    emulator,
    receiver,
    client,
    store,
    redisPrefix,
    appUrl,
    consoleUrl: `${appUrl}${CONSOLE_PATH}`,
    runs,
    failing,
    operatorCookie,
    async operator() {
      const context = await browser.newContext()
      await context.addCookies([{ name: 'shop_operator', value: operatorCookie, url: appUrl }])
      return context
    },
    async close() {
      await browser.close()
      await receiver.close()
      await stopApp()
      await emulator.stop()
      await deleteRedisKeys(redis, redisPrefix).catch(() => 0)
      await redis.quit()
    },
  }
}

/**
 * A full-page screenshot under test-results/console/; with FPX_UPDATE_DOC_IMAGES=1 also as docs/images/<docName>,
 * the pictures docs/operations.md shows (kept out of ordinary runs, whose times and numbers differ each time).
 */
export async function shot(page: Page, name: string, docName?: string): Promise<void> {
  await page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: true })
  if (docName !== undefined && process.env.FPX_UPDATE_DOC_IMAGES === '1') await page.screenshot({ path: `docs/images/${docName}`, fullPage: true })
}
