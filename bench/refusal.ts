/**
 * npm run bench:refusal — what a request that fails verification costs, on the built package (issue 34, point 7:
 * at most 10× an ordinary refused request, for any body up to the size limit). Each case is handed to
 * `receiver.handle()` of a receiver with the defaults (confirmed: the API is never reached, since nothing here
 * verifies), with every refusal diagnosed (`diagnosisPerSecond: Infinity`): the worst a single request can cost,
 * which the default rationing then spares a flood.
 *
 * The ordinary refusal: a genuine callback with its amount changed. The rest are the costliest bodies found up to
 * the size limit (maxBodyBytes, 16 KiB by default): many fields, deep or wide JSON, long values, escapes, and query strings (whose leading
 * parameters the receiver may try leaving unsigned). Requests take turns across the cases; each request's CPU time
 * is read with process.cpuUsage(), and the table gives each case's median and p99 and their ratios to the
 * ordinary refusal's. Environment: BENCH_OPS (requests per case, default 400).
 */
import { type Core, fromDist, type Testing } from './dist.js'
import { envInteger } from './env.js'

const OPS = envInteger('BENCH_OPS', 400, 20)

const { createReceiver, DEFAULT_MAX_BODY_BYTES: LIMIT } = await fromDist<Core>('index')
const { samplePaymentFields, signCallback } = await fromDist<Testing>('testing')

const checksumToken = '3f6b8e2a9c1d4f7e0a5b8c2d6e9f1a4b7c0d3e6f9a2b5c8d1e4f7a0b3c6d9e2f'
const credentials = { uid: 'bench-uid', authToken: 'A1b2C3d4E5f6G7h8I9j0', checksumToken }
const FORM = 'application/x-www-form-urlencoded'
const JSON_TYPE = 'application/json'
const genuine = signCallback(samplePaymentFields(), checksumToken).body
const forged = genuine.replace('transaction_amount=100.20', 'transaction_amount=1.00')
const checksum = new URLSearchParams(genuine).get('checksum') as string

/** Repeats `unit` (numbered by `make`) until the next would pass `room` characters. */
function filled(room: number, make: (i: number) => string, join = ''): string {
  const parts: string[] = []
  let length = 0
  for (let i = 0; ; i++) {
    const part = make(i)
    if (length + part.length + join.length > room) return parts.join(join)
    parts.push(part)
    length += part.length + join.length
  }
}

