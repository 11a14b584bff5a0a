/**
 * Many distinct signed callbacks, fast: the benchmarks need tens of thousands, and signing each through the
 * testing helper (which builds a full message per call) took longer than the measurements. One sample from
 * fpx-collect/testing is the template; each copy gets its own exchange_number (and the URLs that carry it) and
 * order_number, and is signed here by the rule in the spec: values sorted by field name, joined by `|`,
 * HMAC-SHA256 by node:crypto.
 * The first copy is checked against the package's own signer, so a drift would stop the benchmark.
 */
import { createHmac, randomInt } from 'node:crypto'
import { fromDist, type Testing } from './dist.js'

const { samplePaymentFields, signCallback } = await fromDist<Testing>('testing')

// Ten random digits per run, then a counter running through every call of this process: unique within the run
// (several pools of one benchmark, or a pool topped up while it runs, never share a number) and unlikely to meet
// another run's.
const BASE = randomInt(1, 9_000) * 1_000_000
let made = 0

export function signedCallbacks(count: number, checksumToken: string): Buffer[] {
  const template = samplePaymentFields() as Record<string, string>
  const original = String(template.exchange_number)
  const originalOrder = String(template.order_number)
  const names = Object.keys(template).sort()
  for (const name of names) if (typeof template[name] !== 'string') throw new Error(`sample field ${name} is not text`)
  // Five capitals and ten digits, as long as the service's numbers (ULDYE1656661277): a string's length decides how
  // V8 keeps the slices of it (src/contract/detached.ts), so shorter numbers would hide what keeping them costs.
  const base = BASE + made
  made += count
  const bodies: Buffer[] = []
  for (let i = 0; i < count; i++) {
    const exchange = `BENCH${String(base + i).padStart(10, '0')}`
    const fields: Record<string, string> = {}
    for (const name of names) fields[name] = (template[name] as string).replaceAll(original, exchange)
    // Every payment its own order, as in a shop: one order_number for all made the timeline's by-order list one
    // hot entry instead of a map as large as the store's.
    fields.order_number = originalOrder.replace(/\d+$/, exchange.slice(5))
    const signed = names.map((name) => fields[name]).join('|')
    fields.checksum = createHmac('sha256', checksumToken).update(signed, 'utf8').digest('hex')
    bodies.push(Buffer.from(new URLSearchParams(fields).toString()))
    if (i === 0) {
      const reference = new URLSearchParams(signCallback(fields, checksumToken).body).get('checksum')
      if (reference !== fields.checksum) throw new Error('the fast signer disagrees with fpx-collect/testing signCallback')
    }
  }
  return bodies
}

/**
 * The same callbacks packed into one buffer, each handed out as a fresh view when asked for. Tens of thousands
 * of Buffers kept for a whole run were most of the benchmark's own heap: every major GC walked them, and that GC
 * time landed on whichever case was running, most on those that keep memory of their own (the timeline). A
 * server makes one Buffer per request, which dies with it; so does `body(i)`.
 */
export class CallbackPool {
  private readonly bytes: Buffer
  private readonly ends: Uint32Array

  constructor(count: number, checksumToken: string) {
    const bodies = signedCallbacks(count, checksumToken)
    this.bytes = Buffer.concat(bodies)
    this.ends = new Uint32Array(count)
    let end = 0
    for (let i = 0; i < count; i++) this.ends[i] = end += (bodies[i] as Buffer).length
  }

  get length(): number {
    return this.ends.length
  }

  body(index: number): Buffer {
    if (!(index >= 0 && index < this.ends.length)) throw new RangeError(`no callback ${index} in a pool of ${this.ends.length}`)
    return this.bytes.subarray(index === 0 ? 0 : (this.ends[index - 1] as number), this.ends[index] as number)
  }
}
