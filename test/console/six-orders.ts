import { expect } from 'vitest'
import { paymentInput } from '../client/helpers.js'
import type { ConsoleRig } from './rig.js'

/**
 * The six orders of issue 36, as a new operator met them against the emulator: paid; rejected at the bank;
 * abandoned (never paid, closed by the sweeper); a B2B1 payment left at 99; one whose results were all lost; one
 * whose handler kept throwing until its inbox entry was dead-lettered.
 */
export interface SixOrders {
  readonly paid: string
  readonly rejected: string
  readonly abandoned: string
  readonly pending: string
  readonly lost: string
  readonly throwing: string
}

async function create(rig: ConsoleRig, overrides: Record<string, string> = {}): Promise<{ orderNumber: string; exchangeNumber: string }> {
  const input = paymentInput({ callback_url: `${rig.appUrl}/fpx/callback`, ...overrides })
  const created = await rig.client.createPayment(input)
  return { orderNumber: input.order_number, exchangeNumber: created.exchangeNumber as string }
}

const booked = (rig: ConsoleRig, orderNumber: string) => rig.receiver.payments.find(orderNumber)

/** Waits until `read` answers `wanted` (expect.poll works inside a test only; the orders are placed before them). */
export async function until<T>(what: string, read: () => Promise<T>, wanted: T, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let last: T | undefined
  while (Date.now() < deadline) {
    last = await read()
    if (last === wanted) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`${what}: still ${String(last)} after ${timeoutMs} ms, expected ${String(wanted)}`)
}

export async function placeSixOrders(rig: ConsoleRig): Promise<SixOrders> {
  // Abandoned first and alone, so the one sweep that closes it finds nothing else open.
  const abandoned = await create(rig)
  await new Promise((resolve) => setTimeout(resolve, 500))
  expect(await rig.receiver.sweep()).toMatchObject({ swept: true, lookups: 1, abandoned: 1 })

  const paid = await create(rig, { buyer_name: 'Tan Mei Ling', buyer_email: 'mei@example.com' })
  await rig.emulator.complete(paid.exchangeNumber, 'approve')
  const rejected = await create(rig)
  await rig.emulator.complete(rejected.exchangeNumber, 'reject')
  const pending = await create(rig, { model: 'B2B1', transaction_amount: '2500.00' })
  await rig.emulator.complete(pending.exchangeNumber, 'pending')

  await rig.emulator.control('/faults', { lose_results: 1 })
  const lost = await create(rig)
  await rig.emulator.complete(lost.exchangeNumber, 'approve')
  await rig.emulator.control('/faults', { lose_results: 0 })

  const throwing = await create(rig)
  rig.failing.add(throwing.orderNumber)
  await rig.emulator.complete(throwing.exchangeNumber, 'approve')

  await until('the paid order', async () => (await booked(rig, paid.orderNumber))?.status, 'succeeded')
  await until('the rejected order', async () => (await booked(rig, rejected.orderNumber))?.status, 'failed')
  await until('the B2B1 order', async () => (await booked(rig, pending.orderNumber))?.state, 'pending')
  // Two attempts, then dead: the inbox gave up on the handler.
  await until('the dead letter', async () => (await rig.receiver.inbox.list({ status: 'dead', orderNumber: throwing.orderNumber })).length, 1)
  expect(await booked(rig, lost.orderNumber)).toMatchObject({ status: 'open', state: null })
  expect(await booked(rig, abandoned.orderNumber)).toMatchObject({ status: 'abandoned' })
  return {
    paid: paid.orderNumber,
    rejected: rejected.orderNumber,
    abandoned: abandoned.orderNumber,
    pending: pending.orderNumber,
    lost: lost.orderNumber,
    throwing: throwing.orderNumber,
  }
}
