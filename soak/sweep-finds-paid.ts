/**
 * npx tsx soak/sweep-finds-paid.ts — issue 36, point 5: how long the sweeper takes, at its defaults (30 API
 * requests a minute, a wake-up every 30 s), to find a paid payment whose redirect and callback were all lost
 * while SWEEP_UNPAID (default 1000) payments nobody paid are open, and the API requests it made until then.
 *
 * The paid one is created last, so a lookup in age order reaches it last. With SWEEP_PAID_AT_S=N it is paid N
 * seconds after the sweeper started (a pass of 500 lookups at 30 a minute is then under way), and the time is
 * counted from then. SWEEP_PAID_AFTER (default 0) more
 * payments, paid but not in this receiver's book (another system's), are created after it: they push it down the
 * transactions list, newest first, a page per hundred.
 *
 * Then the same with lookups alone (an API client without the transactions list, as the sweeper was before), at
 * a rate high enough to finish: the lookups it takes, and what they cost in time at 30 a minute.
 * Real time, the emulator over HTTP, the memory store.
 */
import { createClient } from '../src/client/index.js'
import { startEmulator } from '../src/emulator/index.js'
import { createReceiver, memoryStore, type SweepOptions } from '../src/index.js'
import { control, lostPaid } from './lost-paid.js'

const DEMO = { uid: '0c0ffee0-d3e0-4a11-8f00-00000000d3e0', authToken: 'DemoAuthToken0000000', checksumToken: '0123456789abcdef'.repeat(4) }
const count = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback)
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a whole number`)
  return value
}
const UNPAID = count('SWEEP_UNPAID', 1000)
const PAID_AFTER = count('SWEEP_PAID_AFTER', 0)
const PAID_AT_S = count('SWEEP_PAID_AT_S', 0)
const HOUR = 3_600_000

interface Run {
  readonly ms: number
  readonly requests: Record<string, number>
  readonly passes: number
}

/** The scenario, then a receiver sweeping it until the paid payment's handler runs. */
async function run(options: { listing: boolean; sweep: SweepOptions; manual: boolean }): Promise<Run> {
  const emulator = await startEmulator({ log: () => {} })
  // The shop recorded the payments as it made them, in the store the sweeping receiver opens afterwards.
  const store = memoryStore()
  const shop = createReceiver({ signatureOnly: true, checksumToken: DEMO.checksumToken, store, logger: false, sweep: false })
  const later = PAID_AT_S > 0 && !options.manual
  const { paid, pay } = await lostPaid({ baseUrl: emulator.baseUrl, url: emulator.url, credentials: DEMO, book: shop.payments, unpaid: UNPAID, ageMs: HOUR, payLater: later })
  await shop.close()
  const other = createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO, logger: false })
  // Their callbacks are dropped: they are another system's, and would only knock on a closed port here.
  await control(emulator.url, '/faults', { lose_results: 1 })
  for (let i = 0; i < PAID_AFTER; i++) {
    const input = { order_number: `ELSEWHERE-${i}`, buyer_name: 'Tan Mei Ling', buyer_email: 'mei@example.com', buyer_phone: '+60123456789', transaction_amount: '10.00', product_description: 'Another shop' }
    await control(emulator.url, `/payments/${(await other.createPayment(input)).exchangeNumber}/complete`, { outcome: 'approve' })
  }

  const requests: Record<string, number> = {}
  const api = createClient({
    environment: { baseUrl: emulator.baseUrl },
    ...DEMO,
    logger: false,
    fetch: (input, init) => {
      const url = String(input)
      const kind = url.includes('/v1/transactions/list') ? 'list page(s)' : url.includes('search_reference=order_number') ? 'lookups' : 'other'
      requests[kind] = (requests[kind] ?? 0) + 1
      return fetch(input, init)
    },
  })
  let started = performance.now()
  // In-process (the defaults), the sweeper starts with the receiver: its first pass comes one wake-up after.
  const receiver = createReceiver({ checksumToken: DEMO.checksumToken, store, client: options.listing ? api : { searchTransactions: api.searchTransactions }, logger: false, sweep: options.sweep })
  try {
    if (later) {
      await new Promise((resolve) => setTimeout(resolve, PAID_AT_S * 1000))
      await pay()
      started = performance.now()
    }
    let done = false
    const handled = new Promise<void>((resolve) => {
      receiver.on('payment.succeeded', (event) => {
        if (event.payment.orderNumber !== paid) return
        done = true
        resolve()
      })
    })
    let passes = 0
    for (; options.manual && !done; passes++) await receiver.sweep()
    await handled
    return { ms: performance.now() - started, requests: { ...requests }, passes }
  } finally {
    await receiver.close()
    await emulator.stop()
  }
}

const show = (requests: Record<string, number>) =>
  Object.entries(requests)
    .map(([kind, n]) => `${n} ${kind}`)
    .join(', ') || 'none'

console.log(`${UNPAID} unpaid open payments, one paid whose results were lost (created last)${PAID_AFTER > 0 ? `, ${PAID_AFTER} other successes after it` : ''}`)
const listed = await run({ listing: true, sweep: {}, manual: false })
const since = PAID_AT_S > 0 ? `paid ${PAID_AT_S} s after the sweeper started, found ${(listed.ms / 1000).toFixed(1)} s after that` : `found after ${(listed.ms / 1000).toFixed(1)} s`
console.log(`with the transactions list, the defaults (in-process, first wake-up after 30 s): ${since}; API requests from the sweeper's start until then: ${show(listed.requests)}`)
const alone = await run({ listing: false, sweep: { inProcess: false, maxLookupsPerMinute: 60_000, backoff: { baseMs: HOUR, maxMs: HOUR } }, manual: true })
const lookups = alone.requests.lookups ?? 0
console.log(
  `lookups alone (as before): ${show(alone.requests)} in ${alone.passes} passes of at most 500; at 30 a minute that is ` +
    `${((lookups - 1) * 2 / 60).toFixed(1)} minutes of lookups after the first wake-up`,
)
