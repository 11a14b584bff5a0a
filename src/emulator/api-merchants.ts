import { timingSafeEqual } from 'node:crypto'
import { ApiError } from './errors.js'
import { basicPrincipal, type Context, type Reply, type Route, readForm } from './http.js'

/**
 * One message for every failure, word for word the service's own (its documentation's example answer, see
 * docs/emulator.md): nothing tells which of the three secrets was wrong.
 */
export const INVALID_CREDENTIALS = 'Unauthorized. Invalid or expired token.'

function invalid(): ApiError {
  return new ApiError(401, 'unauthorized', INVALID_CREDENTIALS, undefined, { 'www-authenticate': 'Basic realm="api", charset="UTF-8"' })
}

async function validate(context: Context): Promise<Reply> {
  const principal = basicPrincipal(context)
  if (principal === undefined) throw invalid()
  const given = Buffer.from((await readForm(context.req)).fields.get('checksum_token') ?? '')
  const expected = Buffer.from(principal.credential.checksumToken)
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid()
  const account = principal.kind === 'merchant' ? principal.merchant : principal.partner
  return { json: { credential: true, api_name: principal.credential.name, merchant_name: account.name } }
}

export const merchantRoutes: Route[] = [{ method: 'POST', path: '/v1/merchants/validate', handler: validate }]
