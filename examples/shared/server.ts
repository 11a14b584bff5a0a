/** Starting and stopping the examples: in-process (the demo) or from the command line (`npm run example:express`). */
import { realpathSync } from 'node:fs'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { pathToFileURL } from 'node:url'
import { ensureService } from './service.js'
import { configFromEnv, type RunningShop, type StartOptions } from './shop.js'

export function urlOf(address: AddressInfo | string | null): string {
  if (address === null || typeof address === 'string') throw new Error('the server is not listening on a TCP port')
  const host = address.address.includes(':') ? `[${address.address}]` : address.address
  return `http://${host}:${address.port}`
}

/** Resolves once listening, and rejects (port in use, ...) rather than leaving an unhandled 'error' event. */
export function listen(server: Server, port = 0, host = '127.0.0.1'): Promise<{ url: string; close: () => Promise<void> }> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      const close = () =>
        new Promise<void>((done, fail) => {
          server.close((error) => (error ? fail(error) : done()))
          // Keep-alive connections would otherwise hold close() open until they time out.
          server.closeAllConnections()
        })
      resolve({ url: urlOf(server.address()), close })
    })
  })
}

/**
 * Starts the app when its file is the one node was asked to run, with configuration from the environment, once
 * the service it is configured for answers (or the local emulator was started for it: shared/service.ts).
 */
export function runIfMain(
  moduleUrl: string,
  name: string,
  start: (options: StartOptions) => Promise<RunningShop>,
  defaultPort: number,
): void {
  const entry = process.argv[1]
  if (entry === undefined || pathToFileURL(realpathSync(entry)).href !== moduleUrl) return
  const config = configFromEnv()
  const port = Number(process.env.PORT || defaultPort)
  const failed = (what: string) => (error: unknown) => {
    console.error(`${name} shop ${what}:`, error instanceof Error ? error.message : error)
    process.exit(1)
  }
  ensureService(config).then(async (service) => {
    const shop = await start({ port, host: process.env.HOST || '127.0.0.1', config }).catch(async (error: unknown) => {
      await service.stop()
      throw error
    })
    console.log(`${name} shop on ${shop.url}/ (orders: ${shop.url}/orders)`)
    if (shop.consoleLink !== undefined) console.log(`operator's console: ${shop.consoleLink} (a one-time sign-in link)`)
    console.log(service.note)
    const unset = ['FPX_UID', 'FPX_AUTH_TOKEN', 'FPX_CHECKSUM_TOKEN'].filter((name) => !process.env[name])
    if (unset.length > 0) console.log(`demo credentials in use: ${unset.join(', ')} not set (fine with the local emulator only)`)
    if (config.paymentCreation !== 'server')
      console.log("checkout: the buyer's browser posts the payment form, which holds the Auth Token; FPX_PAYMENT_CREATION=server keeps it on the server")
    const stop = () => void Promise.all([shop.close(), service.stop()]).then(() => process.exit(0))
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
  }, failed('did not start')).catch(failed('could not start'))
}
