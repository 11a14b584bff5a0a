// shop.mts: npm install fpx-collect express fastify tsx && npx tsx shop.mts
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import express from 'express'
import { createReceiver } from 'fpx-collect'
import { createClient } from 'fpx-collect/client'
import { startEmulator } from 'fpx-collect/emulator'
import { fpxCallback, fpxRedirect } from 'fpx-collect/express'

// Your credentials from the service's dashboard. These are made up, for the emulator.
const credentials = {
  uid: process.env.FPX_UID ?? '0c0ffee0-d3e0-4a11-8f00-00000000d3e0',
  authToken: process.env.FPX_AUTH_TOKEN ?? 'DemoAuthToken0000000',
  checksumToken: process.env.FPX_CHECKSUM_TOKEN ?? '0123456789abcdef'.repeat(4),
}

// 1. The service: a local emulator, in-process, knowing the same credentials.
const emulator = await startEmulator({ config: { merchants: [{ name: 'My Shop', credentials: [credentials] }] } })

// 2. The receiver verifies every result's checksum, confirms it over the service's API (handlers get the API's
//    record), deduplicates it, and runs the handlers once per payment state. A failed or pending attempt of an
//    order already paid runs no handler, so "paid" is never overwritten.
const environment = { baseUrl: emulator.baseUrl }
const orders = new Map<string, string>() // your database
const receiver = createReceiver({ environment, credentials })
receiver.on('payment.succeeded', async (event) => {
  const { orderNumber, amountSen, exchangeNumber } = event.payment
  console.log(`paid: order ${orderNumber}, ${amountSen} sen, exchange_number ${exchangeNumber}, by ${event.delivery}`)
  orders.set(orderNumber, 'paid')
})
receiver.on('payment.failed', async (event) => {
  orders.set(event.payment.orderNumber, `failed (${event.payment.failureCode})`)
})
receiver.on('payment.pending', async (event) => {
  orders.set(event.payment.orderNumber, 'awaiting corporate approval')
})

// 3. The app: the adapter reads the raw body itself, so mount it before any body parser.
const app = express()
app.post('/fpx/callback', fpxCallback(receiver))
app.all('/fpx/redirect', fpxRedirect(receiver, { successUrl: (payment) => `/orders/${payment.orderNumber}` }))
app.get('/orders/:number', (req, res) => {
  res.send(orders.get(req.params.number) ?? 'awaiting payment')
})
const server = app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1')
await once(server, 'listening')
const shop = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

// 4. A payment: the client signs the request; the buyer's browser would go on to nextUrl.
const client = createClient({ environment, ...credentials })
const orderNumber = `ORD-${Date.now()}`
const { nextUrl, exchangeNumber } = await client.createPayment({
  order_number: orderNumber,
  transaction_amount: '100.20',
  product_description: 'Coffee beans',
  buyer_name: 'Nur Aisyah',
  buyer_email: 'aisyah@example.com',
  buyer_phone: '+60123456789',
  callback_url: `${shop}/fpx/callback`,
  redirect_url: `${shop}/fpx/redirect`,
})
console.log(`buyer goes to ${nextUrl}`)

// 5. Instead of a buyer clicking through the bank's pages: the emulator's control API approves the payment,
//    and the emulator posts the signed result to callback_url.
await fetch(`${emulator.url}/__emulator/payments/${exchangeNumber}/complete`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ outcome: 'approve' }),
})
for (let waited = 0; orders.get(orderNumber) !== 'paid' && waited < 10_000; waited += 50) await sleep(50)
console.log(`order ${orderNumber}: ${orders.get(orderNumber) ?? 'awaiting payment'}`)

server.close()
await emulator.stop()
