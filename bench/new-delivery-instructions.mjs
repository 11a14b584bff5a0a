/**
 * Instructions per new delivery of a payment the store never saw, for callgrind (deterministic where timings are
 * not): run it twice, with N deliveries and with none, and divide the difference by N.
 *
 *   N=8000 valgrind --tool=callgrind node bench/new-delivery-instructions.mjs   # then N=0; "Collected" per run
 *
 * DIST names another build to compare (default: this checkout's dist/). Memory store, telemetry off.
 */
import { Buffer } from 'node:buffer'
import process from 'node:process'
import { fileURLToPath, URL } from 'node:url'

const dist = process.env.DIST || fileURLToPath(new URL('../dist', import.meta.url))
const { createReceiver, memoryStore } = await import(`${dist}/index.js`)
const { samplePaymentFields, signCallback } = await import(`${dist}/testing.js`)
const token = 'ab'.repeat(32)
const POOL = 8000
const bodies = []
for (let i = 0; i < POOL; i++) bodies.push(Buffer.from(signCallback(samplePaymentFields(), token).body))
const receiver = createReceiver({ checksumToken: token, store: memoryStore(), telemetry: false })
receiver.on('payment.succeeded', () => {})
const n = Math.min(POOL, Number(process.env.N ?? POOL))
for (let i = 0; i < n; i++) {
  const response = await receiver.handle({ kind: 'callback', body: bodies[i], contentType: 'application/x-www-form-urlencoded' })
  if (response.outcome !== 'processed') throw new Error(`a new delivery was ${response.outcome}`)
}
await receiver.flush()
