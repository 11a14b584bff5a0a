/*
 * The emulator's lookups (payment-index.ts) answer what a plain scan of every payment answers: after new
 * payments, completions (B2B1 99 then 00 included), retried orders, a clock that jumps back and forth over days,
 * a state snapshot reloaded into a fresh emulator, and a reset.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { type CompletionOutcome, EmulatorState, type PaymentRecord, type Principal, resolveConfig } from '../../src/emulator/index.js'
import { mytDay } from '../../src/emulator/records.js'
import type { NewPayment } from '../../src/emulator/state.js'

const START = Date.parse('2026-03-15T04:00:00Z')
const DAY_MS = 86_400_000

function newState(clock: { now: number }): EmulatorState {
  return new EmulatorState(resolveConfig(), () => new Date(clock.now))
}

function input(state: EmulatorState, orderNumber: string, viaPartner: boolean, model: 'B2C' | 'B2B1'): NewPayment {
  const merchant = state.setup.merchants[0]!
  return {
    merchantId: merchant.id,
    credentialUid: merchant.credentials[0]!.uid,
    partnerUid: viaPartner ? state.setup.partners[0]!.partnerUids[0]! : null,
    orderNumber,
    buyerName: 'Nur Aisyah',
    buyerEmail: 'aisyah@example.com',
    buyerPhone: '+60123456789',
    transactionAmount: '10.00',
    productDescription: 'Tea',
    callbackUrl: null,
    redirectUrl: null,
    cancelUrl: null,
    timeoutUrl: null,
    redirectPost: false,
    model,
    bankSelection: 'dropdown',
    buyerBankCode: null,
    params: null,
    shippingAddress: null,
    billingAddress: null,
    clientIp: '127.0.0.1',
  }
}

function principals(state: EmulatorState): Principal[] {
  const merchant = state.setup.merchants[0]!
  const partner = state.setup.partners[0]!
  return [
    { kind: 'merchant', merchant, credential: merchant.credentials[0]! },
    { kind: 'partner', partner, credential: partner.credentials[0]! },
  ]
}

/** What the API answered before the indexes: every payment filtered, sorted newest first. */
function scanned(state: EmulatorState, principal: Principal): PaymentRecord[] {
  return state.payments
    .filter((record) => state.canRead(principal, record))
    .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.paymentId - a.paymentId)
}

/** Every lookup the API makes, for every principal, answered by the indexes and by a scan: they must agree. */
function expectLookupsAgree(state: EmulatorState, today: number): void {
  for (const principal of principals(state)) {
    const visible = scanned(state, principal)
    for (const record of state.payments) {
      const readable = state.canRead(principal, record)
      expect(state.payment(record.exchangeNumber)).toBe(record)
      expect(state.paymentByReference(record.merchantReferenceNumber)).toBe(record)
      const ofOrder = visible.filter((other) => other.orderNumber === record.orderNumber)
      expect(state.latestAttempt(principal, record.orderNumber)).toBe(ofOrder[0])
      expect(state.search(principal, 'order_number', record.orderNumber).records).toEqual(ofOrder)
      expect(state.search(principal, 'exchange_number', record.exchangeNumber).records).toEqual(readable ? [record] : [])
      if (record.bank !== null) {
        const ofBank = visible.filter((other) => other.bank?.transactionId === record.bank?.transactionId)
        expect(state.search(principal, 'fpx_ref_number', record.bank.transactionId).records).toEqual(ofBank)
      }
    }
    for (const paymentStatus of ['true', 'false', 'all'] as const) {
      const window = { fromDay: today - 89, toDay: today }
      const matching = visible.filter((record) => {
        const day = mytDay(new Date(record.createdAt))
        return day >= window.fromDay && day <= window.toDay && (paymentStatus === 'all' || String(record.paymentStatus) === paymentStatus)
      })
      for (const [offset, limit] of [[0, 10], [3, 4], [10, 100], [matching.length, 10]] as const) {
        const page = state.listPage(principal, { ...window, paymentStatus, offset, limit })
        expect(page.total).toBe(matching.length)
        expect(page.records).toEqual(matching.slice(offset, offset + limit))
      }
    }
  }
}

