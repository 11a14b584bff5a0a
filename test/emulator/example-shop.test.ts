import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { hiddenFields } from './harness.js'
import { encodeForm } from '../../src/testing.js'
import type { FieldInput } from '../../src/core/values.js'
import { type Emulator, launch } from './harness.js'

/**
 * The example shop (examples/web, run by tsx as `npm run example:web` does) on its built-in demo credentials,
 * pointed at the emulator: the seeded demo merchant must accept its payment requests and sign results it accepts.
 */
let emulator: Emulator
let shop: ChildProcess
let shopUrl: string

beforeAll(async () => {
  emulator = await launch()
  shop = spawn(process.execPath, ['--import', 'tsx', 'examples/web/app.ts'], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', FPX_BASE_URL: emulator.baseUrl, FPX_UID: '', FPX_AUTH_TOKEN: '', FPX_CHECKSUM_TOKEN: '' },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const lines = createInterface({ input: shop.stdout as NodeJS.ReadableStream })
  for await (const line of lines) {
    const found = /shop on (http:\/\/[^/\s]+)\//.exec(line)
    if (found?.[1] !== undefined) {
      shopUrl = found[1]
      break
    }
  }
}, 30_000)

afterAll(async () => {
  if (shop.exitCode === null) {
    shop.kill('SIGTERM')
    await once(shop, 'exit')
  }
  await emulator.stop()
})


it('takes a checkout of the example shop from payment request to a paid order', async () => {
  expect(shopUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
  const checkout = await fetch(`${shopUrl}/checkout`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ name: 'Tan Mei Ling', email: 'mei@example.com', phone: '+60129876543', amount: '42.50', product: 'Teh tarik set' }),
  })
  const request = hiddenFields(await checkout.text())
  expect(request.order_number).toMatch(/^ORD-/)

  const created = await emulator.postForm('/v1/payments', request, null)
  expect(created.status).toBe(200)
  await created.text()
  const exchangeNumber = created.headers.get('x-exchange-number') as string
  expect(emulator.state.payment(exchangeNumber)?.callbackUrl).toBe(`${shopUrl}/fpx/callback`)

  const { result } = (await emulator.complete(exchangeNumber, 'approve')) as { result: Record<string, FieldInput> }
  const callback = await fetch(`${shopUrl}/fpx/callback`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: encodeForm(result),
  })
  expect(callback.status).toBe(200)
  const order = await (await fetch(`${shopUrl}/orders/${request.order_number}`)).text()
  expect(order).toMatch(/paid/)
  expect(order).not.toMatch(/awaiting payment/)
})
