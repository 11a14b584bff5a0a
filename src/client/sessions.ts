import type { CreationOptions } from './booking.js'
import type { ClientContext } from './context.js'
import { formFields } from './form-fields.js'
import { type PaymentSession, readOutput, type SessionInput, sessionInputSchema, sessionSchema, validate } from './schemas.js'

/**
 * POST /apis/payments (beta): a hosted payment form address. With `currency: 'USD'` the amount is read in USD
 * and `data.transaction_amount` holds the converted MYR amount. Never retried: it creates a session.
 */
export async function createPaymentSession(context: ClientContext, input: SessionInput, options?: CreationOptions): Promise<PaymentSession> {
  const attached = context.booking.attachment(options)
  const valid = validate(sessionInputSchema, input, 'createPaymentSession')
  const form = formFields(valid)
  if (form.partner_uid === undefined && context.config.partnerUid !== undefined) form.partner_uid = context.config.partnerUid
  const what = 'POST /apis/payments'
  const answer = await context.http.send({ method: 'POST', path: '/apis/payments', form, basicAuth: true, retry: false })
  const session = readOutput(sessionSchema, context.http.json(what, answer), what, answer.status)
  // The session's own order number (generated when none was given) and its amount in MYR, as results carry them.
  await context.booking.recordQuietly('session', session.data.order_number, session.data.transaction_amount, null, attached, form)
  return session
}