type Step =
  | { kind: 'pay'; order: number; partner: boolean; b2b1: boolean }
  | { kind: 'complete'; which: number; outcome: CompletionOutcome }
  | { kind: 'clock'; hours: number }

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('pay' as const), order: fc.nat(5), partner: fc.boolean(), b2b1: fc.boolean() }),
  fc.record({ kind: fc.constant('complete' as const), which: fc.nat(), outcome: fc.constantFrom<CompletionOutcome>('approve', 'reject', 'cancel', 'pending') }),
  // Back and forth over days (the list's tests set the clock so), and past the 90-day window.
  fc.record({ kind: fc.constant('clock' as const), hours: fc.integer({ min: -24 * 100, max: 30 }) }),
)

function run(state: EmulatorState, clock: { now: number }, steps: readonly Step[]): void {
  for (const taken of steps) {
    if (taken.kind === 'clock') clock.now += taken.hours * 3_600_000
    else if (taken.kind === 'pay') state.addPayment(input(state, `ORD-${taken.order}`, taken.partner, taken.b2b1 ? 'B2B1' : 'B2C'))
    else if (state.payments.length > 0) {
      const record = state.payments[taken.which % state.payments.length]!
      // Outcomes the payment cannot take (a second final answer) are refused; the indexes must not move then.
      try {
        state.complete(record.exchangeNumber, taken.outcome)
      } catch {
        // refused: nothing changed
      }
    }
  }
}

describe('the emulator state lookups', () => {
  it('agree with a scan of every payment, after any history, a snapshot reload and a reset', () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 60 }), (steps) => {
        const clock = { now: START }
        const state = newState(clock)
        run(state, clock, steps)
        const today = mytDay(new Date(START))
        expectLookupsAgree(state, today)

        // A --state file's snapshot, loaded by a fresh emulator: the same answers, and new payments join in.
        const reloaded = newState(clock)
        reloaded.restore(JSON.parse(JSON.stringify(state)))
        expect(reloaded.payments.map((record) => record.exchangeNumber)).toEqual(state.payments.map((record) => record.exchangeNumber))
        expectLookupsAgree(reloaded, today)
        run(reloaded, clock, steps)
        expectLookupsAgree(reloaded, today)

        reloaded.reset()
        expect(reloaded.payments).toEqual([])
        for (const principal of principals(reloaded)) {
          expect(reloaded.search(principal, 'order_number', 'ORD-0').records).toEqual([])
          expect(reloaded.listPage(principal, { fromDay: today - 89, toDay: today, paymentStatus: 'all', offset: 0, limit: 10 })).toEqual({ total: 0, records: [] })
        }
        for (const record of state.payments) expect(reloaded.payment(record.exchangeNumber)).toBeUndefined()
      }),
      { numRuns: Number(process.env.FC_RUNS ?? 60) },
    )
  })

  it('counts a payment in the successful list once the bank approves it, also after pending approval (99 then 00)', () => {
    const clock = { now: START }
    const state = newState(clock)
    const [merchant] = principals(state)
    const today = mytDay(new Date(START))
    const paid = (status: 'true' | 'false') => state.listPage(merchant!, { fromDay: today, toDay: today, paymentStatus: status, offset: 0, limit: 10 })
    const record = state.addPayment(input(state, 'ORD-B2B1', false, 'B2B1'))
    expect([paid('true').total, paid('false').total]).toEqual([0, 1])
    state.complete(record.exchangeNumber, 'pending')
    expect([paid('true').total, paid('false').total]).toEqual([0, 1])
    const bankReference = record.bank!.transactionId
    expect(state.search(merchant!, 'fpx_ref_number', bankReference).records).toEqual([record])
    state.complete(record.exchangeNumber, 'approve')
    expect([paid('true').total, paid('false').total]).toEqual([1, 0])
    expect(paid('true').records).toEqual([record])
    // The approval keeps the bank's reference: still one match.
    expect(state.search(merchant!, 'fpx_ref_number', bankReference).records).toEqual([record])
    clock.now += DAY_MS
    expect(state.listPage(merchant!, { fromDay: today + 1, toDay: today + 1, paymentStatus: 'all', offset: 0, limit: 10 }).total).toBe(0)
  })
})
