/**
 * Before an example shop starts from the command line: is the service it is configured for answering? Without
 * this check the shop took orders and sent the buyer's browser to a dead address. When nothing answers at a
 * loopback address and the shop runs on the demo credentials, the local emulator is started there, in the same
 * process (as `npm run demo` does), and stops with the shop; otherwise the shop does not start, and says how to
 * start the emulator or where to point FPX_BASE_URL.
 */
import { startEmulator } from 'fpx-collect/emulator'
import { DEMO_CONFIG, type ShopConfig } from './shop.js'

export interface Service {
  /** One line for the console: where payment requests go and whether the emulator was started for them. */
  readonly note: string
  stop(): Promise<void>
}

const PROBE_TIMEOUT_MS = 3000
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]'])

/** Why the public bank list did not answer, or null when it did (whatever the status: something is there). */
async function unanswered(baseUrl: string): Promise<string | null> {
  try {
    await (await fetch(`${baseUrl}/public/v1/banks/b2c`, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) })).arrayBuffer()
    return null
  } catch (error) {
    if (error instanceof Error && error.name === 'TimeoutError') return `no answer within ${PROBE_TIMEOUT_MS / 1000} s`
    const code = (error as { cause?: { code?: unknown } }).cause?.code
    return typeof code === 'string' ? code : error instanceof Error ? error.message : String(error)
  }
}

function usesDemoCredentials(config: ShopConfig): boolean {
  return config.uid === DEMO_CONFIG.uid && config.authToken === DEMO_CONFIG.authToken && config.checksumToken === DEMO_CONFIG.checksumToken
}

/** Thrown when the shop should not start; its message says how to get a service to talk to. */
export class NoService extends Error {
  override readonly name = 'NoService'
}

export async function ensureService(config: ShopConfig, log: (line: string) => void = (line) => console.error(line)): Promise<Service> {
  const none = { stop: () => Promise.resolve() }
  const reason = await unanswered(config.baseUrl)
  if (reason === null) return { ...none, note: `payment requests go to ${config.baseUrl}/v1/payments as uid ${config.uid}` }

  const url = new URL(config.baseUrl)
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port)
  const local = url.protocol === 'http:' && LOOPBACK.has(url.hostname) && url.pathname.replace(/\/+$/, '') === '/api'
  if (local && reason === 'ECONNREFUSED' && usesDemoCredentials(config)) {
    const host = url.hostname === '[::1]' ? '::1' : url.hostname
    try {
      const emulator = await startEmulator({ port, host, log: (line) => log(`emulator: ${line}`) })
      const note = `nothing answered at ${config.baseUrl}: started the local emulator there (it stops with the shop); payment requests go to ${emulator.baseUrl}/v1/payments`
      return { note, stop: () => emulator.stop() }
    } catch (error) {
      throw new NoService(`nothing answers at ${config.baseUrl} and the emulator could not start there: ${error instanceof Error ? error.message : String(error)}`)
    }
  }

  const start = local
    ? ` Start the local emulator in another terminal: npm run cli -- emulator --port ${port} (in this repository; npx fpx-collect emulator --port ${port} where the package is installed)` +
      (usesDemoCredentials(config) ? '.' : ', with your FPX_UID, FPX_AUTH_TOKEN and FPX_CHECKSUM_TOKEN in its --config file (or unset them to use its demo merchant).')
    : ' Check FPX_BASE_URL (the service\'s {base_url}, ending in /api) and the network.'
  throw new NoService(`nothing answers at ${config.baseUrl} (${reason}), so every payment would go to a dead address.${start} Or leave FPX_BASE_URL unset and FPX_UID, FPX_AUTH_TOKEN, FPX_CHECKSUM_TOKEN unset: the shop then starts the emulator itself.`)
}
