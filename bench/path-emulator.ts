/**
 * The emulator for bench/path-files.ts, in a process of its own so that its code is not counted on the receiver's
 * path. Told a callback_url, it makes a payment, approves it and so posts its signed result there; it answers with
 * the exchange_number.
 */
import { DEMO_MERCHANT, startEmulator } from '../src/emulator/index.js'

const emulator = await startEmulator({})
const credentials = DEMO_MERCHANT.credentials?.[0]
process.send?.({ baseUrl: emulator.baseUrl, credentials })
process.on('message', async (callbackUrl: string) => {
  const control = (path: string, body: object) =>
    fetch(`${emulator.url}/__emulator${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const created = (await (await control('/payments', { callback_url: callbackUrl })).json()) as { exchange_number: string }
  await control(`/payments/${created.exchange_number}/complete`, { outcome: 'approve' })
  process.send?.({ exchangeNumber: created.exchange_number })
})
process.on('disconnect', () => void emulator.stop().then(() => process.exit(0)))
