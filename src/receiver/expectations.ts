import { ReceiverError } from '../core/result/errors.js'
import { toSen, type PaymentState } from '../core/payment.js'
import type { VerifiedPayment } from '../core/result/verify.js'

/** What the merchant asked for, for one order: the result must agree before any handler runs. */
export interface ExpectedPayment {
  /**
   * transaction_amount as you asked for it (`'100.20'`, as sent to the service). A result for this order with
   * another amount, or with none, is refused.
   */
  readonly amount?: string
  /** Other fields the result must carry with exactly this text, for example `{ uid: '…' }`. */
  readonly fields?: Readonly<Record<string, string>>
}

/** The result an `expect` hook is asked about. */
export interface ExpectQuery {
  readonly orderNumber: string
  readonly exchangeNumber: string
  readonly state: PaymentState
}

/**
 * Returns what you asked for under this order_number, or nothing for an order you do not know (then the result
 * is handled as without the hook: payments created elsewhere keep working).
 */
export type ExpectHook = (result: ExpectQuery) => ExpectedPayment | null | undefined | Promise<ExpectedPayment | null | undefined>

const DECIMAL = /^\d+(\.\d{1,2})?$/

/** What does not agree with the expectation, as a sentence without values (they may be the buyer's), or undefined. */
function disagreement(expected: ExpectedPayment, verified: VerifiedPayment): string | undefined {
  if (expected.amount !== undefined) {
    if (typeof expected.amount !== 'string' || !DECIMAL.test(expected.amount))
      throw new TypeError('expect: amount must be decimal text such as "100.20"')
    const got = verified.payment.amountSen
    if (got === undefined) return 'the result carries no transaction_amount to compare with the amount expected for its order_number'
    if (got !== toSen(expected.amount)) return 'transaction_amount differs from the amount expected for its order_number'
  }
  for (const [name, text] of Object.entries(expected.fields ?? {}))
    if (verified.fields[name] !== text) return `${name} differs from the value expected for its order_number`
  return undefined
}

/** Asks the hook and compares. Resolves to the refusal, or undefined when the result agrees or the order is unknown. */
export async function checkExpected(hook: ExpectHook, verified: VerifiedPayment, withinMs: number): Promise<ReceiverError | undefined> {
  let problem: string | undefined
  let timer: ReturnType<typeof setTimeout> | undefined
  // Bounded as a store call is: a hook that never answers (its query on a stalled connection) fails like one that throws.
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`the expect hook did not answer within ${withinMs} ms`)), withinMs)
  })
  try {
    const asked = new Promise<ExpectedPayment | null | undefined>((resolve) =>
      resolve(hook({ orderNumber: verified.orderNumber, exchangeNumber: verified.exchangeNumber, state: verified.state })),
    )
    const expected = await Promise.race([asked, late])
    if (expected === null || expected === undefined) return undefined
    problem = disagreement(expected, verified)
  } catch (error) {
    return new ReceiverError('expect_failed', 'the expect hook failed; the result was not handled, retry later', { cause: error })
  } finally {
    clearTimeout(timer)
  }
  return problem === undefined ? undefined : new ReceiverError('result_mismatch', problem)
}
