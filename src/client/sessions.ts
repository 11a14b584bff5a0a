import type { ClientContext } from './context.js'
import { formFields } from './form-fields.js'
import { type PaymentSession, readOutput, type SessionInput, sessionInputSchema, sessionSchema, validate } from './schemas.js'

/**
 * POST /apis/payments (beta): a hosted payment form address. With `currency: 'USD'` the amount is read in USD
 * and `data.transaction_amount` holds the converted MYR amount. Never retried: it creates a session.
 */
export async function createPaymentSession(context: ClientContext, input: SessionInput): Promise<PaymentSession> {
  const valid = validate(sessionInputSchema, input, 'createPaymentSession')
  const form = formFields(valid)
  if (form.partner_uid === undefined && context.config.partnerUid !== undefined) form.partner_uid = context.config.partnerUid
  const what = 'POST /apis/payments'
  const answer = await context.http.send({ method: 'POST', path: '/apis/payments', form, basicAuth: true, retry: false })
  return readOutput(sessionSchema, context.http.json(what, answer), what, answer.status)
}
