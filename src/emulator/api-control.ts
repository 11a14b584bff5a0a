import { ApiError, invalidParameters, notFound } from './errors.js'
import { type Context, type Reply, type Route, readJson } from './http.js'
import { listRecord } from './records.js'
import type { CompletionOutcome, PaymentRecord } from './state.js'

/**
 * The control API under /__emulator/, for tests: no authentication, because the emulator listens on loopback
 * and holds only made-up money. Its answers carry the signed result fields, so never expose it.
 */
const OUTCOMES: readonly CompletionOutcome[] = ['approve', 'reject', 'cancel', 'pending']

function describe(context: Context, record: PaymentRecord): Record<string, unknown> {
  return {
    ...listRecord(record, context.state.contextOf(record)),
    partner_uid: record.partnerUid,
    callback_url: record.callbackUrl,
    redirect_url: record.redirectUrl,
    cancel_url: record.cancelUrl,
    timeout_url: record.timeoutUrl,
    buyer_bank_code: record.buyerBankCode,
  }
}

function find(context: Context): PaymentRecord {
  const exchangeNumber = context.params.exchange_number ?? ''
  const record = context.state.payment(exchangeNumber)
  if (record === undefined) throw notFound(`no payment with exchange_number ${exchangeNumber}`)
  return record
}

async function complete(context: Context): Promise<Reply> {
  const body = await readJson(context.req)
  const outcome = body.outcome
  if (typeof outcome !== 'string' || !(OUTCOMES as readonly string[]).includes(outcome))
    throw invalidParameters({ outcome: `must be one of ${OUTCOMES.join(', ')}` })
  if (body.bank_code !== undefined && typeof body.bank_code !== 'string') throw invalidParameters({ bank_code: 'must be text' })
  const record = context.state.complete(find(context).exchangeNumber, outcome as CompletionOutcome, body.bank_code as string | undefined)
  return { json: { payment: describe(context, record), result: context.state.resultFields(record) } }
}

function result(context: Context): Reply {
  const record = find(context)
  if (record.bank === null) throw new ApiError(409, 'conflict', 'the payment has no bank result yet')
  return { json: context.state.resultFields(record) }
}

async function setBankStatus(context: Context): Promise<Reply> {
  const body = await readJson(context.req)
  const model = context.params.model === 'b2c' ? 'B2C' : context.params.model === 'b2b1' ? 'B2B1' : undefined
  if (model === undefined) throw notFound('bank lists are b2c and b2b1')
  if (body.status !== 'online' && body.status !== 'offline') throw invalidParameters({ status: 'must be online or offline' })
  const bank = context.state.banks(model).find((candidate) => candidate.code === context.params.code)
  if (bank === undefined) throw notFound(`no ${model} bank with this code`)
  bank.status = body.status
  return { json: bank }
}

export const controlRoutes: Route[] = [
  { method: 'GET', path: '/payments', handler: (context) => ({ json: { payments: context.state.payments.map((p) => describe(context, p)) } }) },
  { method: 'GET', path: '/payments/:exchange_number', handler: (context) => ({ json: describe(context, find(context)) }) },
  { method: 'GET', path: '/payments/:exchange_number/result', handler: result },
  { method: 'POST', path: '/payments/:exchange_number/complete', handler: complete },
  { method: 'POST', path: '/banks/:model/:code', handler: setBankStatus },
  {
    method: 'POST',
    path: '/reset',
    handler: (context) => {
      context.state.reset()
      return { json: { reset: true } }
    },
  },
]
