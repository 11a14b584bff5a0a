/**
 * npm run demo — the Express example shop on its embedded demo credentials, and a script that plays the payment
 * service against it over real HTTP: three orders placed through the checkout, then the deliveries a shop sees
 * (a B2C success, a buyer who cancelled at the bank, a B2B1 payment pending approval then approved, a repeated
 * callback, the buyer's browser arriving after the callback, a forged redirect), each signed as the service
 * signs it. Prints what the shop's handlers saw and what each delivery got back, checks it all, and exits 0.
 */
import { type PaymentRequestChecksumFields, requestChecksum } from 'fpx-collect'
import { type Fields, type SignedDelivery, samplePaymentFields, signCallback } from 'fpx-collect/testing'
import { startExpressShop } from './express/app.js'
import { DEMO_CONFIG, type OrderState } from './shared/shop.js'

const config = DEMO_CONFIG
const problems: string[] = []
const expect = (ok: boolean, problem: string) => void (ok || problems.push(problem))

// Whatever goes wrong, the demo ends: a hung request or server fails it instead of stalling CI.
const deadline = setTimeout(() => {
  console.error('demo: FAILED, did not finish within 15 s')
  process.exit(1)
}, 15_000)

let handlerLines: string[] = []
const shop = await startExpressShop({
  port: 0,
  host: '127.0.0.1',
  config,
  log: (line) => {
    handlerLines.push(line)
    console.log(`     shop: ${line}`)
  },
})

