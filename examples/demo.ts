/**
 * npm run demo — the Express example shop and the local emulator of the service, both on the embedded demo
 * credentials, talking over real HTTP on 127.0.0.1. The script is the buyer's browser: it checks out at the
 * shop, posts the shop's signed payment form to the emulator, goes through the hosted pages (bank selection,
 * the simulated bank's log-in and answer) and posts the auto-submitting form back to the shop; the emulator calls the shop back on
 * its own. Journeys: a B2C success, the browser arriving after its callback, a buyer cancel (1C), a B2B1
 * payment pending approval (99) then approved (00), a repeated callback, a forged redirect. It prints what the
 * shop's handlers saw and what each delivery got back, checks it all, and exits 0 (1 on any difference).
 *
 * `npm run demo -- --interactive` starts both and waits for Ctrl+C, for clicking through in a browser, and prints
 * the link to the operator's console mounted in the shop, where each payment's life shows as it happens.
 */
import { startEmulator } from 'fpx-collect/emulator'
import { startExpressShop } from './express/app.js'
import { DEMO_CONFIG, type OrderState } from './shared/shop.js'

const args = process.argv.slice(2)
if (args.some((arg) => arg !== '--interactive')) {
  console.error('usage: npm run demo [-- --interactive]')
  process.exit(2)
}
const interactive = args.includes('--interactive')

// Unref'd: it fires only while something still holds the process, a hung request or a server or timer left
// running after the end, and then fails the demo instead of stalling CI.
const DEADLINE_MS = 30_000
if (!interactive)
  setTimeout(() => {
    console.error(`demo: FAILED, still running after ${DEADLINE_MS / 1000} s (a request hung, or something was left open)`)
    process.exit(1)
  }, DEADLINE_MS).unref()

/** Handler runs per order, from the shop's log: every line about an order except its placing. */
const runs = new Map<string, number>()
const emulator = await startEmulator({ log: (line) => console.error(`emulator: ${line}`) })
const shop = await startExpressShop({
  port: 0,
  host: '127.0.0.1',
  // What FPX_BASE_URL does for `npm run example:express`; the emulator's seeded merchant has DEMO_CONFIG's credentials.
  config: { ...DEMO_CONFIG, baseUrl: emulator.baseUrl },
  log: (line) => {
    const order = /^order (ORD-[0-9A-F]+)\b(?! placed:)/.exec(line)?.[1]
    if (order !== undefined) runs.set(order, (runs.get(order) ?? 0) + 1)
    console.log(`     shop: ${line}`)
  },
}).catch(async (error: unknown) => {
  await emulator.stop()
  throw error
})
const closeAll = () => Promise.all([shop.close(), emulator.stop()])

// ---- the buyer's browser: fetch, read a form, submit it ------------------------------------------------

interface Answer { status: number; location: string | null; exchangeNumber: string | null; html: string }

interface Form {
  method: string
  action: string
  fields: Record<string, string>
  buttons: { name: string; value: string; label: string }[]
  options: { value: string; label: string; disabled: boolean }[]
}

const decode = (text: string) =>
  text.replace(/&#(\d+);|&(amp|lt|gt|quot);/g, (_match, code: string | undefined, name: string | undefined) =>
    code !== undefined ? String.fromCharCode(Number(code)) : ({ amp: '&', lt: '<', gt: '>', quot: '"' } as Record<string, string>)[name!]!,
  )
const attributes = (tag: string) => Object.fromEntries([...tag.matchAll(/([\w-]+)="([^"]*)"/g)].map(([, name, value]) => [name!, decode(value!)]))
const titleOf = (html: string) => decode(/<h1>([^<]*)<\/h1>/.exec(html)?.[1] ?? html.slice(0, 80))

async function browse(url: string, method = 'GET', fields?: Record<string, string>): Promise<Answer> {
  const body = fields === undefined ? undefined : new URLSearchParams(fields).toString()
  const response = await fetch(url, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' },
    body,
    redirect: 'manual',
    signal: AbortSignal.timeout(5000),
  })
  const { headers } = response
  return { status: response.status, location: headers.get('location'), exchangeNumber: headers.get('x-exchange-number'), html: await response.text() }
}

