import { createClient, type FpxClient, type PaymentInput } from '../../src/client/index.js'
import type { ClientOptions } from '../../src/client/config.js'
import { DEMO, type Emulator, launch, PARTNER } from '../emulator/harness.js'

export { DEMO, type Emulator, launch, PARTNER }

export const PARTNER_CHECKSUM = 'fedcba9876543210'.repeat(4)

/** A fetch that records every URL it is asked for and passes it on: proof that a request was (not) made. */
export function countingFetch(): { fetch: typeof fetch; calls: string[] } {
  const calls: string[] = []
  return {
    calls,
    fetch: (input, init) => {
      calls.push(String(input instanceof Request ? input.url : input))
      return fetch(input, init)
    },
  }
}

export function demoClient(emulator: Emulator, options: Partial<ClientOptions> = {}): FpxClient {
  return createClient({ environment: { baseUrl: emulator.baseUrl }, ...DEMO, retryDelayMs: 1, ...options })
}

let orders = 0
export function paymentInput(overrides: Partial<PaymentInput> = {}): PaymentInput {
  return {
    order_number: `CLI-${process.pid}-${++orders}-${Math.random().toString(36).slice(2, 8)}`,
    buyer_name: 'Nur Aisyah binti Ahmad',
    buyer_email: 'aisyah@example.com',
    buyer_phone: '+60123456789',
    transaction_amount: '100.20',
    product_description: 'Two kilos of coffee beans',
    ...overrides,
  }
}

/** A log that keeps what was written, to check that something was logged and that no secret was. */
export function memoryLogger(): { lines: string[]; logger: Record<'debug' | 'info' | 'warn' | 'error', (details: object, message: string) => void> } {
  const lines: string[] = []
  const write = (details: object, message: string): void => void lines.push(`${message} ${JSON.stringify(details)}`)
  return { lines, logger: { debug: write, info: write, warn: write, error: write } }
}

/** A fetch that keeps each request's URL and form body (as the emulator receives them) and passes it on. */
export function recordingFetch(): { fetch: typeof fetch; sent: Array<{ url: string; form: URLSearchParams }> } {
  const sent: Array<{ url: string; form: URLSearchParams }> = []
  return {
    sent,
    fetch: (input, init) => {
      sent.push({ url: String(input instanceof Request ? input.url : input), form: new URLSearchParams(typeof init?.body === 'string' ? init.body : '') })
      return fetch(input, init)
    },
  }
}
