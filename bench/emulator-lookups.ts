/**
 * npx tsx bench/emulator-lookups.ts — what a lookup costs the emulator as it fills up (issue 37, point 4: "the
 * emulator keeps up"). Two emulators from the built dist/ run side by side, one holding SMALL payments and one
 * LARGE (half of them paid); each task asks both over HTTP, in turns round after round, for random payments.
 * Goal: a search by exchange_number or order_number, a status by order number and the list's first page cost
 * about the same at both sizes (time at LARGE / time at SMALL near 1, not near LARGE / SMALL).
 * Environment: BENCH_SMALL (default 1000), BENCH_LARGE (default 100000), BENCH_ROUNDS (default 7),
 * BENCH_TIME_MS (per task and round, default 300).
 */
import { fromDist } from './dist.js'
import { envInteger } from './env.js'
import { throughputRounds } from './rounds.js'
import { median } from './stats.js'

type EmulatorModule = typeof import('../src/emulator/index.js')
type NewPayment = Parameters<import('../src/emulator/index.js').EmulatorState['addPayment']>[0]

const { startEmulator, DEMO_MERCHANT } = await fromDist<EmulatorModule>('emulator')
const credential = DEMO_MERCHANT.credentials![0]!
const authorization = `Basic ${Buffer.from(`${credential.uid}:${credential.authToken}`).toString('base64')}`
const SMALL = envInteger('BENCH_SMALL', 1000, 1)
const LARGE = envInteger('BENCH_LARGE', 100_000, 1)

function payment(orderNumber: string): NewPayment {
  return {
    merchantId: DEMO_MERCHANT.id!,
    credentialUid: credential.uid!,
    partnerUid: null,
    orderNumber,
    buyerName: 'Nur Aisyah binti Ahmad',
    buyerEmail: 'aisyah@example.com',
    buyerPhone: '+60123456789',
    transactionAmount: '100.20',
    productDescription: 'Two kilos of coffee beans',
    callbackUrl: null,
    redirectUrl: null,
    cancelUrl: null,
    timeoutUrl: null,
    redirectPost: false,
    model: 'B2C',
    bankSelection: 'dropdown',
    buyerBankCode: null,
    params: null,
    shippingAddress: null,
    billingAddress: null,
    clientIp: '127.0.0.1',
  }
}

/** An emulator holding `count` payments, made through its state (no callbacks: no callback_url). */
async function filled(count: number) {
  const running = await startEmulator({ log: () => {} })
  const exchangeNumbers: string[] = []
  for (let i = 0; i < count; i++) {
    const record = running.state.addPayment(payment(`ORD-${i}`))
    if (i % 2 === 0) running.state.complete(record.exchangeNumber, 'approve')
    exchangeNumbers.push(record.exchangeNumber)
  }
  const ask = async (path: string) => {
    const response = await fetch(`${running.baseUrl}${path}`, { headers: { authorization } })
    if (response.status !== 200) throw new Error(`${path} answered ${response.status}`)
    await response.arrayBuffer()
  }
  const any = () => Math.floor(Math.random() * count)
  return {
    running,
    tasks: {
      'search by exchange_number': () => ask(`/v1/transactions/search?search_reference=exchange_number&reference_number=${exchangeNumbers[any()]}`),
      'search by order_number': () => ask(`/v1/transactions/search?search_reference=order_number&reference_number=ORD-${any()}`),
      'status by order number': () => ask(`/v1/payments/status/ORD-${any()}`),
      'list, first page of 100': () => ask('/v1/transactions/list?payment_status=all&per_page=100'),
    },
  }
}

const small = await filled(SMALL)
const large = await filled(LARGE)
const names = Object.keys(small.tasks) as (keyof typeof small.tasks)[]
try {
  const tasks = names.flatMap((name) => [[`${name} @${SMALL}`, small.tasks[name]] as const, [`${name} @${LARGE}`, large.tasks[name]] as const])
  const rounds = await throughputRounds(tasks, 300)
  console.log(`payments: ${SMALL} and ${LARGE} (half paid); ${process.env.BENCH_ROUNDS ?? 7} rounds, medians, over HTTP on 127.0.0.1`)
  console.table(
    tasks.map(([name], i) => {
      const hz = median(rounds[i] as number[])
      return { task: name, 'requests/s': Math.round(hz), 'ms/request': Number((1000 / hz).toFixed(3)) }
    }),
  )
  names.forEach((name, i) => {
    const atSmall = rounds[2 * i] as number[]
    const atLarge = rounds[2 * i + 1] as number[]
    // Time per lookup at LARGE over time at SMALL, round by round: throughput at SMALL over throughput at LARGE.
    const ratio = median(atSmall.map((hz, round) => hz / (atLarge[round] as number)))
    console.log(`${name}: time at ${LARGE} / time at ${SMALL} = ${ratio.toFixed(2)}`)
  })
} finally {
  await Promise.all([small.running.stop(), large.running.stop()])
}