/** The form with this id (or the first), as a browser sees it; a page without it ends the journey with its title. */
function formOf(page: Answer, id: string): Form {
  const found = [...page.html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/g)].find(([, tag]) => attributes(tag!).id === id)
  if (found === undefined) throw new Error(`expected a form "${id}", got ${page.status} "${titleOf(page.html)}"`)
  const { method = 'get', action = '' } = attributes(found[1]!)
  const inner = found[2]!
  const fields: Record<string, string> = {}
  for (const [tag] of inner.matchAll(/<input\b[^>]*>/g)) {
    const input = attributes(tag)
    if (input.type === 'hidden' && input.name !== undefined) fields[input.name] = input.value ?? ''
  }
  const buttons = [...inner.matchAll(/<button\b([^>]*)>([^<]*)/g)].map(([, tag, label]) => ({ name: '', value: '', ...attributes(tag!), label: decode(label!) }))
  const options = [...inner.matchAll(/<option\b([^>]*)>([^<]*)/g)].map(([, tag, label]) => ({
    value: attributes(tag!).value ?? '',
    label: decode(label!),
    disabled: / disabled\b/.test(tag!),
  }))
  return { method: method.toUpperCase(), action, fields, buttons, options }
}

/** Submits as a browser does: the hidden fields plus the chosen values (a select's, the clicked button's). */
function submit(form: Form, chosen: Record<string, string> = {}): Promise<Answer> {
  const fields = { ...form.fields, ...chosen }
  if (form.method === 'POST') return browse(form.action, 'POST', fields)
  const query = new URLSearchParams(fields).toString()
  return browse(query === '' ? form.action : `${form.action}?${query}`)
}

// ---- the journeys -------------------------------------------------------------------------------------

const problems: string[] = []
const expect = (ok: boolean, problem: string) => void (ok || problems.push(problem))
let step = 0

/** One numbered journey: what it must leave behind for its order, and how many handler runs it causes. */
async function journey(label: string, expected: { state: OrderState; handlerRuns: number }, body: () => Promise<string>) {
  step += 1
  console.log(`\n${step}. ${label}`)
  const before = new Map(runs)
  const orderNumber = await body()
  const ran = (runs.get(orderNumber) ?? 0) - (before.get(orderNumber) ?? 0)
  const state = shop.orders.get(orderNumber)?.state
  const where = `journey ${step} (${label})`
  expect(state === expected.state, `${where}: order ${orderNumber} is "${state}", expected "${expected.state}"`)
  expect(ran === expected.handlerRuns, `${where}: ${ran} handler runs, expected ${expected.handlerRuns}`)
  const times = ran === 0 ? 'no handler ran' : ran === 1 ? 'handled once' : `handled ${ran} times`
  console.log(`   => order ${orderNumber} ${state} (${times})`)
  return orderNumber
}

interface Payment { orderNumber: string; exchangeNumber: string; page: Answer }

/** The buyer checks out at the shop, and the browser posts the shop's signed payment form to the service. */
async function checkout(product: string, amount: string, unsigned: Record<string, string> = {}): Promise<Payment> {
  const form = { product, amount, name: 'Nur Aisyah binti Ahmad', email: 'aisyah@example.com', phone: '+60123456789' }
  const pay = formOf(await browse(`${shop.url}/checkout`, 'POST', form), 'fpx-collect-payment-form')
  const page = await submit(pay, unsigned)
  const orderNumber = pay.fields.order_number ?? ''
  if (page.status !== 200 || page.exchangeNumber === null) throw new Error(`the service refused the payment: ${page.status} ${page.html.slice(0, 200)}`)
  const extra = Object.entries(unsigned).map(([name, value]) => ` + ${name}=${value}`).join('')
  console.log(`   checkout: ${orderNumber}, RM ${pay.fields.transaction_amount}, ${product}`)
  console.log(`   browser: POST ${pay.action} (the shop's signed form${extra}) -> ${page.status} "${titleOf(page.html)}", payment ${page.exchangeNumber}`)
  return { orderNumber, exchangeNumber: page.exchangeNumber, page }
}

/** Through the hosted pages to the bank's answer; returns the form that takes the browser back to the shop. */
async function atTheBank(payment: Payment, bankName: string, outcome: string): Promise<Form> {
  const selection = formOf(await submit(formOf(payment.page, 'continue')), 'select-bank')
  const bank = selection.options.find((option) => option.label === bankName && !option.disabled)
  if (bank === undefined) throw new Error(`no online bank "${bankName}" on the bank-selection page`)
  const login = formOf(await submit(selection, { buyer_bank_code: bank.value }), 'bank-login')
  // The simulated bank takes any user ID and password.
  const answers = formOf(await submit(login, { user_id: 'aisyah', password: 'demo' }), 'bank-answer')
  const button = answers.buttons.find((candidate) => candidate.value === outcome)
  if (button === undefined) throw new Error(`the simulated bank offers no "${outcome}"`)
  const back = await submit(answers, { [button.name]: button.value })
  console.log(`   browser: bank selection -> ${bankName} (${bank.value}) -> log-in -> simulated bank: "${button.label}" -> form back to the shop`)
  return formOf(back, 'redirect')
}

