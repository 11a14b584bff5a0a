/**
 * npm run soak:renamed — the renamed-field replays of docs/security.md, run as an attacker would against the
 * built package: genuine results paid at the emulator (the service's own signing), rearranged by renaming only,
 * sent to a receiver with the defaults, then with confirmation through the status API. Prints what each attack
 * achieved and exits 1 if any promise broke.
 *
 * Environment: RENAMED_VARIANTS (generated rearrangements per result with confirmation on, default 300).
 */
import fc from 'fast-check'
import { type Core, fromDist } from '../bench/dist.js'
import { DEMO } from '../test/emulator/harness.js'
import { captureCallbacks } from '../test/receiver/callback-capture.js'
import { formBody, indexOf, moved, type Pairs, renamed, signedPairs } from '../test/receiver/rearrange.js'

type Client = typeof import('../src/client/index.js')
type EmulatorModule = typeof import('../src/emulator/index.js')

const { createReceiver } = await fromDist<Core>('index')
const { createClient } = await fromDist<Client>('client')
const { startEmulator } = await fromDist<EmulatorModule>('emulator')
const VARIANTS = Number(process.env.RENAMED_VARIANTS ?? 300)

function first<T>(items: readonly T[], what: string): T {
  const item = items[0]
  if (item === undefined) throw new Error(`no ${what}`)
  return item
}

const capture = await captureCallbacks()
const callbackUrl = capture.url
const emulator = await startEmulator({ log: () => {}, delivery: { attempts: 1, initialDelayMs: 1, maxDelayMs: 1, timeoutMs: 2000 } })
const merchant = DEMO
const client = createClient({ environment: { baseUrl: emulator.baseUrl }, uid: merchant.uid, authToken: merchant.authToken, checksumToken: merchant.checksumToken })

let orders = 0
async function paid(outcomes: string[], input: Record<string, string> = {}): Promise<{ order: string; bodies: string[]; exchange: string }> {
  const order = input.order_number ?? `ATTACK-${process.pid}-${++orders}`
  const created = await client.createPayment({
    order_number: order, buyer_name: 'Buyer', buyer_email: 'buyer@example.test', buyer_phone: '+60123456789',
    transaction_amount: '1.00', product_description: 'Top-up', callback_url: callbackUrl, ...input,
  } as Parameters<typeof client.createPayment>[0])
  const exchange = created.exchangeNumber as string
  for (const outcome of outcomes) {
    const answer = await fetch(`${emulator.url}/__emulator/payments/${exchange}/complete`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ outcome }) })
    if (answer.status !== 200) throw new Error(`completing ${exchange}: ${answer.status}`)
  }
  return { order, exchange, bodies: await capture.bodies(exchange, outcomes.length) }
}

type Receiver = ReturnType<typeof createReceiver>
function receiverWith(options: object): { receiver: Receiver; runs: { order: string; exchange: string; state: string; amount: number | undefined }[] } {
  const receiver = createReceiver({ checksumToken: merchant.checksumToken, logger: false as never, ...options } as Parameters<typeof createReceiver>[0])
  const runs: { order: string; exchange: string; state: string; amount: number | undefined }[] = []
  for (const name of ['payment.succeeded', 'payment.failed', 'payment.pending'] as const)
    receiver.on(name, (event) => void runs.push({ order: event.payment.orderNumber, exchange: event.payment.exchangeNumber, state: event.state, amount: event.payment.amountSen }))
  return { receiver, runs }
}
const send = (receiver: Receiver, body: string) => receiver.handle({ kind: 'callback', body, contentType: 'application/x-www-form-urlencoded' })
const broken: string[] = []