async function post(path: string, body: string, contentType: string) {
  const response = await fetch(`${shop.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': contentType },
    body,
    redirect: 'manual',
    signal: AbortSignal.timeout(5000),
  })
  return { status: response.status, location: response.headers.get('location'), text: await response.text() }
}

const unescape = (html: string) => html.replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)))

/** Places an order like a buyer and returns the payment request the browser would post to the service. */
async function checkout(product: string, amount: string): Promise<Record<string, string>> {
  const form = { product, amount, name: 'Nur Aisyah binti Ahmad', email: 'aisyah@example.com', phone: '+60123456789' }
  const page = await post('/checkout', new URLSearchParams(form).toString(), 'application/x-www-form-urlencoded')
  const fields: Record<string, string> = {}
  for (const [, name, value] of page.text.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g))
    fields[unescape(name!)] = unescape(value!)
  const action = /<form id="pay" method="post" action="([^"]*)"/.exec(page.text)?.[1]
  // What the service checks before it shows the bank selection.
  const signedOk = fields.checksum === requestChecksum(fields as unknown as PaymentRequestChecksumFields, config.checksumToken)
  const valid = page.status === 200 && signedOk && fields.token === config.authToken && fields.uid === config.uid
  if (!valid || action === undefined || fields.order_number === undefined)
    throw new Error(`the checkout did not produce a valid signed payment request (status ${page.status})`)
  console.log(`   checkout: ${fields.order_number}, RM ${fields.transaction_amount}, ${product} -> form posting to ${unescape(action)}`)
  return fields
}

/** The result the service would send for a payment request, with what the scenario is about. */
function result(request: Record<string, string>, overrides: Fields = {}) {
  const amount = request.transaction_amount!
  return samplePaymentFields({
    order_number: request.order_number!,
    uid: request.uid!,
    transaction_amount: amount,
    transaction_amount_received: amount,
    amount,
    buyer_name: request.buyer_name!,
    buyer_email: request.buyer_email!,
    buyer_phone: request.buyer_phone!,
    ...overrides,
  })
}

interface Expected {
  status: number
  location?: string
  handlerRuns: number
  order: [orderNumber: string, state: OrderState]
}

let step = 0
async function deliver(label: string, kind: 'callback' | 'redirect', signed: SignedDelivery, expected: Expected) {
  step += 1
  console.log(`\n${step}. ${label}  [POST /fpx/${kind}]`)
  handlerLines = []
  const answer = await post(`/fpx/${kind}`, signed.body, signed.contentType)
  const title = /<h1>([^<]*)<\/h1>/.exec(answer.text)?.[1]
  const got =
    answer.location !== null ? `see ${answer.location}` : title !== undefined ? `page "${unescape(title)}"` : answer.text.slice(0, 60)
  const runs = handlerLines.filter((line) => line.startsWith('order ')).length
  const unchanged = answer.status < 400 && runs === 0 ? '  (no handler ran: already handled)' : ''
  console.log(`   -> ${answer.status} ${got}${unchanged}`)
  const where = `step ${step} (${label})`
  expect(answer.status === expected.status, `${where}: status ${answer.status}, expected ${expected.status}`)
  expect((answer.location ?? undefined) === expected.location, `${where}: location ${answer.location}, expected ${expected.location}`)
  expect(runs === expected.handlerRuns, `${where}: ${runs} handler runs, expected ${expected.handlerRuns}`)
  const [orderNumber, state] = expected.order
  const actual = shop.orders.get(orderNumber)?.state
  expect(actual === state, `${where}: order ${orderNumber} is "${actual}", expected "${state}"`)
}

try {
  console.log(`fpx-collect demo: the Express example shop on ${shop.url}, with signed deliveries as the service sends them\n`)
  const scarf = await checkout('Batik scarf', '100.20')
  const cushion = await checkout('Songket cushion cover', '45.00')
  const desks = await checkout('Office desks (corporate order)', '2500.00')
  const [a, b, c] = [scarf.order_number!, cushion.order_number!, desks.order_number!]

  const paid = signCallback(result(scarf), config.checksumToken)
  await deliver('B2C payment succeeded, the service calls back', 'callback', paid, {
    status: 200, handlerRuns: 1, order: [a, 'paid'],
  })

  const cancelled = signCallback(
    result(cushion, {
      payment_status: 'false',
      transaction_amount_received: '0.00',
      fpx_debit_auth_code: '1C',
      fpx_status: 'false',
      fpx_status_message: 'Buyer cancelled',
      payment_stage: 'payment_unsuccessful',
    }),
    config.checksumToken,
  )
  await deliver('Buyer cancelled at the bank (1C); the browser comes back', 'redirect', cancelled, {
    status: 303, location: `/orders/${b}`, handlerRuns: 1, order: [b, 'failed'],
  })

  const b2b1 = { fpx_model: 'B2B1', fpx_debit_auth_code: '99', payment_status: 'false', fpx_status_message: 'Pending authorisation' }
  const pendingFields = result(desks, b2b1)
  const pending = signCallback(pendingFields, config.checksumToken)
  await deliver('B2B1 payment awaiting corporate approval (99)', 'callback', pending, {
    status: 200, handlerRuns: 1, order: [c, 'awaiting approval'],
  })
  // The same payment (same exchange_number), now approved.
  const approvedFields = { ...pendingFields, fpx_debit_auth_code: '00', payment_status: 'true', fpx_status_message: 'Approved' }
  const approved = signCallback(approvedFields, config.checksumToken)
  await deliver('The corporate approver approves (00)', 'callback', approved, {
    status: 200, handlerRuns: 1, order: [c, 'paid'],
  })

  await deliver('The service repeats the first callback (duplicate)', 'callback', paid, {
    status: 200, handlerRuns: 0, order: [a, 'paid'],
  })
  await deliver("The first buyer's browser arrives after its callback", 'redirect', paid, {
    status: 303, location: `/orders/${a}`, handlerRuns: 0, order: [a, 'paid'],
  })

  // Without the Checksum Token a forger can change fields but not sign them again.
  const forged = cancelled.body.replace('payment_status=false', 'payment_status=true')
  expect(forged !== cancelled.body, 'could not build the forged message')
  await deliver('Forged redirect: the cancelled payment turned into a success', 'redirect', { ...cancelled, body: forged }, {
    status: 401, handlerRuns: 0, order: [b, 'failed'],
  })

  const list = await fetch(`${shop.url}/orders`, { signal: AbortSignal.timeout(5000) })
  const listed = await list.text()
  expect(list.status === 200 && [a, b, c].every((n) => listed.includes(n)), 'the orders page does not list the three orders')
  console.log('\nOrders:')
  for (const order of shop.orders.list().reverse())
    console.log(`   ${order.orderNumber}  RM ${order.amount.padStart(8)}  ${order.state}${order.note === null ? '' : ` (${order.note})`}`)
} catch (error) {
  problems.push(`unexpected error: ${error instanceof Error ? error.message : String(error)}`)
} finally {
  await shop.close()
  clearTimeout(deadline)
}

if (problems.length > 0) {
  console.error(`\ndemo: FAILED\n${problems.map((problem) => `  - ${problem}`).join('\n')}`)
  process.exit(1)
}
console.log(`\ndemo: all ${step} deliveries answered as expected; each payment state was handled exactly once, the forgery never.`)
