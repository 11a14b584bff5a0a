import type { AddressInfo } from 'node:net'
import { bankRoutes } from './api-banks.js'
import { controlRoutes } from './api-control.js'
import { merchantRoutes } from './api-merchants.js'
import { paymentRoutes } from './api-payments.js'
import { sessionRoutes } from './api-session.js'
import { transactionRoutes } from './api-transactions.js'
import { type EmulatorConfig, resolveConfig } from './config.js'
import { CallbackDeliverer, type DeliveryOptions } from './delivery.js'
import { buildApp, loadFastify } from './fastify-app.js'
import { accountRoutes } from './pages-account.js'
import { BANK_PAGE_TIMEOUT_MS, hostedPageRoutes } from './pages-routes.js'
import { EmulatorState, loadState, saveState } from './state.js'

export interface EmulatorOptions {
  /** Default 0: any free port. */
  port?: number
  /** Default 127.0.0.1. The control API has no authentication: keep it on loopback. */
  host?: string
  config?: EmulatorConfig
  /** Loaded on start when it exists, written after every change and on stop. */
  stateFile?: string
  /** The clock, for tests of dates and windows. */
  now?: () => Date
  /** Where the emulator reports its own failures (answered 500) and, outside strict mode, what it tolerated. Default: standard error. */
  log?: (line: string) => void
  /** Callbacks to callback_url: attempts, backoff, time-out, transport; over the config file's `delivery`. */
  delivery?: DeliveryOptions
  /** The bank-selection page's time-out when timeout_url is set. Default 3 minutes, as the spec says. */
  bankPageTimeoutMs?: number
  /** Refuse what the real service accepts but the spec's strict reading does not, instead of warning. Over the config file's `strict`. */
  strict?: boolean
}

export interface RunningEmulator {
  /** The server's root, such as http://127.0.0.1:4010. */
  readonly url: string
  /** The service's {base_url}: `${url}/api`. */
  readonly baseUrl: string
  readonly state: EmulatorState
  stop(): Promise<void>
}

const API_PREFIX = '/api'
const CONTROL_PREFIX = '/__emulator'

export async function startEmulator(options: EmulatorOptions = {}): Promise<RunningEmulator> {
  const { port = 0, host = '127.0.0.1', stateFile, log = (line: string) => console.error(line) } = options
  const Fastify = await loadFastify()
  const persist = stateFile === undefined ? () => {} : (changed: EmulatorState) => saveState(changed, stateFile)
  const state = new EmulatorState(resolveConfig(options.config), options.now, persist)
  if (stateFile !== undefined) loadState(state, stateFile)
  state.strict = options.strict ?? options.config?.strict ?? false
  state.warnings.log = log
  const deliverer = new CallbackDeliverer({ ...options.config?.delivery, ...options.delivery }, { strict: state.strict, warnings: state.warnings })
  const pages = hostedPageRoutes({ deliverer, bankPageTimeoutMs: options.bankPageTimeoutMs ?? BANK_PAGE_TIMEOUT_MS })
  const app = buildApp(
    Fastify,
    [
      { prefix: API_PREFIX, routes: [...merchantRoutes, ...bankRoutes, ...paymentRoutes, ...pages, ...transactionRoutes, ...sessionRoutes, ...accountRoutes] },
      { prefix: CONTROL_PREFIX, routes: controlRoutes(deliverer) },
    ],
    state,
    log,
  )
  await app.listen({ port, host })
  const address = app.server.address() as AddressInfo
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`
  state.baseUrl = `${url}${API_PREFIX}`
  let stopped: Promise<void> | undefined
  return {
    url,
    baseUrl: state.baseUrl,
    state,
    stop() {
      stopped ??= (async () => {
        const closing = app.close()
        if (stateFile !== undefined) saveState(state, stateFile)
        // Pending retries would otherwise post callbacks after the emulator is gone.
        await Promise.all([closing, deliverer.stop()])
      })()
      return stopped
    },
  }
}
