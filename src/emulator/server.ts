import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { bankRoutes } from './api-banks.js'
import { controlRoutes } from './api-control.js'
import { merchantRoutes } from './api-merchants.js'
import { paymentRoutes } from './api-payments.js'
import { sessionRoutes } from './api-session.js'
import { transactionRoutes } from './api-transactions.js'
import { type EmulatorConfig, resolveConfig } from './config.js'
import { CallbackDeliverer, type DeliveryOptions } from './delivery.js'
import { ApiError } from './errors.js'
import { type CompiledRoute, compile, match, type Reply } from './http.js'
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
  /** Where the emulator reports its own failures (answered 500). Default: standard error. */
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

function send(req: IncomingMessage, res: ServerResponse, reply: Reply): void {
  const isJson = 'json' in reply
  const body = isJson ? JSON.stringify(reply.json) : 'bytes' in reply ? reply.bytes : reply.html
  res.writeHead(reply.status ?? 200, {
    'content-type': isJson ? 'application/json; charset=utf-8' : 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    ...reply.headers,
  })
  res.end(req.method === 'HEAD' ? undefined : body)
}

function failure(error: unknown, log: (line: string) => void): Reply {
  if (!(error instanceof ApiError)) log(`fpx-collect emulator: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
  const known = error instanceof ApiError ? error : new ApiError(500, 'internal_error', 'the emulator failed to handle the request')
  return { status: known.status, json: known.toJSON(), headers: known.headers }
}

function clientIp(req: IncomingMessage): string {
  const address = req.socket.remoteAddress ?? ''
  return address.startsWith('::ffff:') ? address.slice(7) : address
}

export async function startEmulator(options: EmulatorOptions = {}): Promise<RunningEmulator> {
  const { port = 0, host = '127.0.0.1', stateFile, log = (line: string) => console.error(line) } = options
  const persist = stateFile === undefined ? () => {} : (changed: EmulatorState) => saveState(changed, stateFile)
  const state = new EmulatorState(resolveConfig(options.config), options.now, persist)
  if (stateFile !== undefined) loadState(state, stateFile)
  state.strict = options.strict ?? options.config?.strict ?? false
  state.warnings.log = log
  const deliverer = new CallbackDeliverer({ ...options.config?.delivery, ...options.delivery }, { strict: state.strict, warnings: state.warnings })
  const pages = hostedPageRoutes({ deliverer, bankPageTimeoutMs: options.bankPageTimeoutMs ?? BANK_PAGE_TIMEOUT_MS })
  const api = compile([...merchantRoutes, ...bankRoutes, ...paymentRoutes, ...pages, ...transactionRoutes, ...sessionRoutes, ...accountRoutes])
  const control = compile(controlRoutes(deliverer))

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://emulator.invalid')
    const path = url.pathname
    let routes: CompiledRoute[] | undefined
    let prefix = ''
    if (path.startsWith(`${API_PREFIX}/`)) [routes, prefix] = [api, API_PREFIX]
    else if (path.startsWith(`${CONTROL_PREFIX}/`)) [routes, prefix] = [control, CONTROL_PREFIX]
    try {
      if (routes === undefined) throw new ApiError(404, 'not_found', `no endpoint here; the API is under ${API_PREFIX}`)
      const { route, params } = match(routes, req.method ?? 'GET', path.slice(prefix.length))
      send(req, res, await route.handler({ req, url, params, state, clientIp: clientIp(req) }))
    } catch (error) {
      // The body may be half read; closing avoids reading the rest of a refused large upload.
      if (error instanceof ApiError && error.status === 413) res.setHeader('connection', 'close')
      send(req, res, failure(error, log))
    }
  }

  const server = createServer((req, res) => void handle(req, res))
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const address = server.address() as AddressInfo
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`
  state.baseUrl = `${url}${API_PREFIX}`
  let stopped: Promise<void> | undefined
  return {
    url,
    baseUrl: state.baseUrl,
    state,
    stop() {
      stopped ??= Promise.all([
        new Promise<void>((resolve, reject) => {
          server.close((error) => (error === undefined ? resolve() : reject(error)))
          server.closeAllConnections()
          if (stateFile !== undefined) saveState(state, stateFile)
        }),
        // Pending retries would otherwise post callbacks after the emulator is gone.
        deliverer.stop(),
      ]).then(() => {})
      return stopped
    },
  }
}
