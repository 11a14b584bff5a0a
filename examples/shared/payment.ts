/**
 * How a checkout creates the payment at the service. The shop's server creates it with `createPayment` and sends
 * the buyer's browser to the address the service answered: the API UID and Auth Token stay on the server, as they
 * must in production (with them anyone can read the merchant's whole transaction list). The browser form is kept
 * for the demo and the tests that post it themselves, and says that it exposes the Auth Token.
 */
import { type FpxClient, type PaymentInput } from 'fpx-collect/client'
import { type Page, paymentNotStartedPage, paymentRedirectPage, toPaymentPage } from './pages.js'

/**
 * 'server': createPayment, then a 303 to its nextUrl. 'browser-form': the signed request as a form the buyer's
 * browser posts, with the Auth Token in it.
 */
export type PaymentCreation = 'server' | 'browser-form'

export const PAYMENT_CREATIONS: readonly PaymentCreation[] = ['server', 'browser-form']

/** The page that takes the buyer to the service, or says that the payment did not start (and `failed` hears why). */
export async function startPayment(
  client: FpxClient,
  creation: PaymentCreation,
  request: PaymentInput,
  failed: (why: string) => void,
): Promise<Page> {
  if (creation === 'browser-form') return paymentRedirectPage(client.buildPaymentForm(request, { exposeAuthToken: true }))
  try {
    const created = await client.createPayment(request)
    return toPaymentPage(created.nextUrl, request.order_number)
  } catch (error) {
    // The client's errors carry no credential, so the message may be logged as it is. After a time-out the
    // payment may exist all the same: the order stays open, and reconciliation finds the payment if it does.
    failed(`the payment could not be started: ${error instanceof Error ? error.message : String(error)}`)
    return paymentNotStartedPage(request.order_number)
  }
}