const room = LIMIT - 200
interface Body {
  readonly name: string
  readonly body: string
  readonly contentType: string
  readonly query?: string
}
const BODIES: Body[] = [
  { name: 'ordinary: a genuine callback, amount changed', body: forged, contentType: FORM },
  { name: 'JSON [{},{},…]', body: `[${filled(room, () => '{}', ',')}]`, contentType: JSON_TYPE },
  { name: 'JSON {"a":[{},{},…],checksum}', body: `{"checksum":"${checksum}","a":[${filled(room, () => '{}', ',')}]}`, contentType: JSON_TYPE },
  { name: 'JSON, keys to the limit, and a checksum', body: `{"checksum":"${checksum}",${filled(room, (i) => `"k${i}":"v"`, ',')}}`, contentType: JSON_TYPE },
  { name: 'JSON nested to the depth limit, wide', body: `{"checksum":"${checksum}","p":{${filled(room, (i) => `"k${i}":{"a":{"b":"c"}}`, ',')}}}`, contentType: JSON_TYPE },
  { name: 'form, empty fields to the limit', body: `checksum=${checksum}&${filled(room, (i) => `f${i}=`, '&')}`, contentType: FORM },
  { name: 'form, one value to the limit', body: `checksum=${checksum}&uid=x&buyer_name=${'a'.repeat(room)}`, contentType: FORM },
  { name: 'form, %-escapes to the limit', body: `checksum=${checksum}&buyer_name=${filled(room, () => '%E2%82%AC')}`, contentType: FORM },
  { name: 'form, nested brackets p[a][b]…', body: `checksum=${checksum}&${filled(room, (i) => `p[k${i}][a][b]=v`, '&')}`, contentType: FORM },
  { name: 'form, every value a |', body: `checksum=${checksum}&${filled(room, (i) => `f${i}=%7C`, '&')}`, contentType: FORM },
  { name: 'form, fields of 250 characters, to the limit', body: `checksum=${checksum}&${filled(room, (i) => `f${String(i).padStart(3, '0')}=${'v'.repeat(250)}`, '&')}`, contentType: FORM },
  { name: 'form, fields of |, to the limit', body: `checksum=${checksum}&${Array.from({ length: Math.floor(room / 260) }, (_, i) => `f${String(i).padStart(3, '0')}=${'%7C'.repeat(80)}`).join('&')}`, contentType: FORM },
  { name: 'form, nested params, to the limit', body: `checksum=${checksum}&${Array.from({ length: Math.floor(room / 260) }, (_, i) => `params[k${String(i).padStart(3, '0')}][a]=${'v'.repeat(200)}`).join('&')}`, contentType: FORM },
  { name: 'JSON, members nested 7 deep, to the limit', body: `{"checksum":"${checksum}",${Array.from({ length: Math.floor(room / 250) }, (_, i) => `"p${i}":{"a":{"b":{"c":{"d":{"e":{"f":"${'v'.repeat(200)}"}}}}}}`).join(',')}}`, contentType: JSON_TYPE },
  { name: 'query: 8 own params, then fields', body: '', contentType: FORM, query: `${Array.from({ length: 8 }, (_, i) => `own${i}=1`).join('&')}&checksum=${checksum}&${Array.from({ length: Math.floor(room / 260) - 9 }, (_, i) => `f${String(i).padStart(3, '0')}=${'v'.repeat(200)}`).join('&')}` },
  { name: 'query: fields to the limit, no body', body: '', contentType: FORM, query: `${filled(room, (i) => `q${i}=1`, '&')}&checksum=${checksum}` },
  { name: 'query: own params, then a copy of a result', body: '', contentType: FORM, query: `${filled(room - forged.length, (i) => `own${i}=1`, '&')}&${forged}` },
  // An `&amp;` makes a failed query be read once more with plain separators: every split tried twice.
  { name: 'query: 8 own params, then fields, one &amp;', body: '', contentType: FORM, query: `${Array.from({ length: 8 }, (_, i) => `own${i}=1`).join('&')}&checksum=${checksum}&${Array.from({ length: Math.floor(room / 260) - 9 }, (_, i) => `f${String(i).padStart(3, '0')}=${'v'.repeat(200)}`).join('&')}&amp;x=1` },
]
for (const { name, body, query } of BODIES) if (body.length > LIMIT || (query?.length ?? 0) > LIMIT) throw new Error(`${name} is past the limit`)


const receiver = createReceiver({ environment: { baseUrl: 'http://127.0.0.1:9/api' }, credentials, diagnosisPerSecond: Number(process.env.BENCH_DIAGNOSES ?? Infinity), logger: false })
receiver.on('payment.succeeded', () => {})

const samples = BODIES.map(() => [] as number[])
const codes = BODIES.map(() => new Set<string>())
for (let round = 0; round < OPS + 20; round++) {
  for (const [i, { body, contentType, query }] of BODIES.entries()) {
    const start = process.cpuUsage()
    const answer = await receiver.handle({ kind: 'callback', body, contentType, query })
    const used = process.cpuUsage(start)
    if (answer.status < 400 || answer.status >= 500) throw new Error(`${BODIES[i]?.name} was answered ${answer.status}`)
    codes[i]?.add(answer.error?.code ?? '?')
    // The first rounds warm the code up.
    if (round >= 20) samples[i]?.push((used.user + used.system) / 1000)
  }
}

const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number
}
const ordinary = { median: quantile(samples[0] as number[], 0.5), p99: quantile(samples[0] as number[], 0.99) }
console.log(`bench:refusal — CPU per refused request, ${OPS} requests per case, every refusal diagnosed (node ${process.version})\n`)
console.log(`${'case'.padEnd(48)} ${'median ms'.padStart(10)} ${'p99 ms'.padStart(8)} ${'× median'.padStart(9)} ${'× p99'.padStart(7)}  answer`)
let worst = 0
for (const [i, { name }] of BODIES.entries()) {
  const median = quantile(samples[i] as number[], 0.5)
  const p99 = quantile(samples[i] as number[], 0.99)
  worst = Math.max(worst, median / ordinary.median)
  console.log(
    `${name.padEnd(48)} ${median.toFixed(3).padStart(10)} ${p99.toFixed(3).padStart(8)} ${(median / ordinary.median).toFixed(1).padStart(9)} ${(p99 / ordinary.p99).toFixed(1).padStart(7)}  ${[...(codes[i] ?? [])].join(', ')}`,
  )
}
console.log(`\nworst median ratio ${worst.toFixed(1)}× (goal: at most 10×)`)
await receiver.close()
