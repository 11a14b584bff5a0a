/**
 * Issue 34's attack classes over real HTTP on each adapter, against the confirmed default: renamed copies of real
 * emulator payments, in the body and in the query string, before and after the genuine result, on the callback and
 * on the redirect route. The handler runs once, with the API's record of the genuine payment.
 */
import { afterAll, beforeAll, expect, it } from 'vitest'
import { createReceiver, type PaymentEvent, toSen } from '../../src/index.js'
import { ATTACKS } from '../security/attacks.js'
import { DEMO, type Service, service } from '../security/genuine.js'
import { FORM, type Open, post } from './harness.js'

const STATES = { approve: 'succeeded', reject: 'failed', cancel: 'failed', pending: 'pending' } as const

export function confirmedAttackContract(open: Open): void {
  let svc: Service
  beforeAll(async () => {
    svc = await service()
  })
  afterAll(async () => {
    await svc.stop()
  })

  it.each(ATTACKS)('confirmed: $name, on either route, in the body or the query, in either order', async (attack) => {
    for (const [transport, copiesFirst] of [['body', true], ['query', false], ['body', false], ['query', true]] as const) {
      const expensive = await svc.pay('reject', { transaction_amount: '900.00' })
      const genuine = await svc.pay(attack.outcome, attack.buyer(expensive.orderNumber))
      const receiver = createReceiver({ environment: svc.environment, credentials: DEMO, logger: false })
      const runs: PaymentEvent[] = []
      receiver.onAny((event) => void runs.push(event))
      const app = await open(receiver, { successUrl: '/paid', failureUrl: '/failed', pendingUrl: '/pending' })
      try {
        const send = (body: string, route: string) => (transport === 'body' ? post(app.url, route, { body, contentType: FORM }) : post(app.url, `${route}?${body}`))
        const copies = async () => {
          // Refused, or (a copy naming a payment the API does not know) answered 503 so that it would come back.
          for (const [i, copy] of attack.copies(genuine).entries()) expect((await send(copy, i % 2 === 0 ? '/fpx/callback' : '/fpx/redirect')).status).not.toBe(500)
        }
        if (copiesFirst) await copies()
        const callback = await send(genuine.body, '/fpx/callback')
        const redirect = await send(genuine.body, '/fpx/redirect')
        if (!copiesFirst) await copies()
        expect(callback.status).toBe(200)
        expect(redirect.status).toBe(303)
        expect(runs).toHaveLength(1)
        expect(runs[0]!.payment).toMatchObject({
          exchangeNumber: genuine.exchangeNumber,
          orderNumber: genuine.orderNumber,
          state: STATES[attack.outcome],
          amountSen: toSen(genuine.fields.transaction_amount as string),
        })
      } finally {
        await app.close()
      }
    }
  })
}
