/**
 * Issue 34's attack classes, built by renaming only from real emulator payments, in the body and in the query
 * string, in both arrival orders: the confirmed default never runs a handler for anything but the genuine result's
 * payment as the API knows it, exactly once; signature only never runs one with another order, amount, exchange
 * number or state, and refuses what it cannot tell apart with needs_confirmation.
 */
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { toSen, type VerifiedPayment, verifyDelivery } from '../../src/index.js'
import { formBody, renamed } from '../receiver/rearrange.js'
import { ATTACKS, ODD_BUT_GENUINE } from './attacks.js'
import { DEMO, delivery, FORM, type Genuine, type Outcome, recorded, type Service, service } from './genuine.js'

const STATE: Record<Outcome, string> = { approve: 'succeeded', reject: 'failed', cancel: 'failed', pending: 'pending' }
const NUM_RUNS = Number(process.env.FC_RUNS ?? 40)

let svc: Service
beforeAll(async () => {
  svc = await service()
})
afterAll(async () => {
  await svc.stop()
})

const modes = {
  confirmed: () => ({ environment: svc.environment, credentials: DEMO }),
  'signature only': () => ({ signatureOnly: true, checksumToken: DEMO.checksumToken }),
} as const

/** What a handler may see of the genuine result: its payment, order, amount and state, nothing else. */
function expectGenuine(events: { payment: { exchangeNumber: string; orderNumber: string; state: string; amountSen?: number } }[], genuine: Genuine, outcome: Outcome): void {
  for (const event of events)
    expect(event.payment).toMatchObject({
      exchangeNumber: genuine.exchangeNumber,
      orderNumber: genuine.orderNumber,
      state: STATE[outcome],
      amountSen: toSen(genuine.fields.transaction_amount as string),
    })
}

/** Whether a copy, read by its names, is about another payment, order, amount or state than the genuine result. */
function differs(copy: VerifiedPayment, genuine: Genuine): boolean {
  const amount = genuine.fields.transaction_amount
  return (
    copy.exchangeNumber !== genuine.exchangeNumber ||
    copy.orderNumber !== genuine.orderNumber ||
    copy.text('transaction_amount') !== amount ||
    copy.text('payment_status') !== genuine.fields.payment_status ||
    copy.text('fpx_debit_auth_code') !== genuine.fields.fpx_debit_auth_code
  )
}

describe.each(Object.keys(modes) as (keyof typeof modes)[])('%s', (mode) => {
  describe.each(ATTACKS)('$name', (attack) => {
    it.each(['body', 'query'] as const)('in the %s, the copies before the genuine result and after it', async (transport) => {
      for (const copiesFirst of [true, false]) {
        // The buyer's second, expensive order: a real order the copy would like to see paid.
        const expensive = await svc.pay('reject', { transaction_amount: '900.00' })
        const genuine = await svc.pay(attack.outcome, attack.buyer(expensive.orderNumber))
        const copies = attack.copies(genuine)
        expect(copies.length, 'the attack could be built from this payment').toBeGreaterThan(0)
        // Real attacks: every copy carries the genuine checksum, and some copy names another payment, order, amount
        // or state than the genuine result, for a receiver that believed names.
        const read = await Promise.all(copies.map((copy) => verifyDelivery({ body: copy, contentType: FORM }, { checksumToken: DEMO.checksumToken }).catch(() => undefined)))
        expect(read.filter((copy) => copy !== undefined).length).toBeGreaterThan(0)
        expect(read.some((copy) => copy !== undefined && differs(copy, genuine))).toBe(true)
        const { receiver, events } = recorded(modes[mode]())
        const sendCopies = async () => Promise.all(copies.map((copy) => receiver.handle(delivery(copy, transport))))
        const sendGenuine = () => receiver.handle(delivery(genuine.body, transport))
        const copyAnswers = copiesFirst ? await sendCopies() : []
        const answer = await sendGenuine()
        if (!copiesFirst) copyAnswers.push(...(await sendCopies()))
        expectGenuine(events, genuine, attack.outcome)
        for (const copyAnswer of copyAnswers) expect(copyAnswer.status, JSON.stringify(copyAnswer.error)).not.toBe(500)
        if (mode === 'confirmed') {
          // Handled exactly once, whichever came first, and the genuine result is never refused.
          expect(events).toHaveLength(1)
          expect(answer.status).toBe(200)
          // Each copy as the buyer's redirect, the state handled: a page that shows a payment shows the API's record.
          for (const copy of copies) {
            const page = await receiver.handle(delivery(copy, transport, 'redirect'))
            if (page.status === 200 && page.payment !== undefined)
              expectGenuine([{ payment: page.payment as unknown as { exchangeNumber: string; orderNumber: string; state: string; amountSen?: number } }], genuine, attack.outcome)
          }
        } else {
          expect(events.length).toBeLessThanOrEqual(1)
          // A copy is refused (needs_confirmation when its values are of the right kinds, else for what is wrong with
          // them), or it is the genuine result under names that change nothing the receiver acts on.
          for (const copyAnswer of copyAnswers) expect([200, 400, 401]).toContain(copyAnswer.status)
        }
      }
    })
  })
})

