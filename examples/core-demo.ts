/**
 * npm run demo — the receiver core on its embedded defaults, fed the deliveries a shop sees in a day: a B2C
 * success (callback, then the buyer's redirect), a buyer who cancelled at the bank (1C), a B2B1 payment pending
 * corporate approval (99) then approved (00) then a late 99, and a forged callback. Prints what the handlers saw
 * and what each delivery got back.
 */
import { createReceiver, type FieldInput } from 'fpx-collect'
import { samplePaymentFields, signCallback } from 'fpx-collect/testing'

// In a real app these come from the dashboard, through the environment; never from source code.
const checksumToken = process.env.FPX_CHECKSUM_TOKEN ?? '9b1d4c7e2a5f8b0c3d6e9f2a5b8c1d4e7f0a3b6c9d2e5f8a1b4c7d0e3f6a9b2c'

const paidOrders = new Set<string>()
const receiver = createReceiver({ checksumToken })

receiver.on('payment.succeeded', (event) => {
  paidOrders.add(event.payment.orderNumber)
  const after = event.previousState ? ` (after ${event.previousState})` : ''
  console.log(`  handler: order ${event.payment.orderNumber} paid RM${(event.payment.amountSen / 100).toFixed(2)}${after}`)
})
receiver.on('payment.failed', (event) => {
  console.log(`  handler: order ${event.payment.orderNumber} failed, bank code ${event.payment.failureCode}`)
})
receiver.on('payment.pending', (event) => {
  console.log(`  handler: order ${event.payment.orderNumber} awaits corporate approval (99)`)
})

async function deliver(label: string, kind: 'callback' | 'redirect', fields: Record<string, FieldInput>, forge = false) {
  const signed = signCallback(fields, checksumToken)
  // A forger without the Checksum Token can only change the fields, not re-sign them.
  const body = forge ? signed.body.replace('transaction_amount=100.20', 'transaction_amount=1.00') : signed.body
  console.log(`${label} (${kind})`)
  const response = await receiver.handle({ kind, body: Buffer.from(body), contentType: signed.contentType })
  const detail = response.error ? ` ${response.error.code}` : ''
  console.log(`  -> ${response.status} ${response.outcome}${detail}`)
  return response
}

const b2c = samplePaymentFields()
await deliver('B2C payment succeeded', 'callback', b2c)
await deliver('Same result through the buyer\'s browser', 'redirect', b2c)
await deliver('The service retries the callback', 'callback', b2c)

const cancelled = samplePaymentFields({
  payment_status: 'false',
  transaction_amount_received: '0.00',
  fpx_debit_auth_code: '1C',
  fpx_status: 'false',
  fpx_status_message: 'Buyer cancelled',
  payment_stage: 'payment_unsuccessful',
})
await deliver('Buyer cancelled at the bank', 'callback', cancelled)

const pending = samplePaymentFields({ fpx_model: 'B2B1', fpx_debit_auth_code: '99', payment_status: 'false' })
const approved = { ...pending, fpx_debit_auth_code: '00', payment_status: 'true' }
await deliver('B2B1 payment waiting for approval', 'callback', pending)
await deliver('B2B1 payment approved', 'callback', approved)
await deliver('A late copy of the pending callback', 'callback', pending)

const forged = await deliver('Forged callback (amount changed)', 'callback', samplePaymentFields(), true)

console.log(`\nPaid orders: ${paidOrders.size} (expected 2)`)
if (paidOrders.size !== 2 || forged.status !== 401) {
  console.error('demo: unexpected result')
  process.exit(1)
}