// A: one success, its buyer fields holding made-up exchange numbers, moved into exchange_number every way.
{
  const result = await paid(['approve'], { buyer_name: 'EXFAKE0000000001', buyer_email: 'EXFAKE0000000002@x.test' })
  const { pairs, checksum } = signedPairs(first(result.bodies, 'callback'))
  const bodies = pairs.map((_, i) => moved(pairs, i, 'exchange_number')).filter((p): p is Pairs => p !== undefined).map((p) => formBody(p, checksum))
  const { receiver, runs } = receiverWith({})
  await Promise.all([...bodies, first(result.bodies, 'callback')].map((body) => send(receiver, body)))
  console.log(`A  many payments from one: ${bodies.length} rearrangements + the genuine result -> ${runs.length} handler run(s), exchange_numbers ${[...new Set(runs.map((r) => r.exchange))].join(', ')}`)
  if (runs.length !== 1 || first(runs, 'handler run').exchange !== result.exchange) broken.push('A')
}
// B: the buyer's name is their expensive order's number; moved into order_number (with exchange_number).
{
  const expensive = await paid([], { order_number: `EXPENSIVE-${process.pid}`, transaction_amount: '900.00' })
  const cheap = await paid(['approve'], { buyer_name: expensive.order })
  const { pairs, checksum } = signedPairs(first(cheap.bodies, 'callback'))
  const from = indexOf(pairs, 'buyer_name')
  const variants = [moved(pairs, from, 'order_number', new Map([[from - 1, 'exchange_number']])), moved(pairs, from, 'order_number')].filter((p): p is Pairs => p !== undefined)
  const { receiver, runs } = receiverWith({})
  const answers = []
  for (const p of variants) answers.push((await send(receiver, formBody(p, checksum))).status)
  await send(receiver, first(cheap.bodies, 'callback'))
  const paidOrders = runs.map((r) => r.order)
  console.log(`B  another order paid: ${variants.length} rearrangements answered ${answers.join(', ')}; orders handled: ${paidOrders.join(', ')}`)
  if (paidOrders.includes(expensive.order) || variants.length === 0) broken.push('B')
}
// C: a B2B1 99, its code renamed away or its name given to the next value.
{
  const result = await paid(['pending'], { model: 'B2B1' })
  const { pairs, checksum } = signedPairs(first(result.bodies, 'callback'))
  const at = indexOf(pairs, 'fpx_debit_auth_code')
  const variants = [renamed(pairs, new Map([[at, 'fpx_debit_auth_codez']])), renamed(pairs, new Map([[at, 'fpx_debit_auth_cod'], [at + 1, 'fpx_debit_auth_code']]))].filter((p): p is Pairs => p !== undefined)
  const { receiver, runs } = receiverWith({})
  const answers = []
  for (const p of variants) answers.push((await send(receiver, formBody(p, checksum))).status)
  const genuine = await send(receiver, first(result.bodies, 'callback'))
  console.log(`C  pending read as failed: ${variants.length} rearrangements answered ${answers.join(', ')}; genuine 99 answered ${genuine.status} ${genuine.outcome}; states handled: ${runs.map((r) => r.state).join(', ')}`)
  if (runs.some((r) => r.state === 'failed') || genuine.outcome !== 'processed') broken.push('C')
}
// With confirmation: generated rearrangements of a success, a failure and a pending result.
{
  const results = [await paid(['approve'], { buyer_name: 'EXPENSIVE-1' }), await paid(['reject']), await paid(['pending'], { model: 'B2B1' })]
  let sent = 0
  let refused = 0
  let asKnown = 0
  let otherwise = 0
  for (const result of results) {
    const record = first(await client.searchTransactions('exchange_number', result.exchange), 'API record')
    const { pairs, checksum } = signedPairs(first(result.bodies, 'callback'))
    const targets = ['exchange_number', 'order_number', 'payment_status', 'fpx_debit_auth_code', 'transaction_amount', 'status_url', ...pairs.map(([n]) => `${n}z`)]
    const moves = fc.array(fc.tuple(fc.nat({ max: pairs.length - 1 }), fc.constantFrom(...targets)), { minLength: 1, maxLength: 4 })
    for (const plan of fc.sample(moves, { numRuns: VARIANTS, seed: 20261125 })) {
      const variant = renamed(pairs, new Map(plan))
      if (variant === undefined) continue
      const { receiver, runs } = receiverWith({ client })
      const answer = await send(receiver, formBody(variant, checksum))
      sent++
      if (runs.length === 0) refused += answer.status === 200 ? 0 : 1
      for (const run of runs) {
        if (run.exchange === record.exchange_number && run.order === record.order_number && run.amount === 100) asKnown++
        else otherwise++
      }
    }
  }
  console.log(`confirmation on: ${sent} generated rearrangements -> ${refused} refused, ${asKnown} handled as the payment the API knows, ${otherwise} otherwise`)
  if (otherwise > 0) broken.push('confirmation')
}

await emulator.stop()
await capture.close()
console.log(broken.length === 0 ? 'every promise held' : `BROKEN: ${broken.join(', ')}`)
process.exit(broken.length === 0 ? 0 : 1)
