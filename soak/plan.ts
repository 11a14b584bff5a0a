import type { PaymentState } from '../src/core/payment.js'
import { type Fields, samplePaymentFields, signCallback } from '../src/testing.js'
import { TOKEN } from './protocol.js'

/*
 * What the driver sends for each payment, drawn from a PRNG seeded per payment so a run's shape repeats with
 * its seed (the references inside the bodies stay random). A payment's results are sent in order, each one
 * only after every delivery of the one before got a 2xx; a result's deliveries go out in waves, a wave's
 * deliveries at the same moment to different processes.
 */

export type Kind = 'callback' | 'redirect'

export interface Send {
  /** Unique in the run; the ledger records it. */
  readonly delivery: number
  readonly kind: Kind
  readonly state: PaymentState
  readonly body: string
  readonly contentType: string
  readonly duplicate: 'no' | 'concurrent' | 'later'
}

export interface PaymentPlan {
  readonly exchangeNumber: string
  readonly model: 'B2C' | 'B2B1'
  /** B2B1 whose 00 (or rejection) arrives before its 99: the 99 must then be ignored as stale. */
  readonly outOfOrder: boolean
  /** Each result's waves, results in sending order. */
  readonly results: readonly (readonly Send[][])[]
  /** The states whose handlers must have run (each exactly once, as far as the store promises). */
  readonly expected: ReadonlySet<PaymentState>
  readonly final: PaymentState
}

/** mulberry32: small, fast, good enough to shape traffic. */
export function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const STATE_FIELDS: Record<PaymentState, Fields> = {
  succeeded: { payment_status: 'true', fpx_debit_auth_code: '00', fpx_status: 'true', fpx_status_message: 'Approved' },
  failed: {
    payment_status: 'false',
    fpx_debit_auth_code: '1C',
    fpx_status: 'false',
    fpx_status_message: 'Buyer cancelled',
    transaction_amount_received: '0.00',
    payment_stage: 'payment_failed',
  },
  pending: {
    payment_status: 'false',
    fpx_debit_auth_code: '99',
    fpx_status: 'false',
    fpx_status_message: 'Pending authoriser approval',
    transaction_amount_received: '0.00',
    payment_stage: 'payment_pending',
  },
}

export interface PlanOptions {
  seed: number
  runTag: string
  duplicateRate: number
  nextDelivery: () => number
}

export function planPayment(index: number, options: PlanOptions): PaymentPlan {
  const random = prng(options.seed ^ Math.imul(index + 1, 0x9e3779b1))
  // Ours rather than samplePaymentFields' random ones: ten thousand random 10-digit numbers collide now and then.
  const exchangeNumber = `SK${options.runTag}${String(index).padStart(7, '0')}`
  const pick = random()
  const model = pick < 0.2 ? 'B2B1' : 'B2C'
  let states: PaymentState[]
  let outOfOrder = false
  if (model === 'B2B1') {
    const final = random() < 0.85 ? 'succeeded' : 'failed'
    outOfOrder = random() < 0.25
    states = outOfOrder ? [final, 'pending'] : ['pending', final]
  } else {
    states = [pick < 0.35 ? 'failed' : 'succeeded']
  }
  const common = samplePaymentFields({ exchange_number: exchangeNumber, order_number: `ORD-${options.runTag}-${index}`, fpx_model: model })

  const results = states.map((state) => {
    const { body, contentType } = signCallback({ ...common, ...STATE_FIELDS[state] }, TOKEN)
    const send = (kind: Kind, duplicate: Send['duplicate']): Send => ({
      delivery: options.nextDelivery(),
      kind,
      state,
      body,
      contentType,
      duplicate,
    })
    // The callback always comes; the buyer's browser brings the same result back half the time.
    const originals = [send('callback', 'no')]
    if (random() < 0.5) originals.push(send('redirect', 'no'))
    if (random() < 0.5) originals.reverse()
    const waves: Send[][] = originals.length === 2 && random() < 0.5 ? [originals] : originals.map((one) => [one])
    for (const wave of [...waves]) {
      for (const original of [...wave]) {
        if (random() >= options.duplicateRate) continue
        if (random() < 0.5) wave.push(send(original.kind, 'concurrent'))
        else waves.push([send(original.kind, 'later')])
      }
    }
    return waves
  })

  // Every payment has exactly one final (non-pending) result. Out of order, the late 99 is stale and never runs.
  const final = states.find((state) => state !== 'pending') as PaymentState
  const expected = new Set<PaymentState>(outOfOrder ? [final] : states)
  return { exchangeNumber, model, outOfOrder, results, expected, final }
}
