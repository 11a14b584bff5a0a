import type { ClientContext } from './context.js'
import { FpxValidationError } from './errors.js'
import { readOutput, type Transaction, transactionSchema } from './schemas.js'

async function status(context: ClientContext, path: string): Promise<Transaction> {
  const what = `GET ${path}`
  const answer = await context.http.send({ method: 'GET', path, basicAuth: true, retry: true })
  return readOutput(transactionSchema, context.http.json(what, answer), what, answer.status)
}

/**
 * The reference as one path segment. Any text the service could have issued or taken goes (spaces included);
 * only `.` and `..` cannot, because URL parsing resolves them as dot segments even when percent-encoded, and
 * `/status/merchant_reference_number/..` would silently ask for the order "merchant_reference_number".
 */
function reference(value: unknown, field: string, what: string): string {
  const invalid = (problem: string) => new FpxValidationError({ [field]: problem }, { prefix: `${what}: invalid input` })
  if (typeof value !== 'string' || value === '') throw invalid('is required')
  if (value === '.' || value === '..') throw invalid('cannot be sent as a URL path segment (. and .. are resolved away)')
  return encodeURIComponent(value)
}

/** GET /v1/payments/status/:order_number: the latest attempt at that order. Unknown: FpxApiError 404. */
export async function paymentStatus(context: ClientContext, orderNumber: string): Promise<Transaction> {
  return status(context, `/v1/payments/status/${reference(orderNumber, 'order_number', 'paymentStatus')}`)
}

/** GET /v1/payments/status/merchant_reference_number/:ref. */
export async function paymentStatusByReference(context: ClientContext, merchantReferenceNumber: string): Promise<Transaction> {
  const ref = reference(merchantReferenceNumber, 'merchant_reference_number', 'paymentStatusByReference')
  return status(context, `/v1/payments/status/merchant_reference_number/${ref}`)
}
