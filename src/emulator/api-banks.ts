import type { Bank } from './config.js'
import { ApiError, invalidParameters } from './errors.js'
import { basicAuth, type Context, type Reply, type Route } from './http.js'
import type { Model } from './state.js'

/** A bank list object (spec, Resources: Bank list entry). VerifySign is true unless a tester turned it off. */
function bankList(context: Context, model: Model): Reply {
  const status = context.url.searchParams.get('status')
  if (status !== null && status !== 'online' && status !== 'offline')
    throw invalidParameters({ status: 'expected online or offline' })
  const banks = context.state.banks(model).filter((bank: Bank) => status === null || bank.status === status)
  return {
    json: {
      VerifySign: context.state.bankListsVerified,
      category: 'fpx',
      model,
      mode: context.state.setup.mode,
      fpx_bankList: banks.map((bank) => ({
        name: bank.name,
        code: bank.code,
        status_format1: bank.status,
        status_format2: bank.status === 'online',
      })),
    },
  }
}

function partnerOnly(context: Context, model: Model): Reply {
  const principal = basicAuth(context)
  if (principal.kind !== 'partner') throw new ApiError(403, 'not_partner', 'the partner bank lists are only for partner accounts')
  if (model === 'B2B1' && !principal.partner.b2b1)
    throw new ApiError(403, 'b2b1_not_enabled', 'enable the B2B1 module in the API settings to read the B2B1 bank list')
  return bankList(context, model)
}

export const bankRoutes: Route[] = [
  { method: 'GET', path: '/public/v1/banks/b2c', handler: (context) => bankList(context, 'B2C') },
  { method: 'GET', path: '/public/v1/banks/b2b', handler: (context) => bankList(context, 'B2B1') },
  { method: 'GET', path: '/v1/banks/b2c', handler: (context) => partnerOnly(context, 'B2C') },
  { method: 'GET', path: '/v1/banks/b2b1', handler: (context) => partnerOnly(context, 'B2B1') },
]