describe('a redirect of a state handled already, whose names a renaming could change', () => {
  it('handles what the API shows: a B2B1 approval not delivered yet runs its handlers before the page says paid', async () => {
    // A buyer name holding `|`: a genuine result that a renaming could read otherwise.
    const pending = await svc.pay('pending', { model: 'B2B1', buyer_name: 'Siti|Aminah' })
    const { receiver, events } = recorded(modes.confirmed())
    expect(await receiver.handle(delivery(pending.body, 'body'))).toMatchObject({ status: 200, outcome: 'processed' })
    await svc.approve(pending)
    // The 99's redirect again: the API now shows the approval, which no delivery has brought yet.
    const page = await receiver.handle(delivery(pending.body, 'body', 'redirect'))
    expect(page).toMatchObject({ status: 200, outcome: 'processed', payment: { state: 'succeeded', exchangeNumber: pending.exchangeNumber } })
    expect(events.map((event) => event.state)).toEqual(['pending', 'succeeded'])
  })
})

describe('genuine results whose values merely look odd', () => {
  it.each(ODD_BUT_GENUINE)('$name: confirmed, never refused; signature only, refused or handled as they are', async ({ outcome, buyer }) => {
    const genuine = await svc.pay(outcome, buyer)
    for (const transport of ['body', 'query'] as const) {
      const confirmed = recorded(modes.confirmed())
      const answer = await confirmed.receiver.handle(delivery(genuine.body, transport))
      expect([answer.status, answer.outcome]).toEqual([200, 'processed'])
      expectGenuine(confirmed.events, genuine, outcome)
      expect(confirmed.events).toHaveLength(1)
      const unconfirmed = recorded(modes['signature only']())
      const unconfirmedAnswer = await unconfirmed.receiver.handle(delivery(genuine.body, transport))
      expect([200, 400]).toContain(unconfirmedAnswer.status)
      if (unconfirmedAnswer.status === 400) expect(unconfirmedAnswer.error?.code).toBe('needs_confirmation')
      expectGenuine(unconfirmed.events, genuine, outcome)
    }
  })
})

describe('random rearrangements of genuine results', () => {
  it('never change what a handler sees in the confirmed default, and never lose the genuine result', async () => {
    const outcomes: Outcome[] = ['approve', 'reject', 'pending']
    const payments = await Promise.all(outcomes.map((outcome) => svc.pay(outcome, outcome === 'pending' ? { model: 'B2B1', buyer_name: '99' } : { buyer_name: 'true' })))
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(0, 1, 2),
        fc.array(fc.tuple(fc.nat(40), fc.constantFrom('exchange_number', 'order_number', 'payment_status', 'fpx_debit_auth_code', 'transaction_amount', 'uid')), { minLength: 1, maxLength: 3 }),
        fc.boolean(),
        async (which, moves, copiesFirst) => {
          const genuine = payments[which] as Genuine
          const fixed = new Map<number, string>()
          for (const [at, name] of moves) if (at < genuine.pairs.length && ![...fixed.values()].includes(name)) fixed.set(at, name)
          const pairs = renamed(genuine.pairs, fixed)
          const { receiver, events } = recorded(modes.confirmed())
          const copy = pairs === undefined ? undefined : formBody(pairs, genuine.checksum)
          if (copy !== undefined && copiesFirst) await receiver.handle(delivery(copy, 'body'))
          const answer = await receiver.handle(delivery(genuine.body, 'body'))
          if (copy !== undefined && !copiesFirst) await receiver.handle(delivery(copy, 'body'))
          expect(answer.status).toBe(200)
          expect(events).toHaveLength(1)
          expectGenuine(events, genuine, outcomes[which] as Outcome)
        },
      ),
      { numRuns: NUM_RUNS },
    )
  })
})