/** The browser posts the auto-submitting form to redirect_url, and follows the shop's answer. */
async function redirect(form: Form, status: number, location?: string): Promise<void> {
  const answer = await browse(form.action, 'POST', form.fields)
  let seen = titleOf(answer.html)
  if (answer.location !== null) {
    const order = await browse(new URL(answer.location, shop.url).href)
    seen = `see ${answer.location}: "${decode(/<th>State<\/th><td>([^<]*)/.exec(order.html)?.[1] ?? titleOf(order.html))}"`
  }
  console.log(`   browser: POST ${new URL(form.action).pathname} -> ${answer.status} ${seen}`)
  expect(answer.status === status, `journey ${step}: redirect answered ${answer.status}, expected ${status}`)
  expect((answer.location ?? undefined) === location, `journey ${step}: redirect to ${answer.location}, expected ${location}`)
}

interface Delivery {
  id: string
  reason: string
  state: string
  fpx_debit_auth_code: string | null
  attempts: { status: number | null; error: string | null; answer: string | null }[]
}

const control = async (path: string, method = 'GET') => {
  // The control API takes POSTs only as JSON (a cross-site form cannot send it), even with no body.
  const headers: Record<string, string> = method === 'POST' ? { 'content-type': 'application/json' } : {}
  const response = await fetch(`${emulator.url}/__emulator${path}`, { method, headers, signal: AbortSignal.timeout(5000) })
  return { status: response.status, json: (await response.json()) as Record<string, unknown> }
}
const printed = new Set<string>()

