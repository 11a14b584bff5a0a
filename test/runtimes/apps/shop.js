/**
 * What every runtime app shares: the receiver, created when the app's module is evaluated (module scope), its
 * handler, and GET /status, which tells the harness which runtime answered, whether module-scope creation
 * worked, and how many times the handler ran for each exchange_number.
 */
import { createReceiver } from 'fpx-collect'
import { fpxCallback, fpxRedirect } from 'fpx-collect/web'

/**
 * config: { baseUrl, uid, authToken, checksumToken }, read by each app from its runtime's environment
 * (process.env, Deno.env, a Worker's bindings): the emulator's {base_url} and the demo merchant's credentials.
 */
function newReceiver(config) {
  return createReceiver({ environment: { baseUrl: config.baseUrl }, credentials: { uid: config.uid, authToken: config.authToken, checksumToken: config.checksumToken } })
}

function describe(error) {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error)
}

/** Called at the top level of each app's module, so the receiver is created at module scope. */
export function createShop(config, runtime) {
  const handled = new Map()
  const confirmed = new Map()
  let receiver
  let moduleScope = 'ok'
  const withHandlers = (created) => {
    created.on('payment.succeeded', (event) => {
      handled.set(event.payment.exchangeNumber, (handled.get(event.payment.exchangeNumber) ?? 0) + 1)
      // Whether the receiver confirmed the result over the API (undefined where the receiver does not say).
      confirmed.set(event.payment.exchangeNumber, event.confirmed)
    })
    return created
  }
  try {
    receiver = withHandlers(newReceiver(config))
  } catch (error) {
    // Recorded for GET /status, then created on first use, so the rest of the round still tells what works.
    moduleScope = describe(error)
    console.error('createReceiver at module scope failed:', error)
  }
  const getReceiver = () => (receiver ??= withHandlers(newReceiver(config)))

  const callback = fpxCallback(getReceiver)
  const redirect = fpxRedirect(getReceiver, { successUrl: '/paid', failureUrl: '/failed' })
  const status = () => Response.json({ runtime: runtime(), moduleScope, handled: Object.fromEntries(handled), confirmed: Object.fromEntries(confirmed) })

  /** A router for the runtimes that have none: POST /fpx/callback, POST /fpx/redirect, GET /status. */
  async function fetch(request) {
    const { pathname } = new URL(request.url)
    if (request.method === 'POST' && pathname === '/fpx/callback') return callback(request)
    if (request.method === 'POST' && pathname === '/fpx/redirect') return redirect(request)
    if (request.method === 'GET' && pathname === '/status') return status()
    return new Response('not found', { status: 404 })
  }

  /** The receiver's background work (the timeline), for the runtime to finish after the answer (waitUntil). */
  const flush = () => getReceiver().flush()

  return { callback, redirect, status, fetch, flush }
}

/** The app's configuration from environment variables, whichever way the runtime reads them. */
export function configFrom(read) {
  return { baseUrl: read('FPX_BASE_URL'), uid: read('FPX_UID'), authToken: read('FPX_AUTH_TOKEN'), checksumToken: read('FPX_CHECKSUM_TOKEN') }
}
