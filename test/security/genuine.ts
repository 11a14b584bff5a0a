/**
 * Genuine signed results of real payments, made at the package's own emulator as a hostile buyer would get them:
 * the buyer chooses their name, e-mail and phone (and so fpx_name, which the emulator fills from the name), pays,
 * and holds the signed result that comes back through their browser.
 */
import { createReceiver, type PaymentEvent, type Receiver, type ReceiverOptions } from '../../src/index.js'
import { encodeForm } from '../../src/core/result/form-encode.js'
import { DEMO, type Emulator, launch } from '../emulator/harness.js'
import { type Pairs, signedPairs } from '../receiver/rearrange.js'

export { DEMO }

export type Outcome = 'approve' | 'reject' | 'cancel' | 'pending'

export interface Genuine {
  readonly exchangeNumber: string
  readonly orderNumber: string
  /** The signed result as the service posts it (form-encoded). */
  readonly body: string
  readonly fields: Readonly<Record<string, string>>
  /** Its signed values in signed order, with their names, and the checksum. */
  readonly pairs: Pairs
  readonly checksum: string
}

export interface Buyer {
  readonly buyer_name?: string
  readonly buyer_email?: string
  readonly buyer_phone?: string
  readonly order_number?: string
  readonly transaction_amount?: string
  readonly model?: 'B2C' | 'B2B1'
  readonly params?: Readonly<Record<string, string>>
}

let orders = 0

export interface Service {
  readonly emulator: Emulator
  readonly environment: { baseUrl: string }
  /** A payment made and finished at the emulator, and its genuine signed result. */
  pay(outcome: Outcome, buyer?: Buyer): Promise<Genuine>
  /** The genuine result of an approval (00) of a B2B1 payment that was pending (99). */
  approve(pending: Genuine): Promise<Genuine>
  stop(): Promise<void>
}

export async function service(): Promise<Service> {
  const emulator = await launch({ config: { merchants: [{ name: 'Kedai Ujian', credentials: [DEMO], b2b1: true }] } })
  const resultOf = async (exchangeNumber: string): Promise<Genuine> => {
    const response = await emulator.control(`/payments/${exchangeNumber}/result`)
    if (response.status !== 200) throw new Error(`the emulator has no result for ${exchangeNumber}: ${response.status}`)
    const fields = (await response.json()) as Record<string, string>
    const body = encodeForm(fields)
    return { exchangeNumber, orderNumber: String(fields.order_number), body, fields, ...signedPairs(body) }
  }
  return {
    emulator,
    environment: { baseUrl: emulator.baseUrl },
    async pay(outcome, buyer = {}) {
      const { params, model, ...rest } = buyer
      const form: Record<string, string> = { order_number: `SEC-${process.pid}-${++orders}`, transaction_amount: '10.00', ...rest }
      if (model !== undefined) form.model = model
      for (const [key, value] of Object.entries(params ?? {})) form[`params[${key}]`] = value
      const exchangeNumber = await emulator.pay(form)
      await emulator.complete(exchangeNumber, outcome)
      return resultOf(exchangeNumber)
    },
    async approve(pending) {
      const response = await emulator.control(`/payments/${pending.exchangeNumber}/approve`, {})
      if (response.status !== 200) throw new Error(`approval answered ${response.status}: ${await response.text()}`)
      return resultOf(pending.exchangeNumber)
    },
    stop: () => emulator.stop(),
  }
}

export interface Recorded {
  readonly receiver: Receiver<unknown>
  readonly events: PaymentEvent<unknown>[]
}

/** A receiver with a handler for every event that records what it was given. Confirmed unless told otherwise. */
export function recorded(options: Partial<ReceiverOptions<unknown>>): Recorded {
  const receiver = createReceiver({ logger: false, ...options } as ReceiverOptions<unknown>)
  const events: PaymentEvent<unknown>[] = []
  for (const name of ['payment.succeeded', 'payment.failed', 'payment.pending'] as const) receiver.on(name, (event) => void events.push(event))
  return { receiver, events }
}

export const FORM = 'application/x-www-form-urlencoded'

/** A delivery of `body` as the service makes it: in the body, or in the query string of an empty POST. */
export function delivery(body: string, transport: 'body' | 'query', kind: 'callback' | 'redirect' = 'callback') {
  return transport === 'body' ? { kind, body, contentType: FORM } : { kind, body: '', contentType: FORM, query: body }
}