/** Waits until the payment's callbacks number `count` and all have settled, then prints what each got back. */
async function callbacks(exchangeNumber: string, count: number): Promise<void> {
  const until = Date.now() + 10_000
  let deliveries: Delivery[]
  for (;;) {
    deliveries = (await control(`/deliveries?exchange_number=${exchangeNumber}`)).json.deliveries as Delivery[]
    // A refused first attempt ends the wait too: the check below reports it instead of sitting out the retries.
    const settled = (delivery: Delivery) => delivery.state === 'delivered' || (delivery.attempts.length > 0 && delivery.state !== 'sending')
    if (deliveries.length >= count && deliveries.every(settled)) break
    if (Date.now() > until) throw new Error(`the callbacks of ${exchangeNumber} did not settle within 10 s`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  for (const delivery of deliveries.filter((candidate) => !printed.has(candidate.id))) {
    printed.add(delivery.id)
    const last = delivery.attempts.at(-1)
    const got = last === undefined ? 'no attempt' : last.status === null ? `no answer (${last.error})` : `${last.status} ${JSON.stringify(last.answer)}`
    console.log(`   service: callback ${delivery.id} (${delivery.reason}, code ${delivery.fpx_debit_auth_code}) -> ${got}, ${delivery.state} after ${delivery.attempts.length} attempt${delivery.attempts.length === 1 ? '' : 's'}`)
    expect(delivery.state === 'delivered' && delivery.attempts.length === 1, `callback ${delivery.id} was ${delivery.state} after ${delivery.attempts.length} attempts`)
  }
}

async function scripted(): Promise<void> {
  try {
    console.log(`fpx-collect demo: the Express example shop on ${shop.url}, paying through the emulator at ${emulator.baseUrl}`)

    let late: Form | undefined
    let scarf: Payment | undefined
    const a = await journey('B2C payment approved at the bank; the service calls back', { state: 'paid', handlerRuns: 1 }, async () => {
      scarf = await checkout('Batik scarf', '100.20')
      late = await atTheBank(scarf, 'Maybank2U', 'approve')
      console.log('   (the browser is slow: it posts its form only after the callback)')
      await callbacks(scarf.exchangeNumber, 1)
      return scarf.orderNumber
    })
    await journey("The buyer's browser arrives after its callback", { state: 'paid', handlerRuns: 0 }, async () => {
      await redirect(late!, 303, `/orders/${a}`)
      return a
    })

    let cancelled: Form | undefined
    await journey('Buyer cancels at the bank (1C); browser and callback both come back', { state: 'failed', handlerRuns: 1 }, async () => {
      const payment = await checkout('Songket cushion cover', '45.00')
      cancelled = await atTheBank(payment, 'CIMB Clicks', 'cancel')
      await redirect(cancelled, 303, `/orders/${payment.orderNumber}`)
      await callbacks(payment.exchangeNumber, 1)
      return payment.orderNumber
    })

    let desks: Payment | undefined
    await journey('B2B1 payment submitted for corporate approval (99)', { state: 'awaiting approval', handlerRuns: 1 }, async () => {
      // model is not among the signed fields: the corporate buyer's form adds it to the shop's signed request.
      desks = await checkout('Office desks (corporate order)', '2500.00', { model: 'B2B1' })
      await redirect(await atTheBank(desks, 'Maybank2E', 'pending'), 303, `/orders/${desks.orderNumber}`)
      await callbacks(desks.exchangeNumber, 1)
      return desks.orderNumber
    })
    await journey('The corporate approver approves (00) on the approval page', { state: 'paid', handlerRuns: 1 }, async () => {
      const page = await browse(`${emulator.baseUrl}/pay/${desks!.exchangeNumber}/approval`)
      const done = await submit(formOf(page, 'approval'), { decision: 'approve' })
      console.log(`   approver: approval page -> "Approve" -> ${done.status} "${titleOf(done.html)}"`)
      await callbacks(desks!.exchangeNumber, 2)
      return desks!.orderNumber
    })

    await journey('The service repeats the first callback (control API: redeliver)', { state: 'paid', handlerRuns: 0 }, async () => {
      const answer = await control(`/payments/${scarf!.exchangeNumber}/redeliver`, 'POST')
      expect(answer.status === 202, `redeliver: status ${answer.status}, expected 202`)
      await callbacks(scarf!.exchangeNumber, 2)
      return a
    })

    // Without the Checksum Token a forger can change fields but not sign them again.
    await journey('Forged redirect: the cancelled payment turned into a success', { state: 'failed', handlerRuns: 0 }, async () => {
      const forged = { ...cancelled!, fields: { ...cancelled!.fields, payment_status: 'true', fpx_debit_auth_code: '00', fpx_status: 'true' } }
      expect(cancelled!.fields.payment_status === 'false', 'could not build the forged message')
      await redirect(forged, 401)
      return cancelled!.fields.order_number ?? ''
    })

    const list = await browse(`${shop.url}/orders`)
    const orders = shop.orders.list().reverse()
    expect(list.status === 200 && orders.length === 3 && orders.every((order) => list.html.includes(order.orderNumber)), 'the orders page does not list the three orders')
    const payments = (await control('/payments')).json.payments as Record<string, string>[]
    console.log('\nPayments (emulator)                  Orders (shop)')
    for (const order of orders) {
      const payment = payments.find((candidate) => candidate.order_number === order.orderNumber)
      const shopSide = `${order.orderNumber}  RM ${order.amount.padStart(8)}  ${order.state}${order.note === null ? '' : ` (${order.note})`}`
      console.log(`   ${payment?.exchange_number} ${String(payment?.payment_stage).padEnd(20)} ${shopSide}`)
      const stage = order.state === 'paid' ? 'payment_successful' : 'payment_unsuccessful'
      expect(payment?.payment_stage === stage, `payment of ${order.orderNumber} is ${payment?.payment_stage} at the emulator, expected ${stage}`)
    }
  } catch (error) {
    problems.push(`unexpected error: ${error instanceof Error ? error.message : String(error)}`)
  } finally {
    await closeAll()
  }
  if (problems.length > 0) {
    console.error(`\ndemo: FAILED\n${problems.map((problem) => `  - ${problem}`).join('\n')}`)
    process.exit(1)
  }
  console.log(`\ndemo: all ${step} journeys ended as expected; each payment state was handled exactly once, the forgery never.`)
}

if (interactive) {
  console.log(`fpx-collect demo (interactive): the Express example shop paying through the local emulator

  checkout:  ${shop.url}/
  orders:    ${shop.url}/orders
  console:   ${shop.consoleLink}
             (the operator's console, mounted in the shop: a one-time sign-in link for this browser)
  emulator:  ${emulator.baseUrl}  (its base URL; control API: ${emulator.url}/__emulator/payments)

Pay from the checkout page: choose a bank, then answer as the bank. A B2B1 payment pending approval (99) is
approved at ${emulator.baseUrl}/pay/<exchange_number>/approval. Each payment's life is on the console.
Ctrl+C stops both.
`)
  const stop = () => {
    console.log('\nstopping')
    // A second Ctrl+C while closing leaves at once.
    process.once('SIGINT', () => process.exit(130))
    closeAll().then(() => process.exit(0), () => process.exit(1))
  }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
} else {
  await scripted()
}
