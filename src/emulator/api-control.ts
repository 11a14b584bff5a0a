import { createControlPayment } from './api-control-create.js'
import { type CallbackDeliverer, type CallbackDelivery, completePayment, deliveryJson } from './delivery.js'
import { ApiError, invalidParameters, notFound } from './errors.js'
import { faultsJson, parseFaults } from './faults.js'
import { type Context, type Handler, type Reply, type Route, readJson, requireJsonType } from './http.js'
import { bankPagePath } from './pages.js'
import { pageOf, readPage } from './paging.js'
import { listRecord } from './records.js'
import type { CompletionOutcome, PaymentRecord } from './state.js'
import { warningJson } from './warnings.js'

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
    // Where a test (or a browser) starts the hosted journey for this payment.
    payment_page_url: `${context.state.baseUrl}${bankPagePath(record.exchangeNumber)}`,
    // What was tolerated for this payment outside strict mode (docs/emulator.md).
    warnings: context.state.warnings.list(record.exchangeNumber).map((warning) => warning.message),
  }
}

function find(context: Context): PaymentRecord {
  const exchangeNumber = context.params.exchange_number ?? ''
  const record = context.state.payment(exchangeNumber)
  if (record === undefined) throw notFound(`no payment with exchange_number ${exchangeNumber}`)
  return record
}

/**
 * Every POST changes the emulator's state, so it must not be one a page of another site can make the
 * developer's browser send (a form posted to http://127.0.0.1:4010/__emulator/reset needs no preflight). A form
 * can only send form-encoded, multipart or text/plain bodies: application/json from another origin needs a CORS
 * preflight, which the control API never grants. And a browser names the page's origin, which must be the emulator's own.
 */
function fromProgramsOnly(handler: Handler): Handler {
  return (context) => {
    const origin = context.req.headers.origin
    if (origin !== undefined && origin !== new URL(context.state.baseUrl).origin)
      throw new ApiError(403, 'forbidden_origin', "the control API takes no requests from another origin's pages")
    requireJsonType(context.req)
    return handler(context)
  }
}

function deliveryOf(delivery: CallbackDelivery | undefined): Record<string, unknown> | null {
  return delivery === undefined ? null : deliveryJson(delivery)
}

/** Completing records the bank's answer and sends the callback, as the bank page does; the redirect needs a browser. */
async function complete(context: Context, deliverer: CallbackDeliverer): Promise<Reply> {
  const body = await readJson(context.req)
  const outcome = body.outcome
  if (typeof outcome !== 'string' || !(OUTCOMES as readonly string[]).includes(outcome))
    throw invalidParameters({ outcome: `must be one of ${OUTCOMES.join(', ')}` })
  if (body.bank_code !== undefined && typeof body.bank_code !== 'string') throw invalidParameters({ bank_code: 'must be text' })
  const done = completePayment(context.state, deliverer, find(context).exchangeNumber, outcome as CompletionOutcome, body.bank_code as string | undefined)
  return { json: { payment: describe(context, done.record), result: done.fields, callback: deliveryOf(done.callback) } }
}

/** The corporate approver approves a B2B1 payment pending approval (99 → 00). */
function approve(context: Context, deliverer: CallbackDeliverer): Reply {
  const record = find(context)
  if (record.bank?.debitAuthCode !== '99') throw new ApiError(409, 'conflict', 'the payment is not pending corporate approval')
  const done = completePayment(context.state, deliverer, record.exchangeNumber, 'approve')
  return { json: { payment: describe(context, done.record), result: done.fields, callback: deliveryOf(done.callback) } }
}

/** Posts the current result to callback_url again, as a fresh delivery with its own attempts. */
function redeliver(context: Context, deliverer: CallbackDeliverer): Reply {
  const record = find(context)
  if (record.bank === null) throw new ApiError(409, 'conflict', 'the payment has no bank result yet')
  const delivery = deliverer.send(record, context.state.resultFields(record), 'redelivery')
  if (delivery === undefined) throw new ApiError(409, 'conflict', 'the payment has no callback_url')
  return { status: 202, json: deliveryJson(delivery) }
}

function deliveries(context: Context, deliverer: CallbackDeliverer): Reply {
  const exchangeNumber = context.url.searchParams.get('exchange_number')
  const chosen = exchangeNumber === null ? deliverer.deliveries : deliverer.of(exchangeNumber)
  return { json: pageOf('deliveries', chosen, readPage(context), deliveryJson) }
}

function delivery(context: Context, deliverer: CallbackDeliverer): Reply {
  const found = deliverer.find(context.params.id ?? '')
  if (found === undefined) throw notFound('no delivery with this id')
  return { json: deliveryJson(found) }
}

async function setFaults(context: Context, deliverer: CallbackDeliverer): Promise<Reply> {
  deliverer.faults = parseFaults(await readJson(context.req))
  return { json: faultsJson(deliverer.faults) }
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

/** `{ "verify_sign": false }` makes every bank list say VerifySign false, until set back or reset. */
async function setVerifySign(context: Context): Promise<Reply> {
  const body = await readJson(context.req)
  if (typeof body.verify_sign !== 'boolean') throw invalidParameters({ verify_sign: 'must be true or false' })
  context.state.bankListsVerified = body.verify_sign
  return { json: { verify_sign: context.state.bankListsVerified } }
}

export function controlRoutes(deliverer: CallbackDeliverer): Route[] {
  const routes: Route[] = [
    { method: 'GET', path: '/payments', handler: (context) => ({ json: pageOf('payments', context.state.payments, readPage(context), (p) => describe(context, p)) }) },
    {
      method: 'POST',
      path: '/payments',
      handler: async (context) => ({ status: 201, json: describe(context, createControlPayment(context, await readJson(context.req))) }),
    },
    { method: 'GET', path: '/payments/:exchange_number', handler: (context) => ({ json: describe(context, find(context)) }) },
    { method: 'GET', path: '/payments/:exchange_number/result', handler: result },
    { method: 'POST', path: '/payments/:exchange_number/complete', handler: (context) => complete(context, deliverer) },
    { method: 'POST', path: '/payments/:exchange_number/approve', handler: (context) => approve(context, deliverer) },
    { method: 'POST', path: '/payments/:exchange_number/redeliver', handler: (context) => redeliver(context, deliverer) },
    { method: 'GET', path: '/deliveries', handler: (context) => deliveries(context, deliverer) },
    { method: 'GET', path: '/deliveries/:id', handler: (context) => delivery(context, deliverer) },
    {
      method: 'GET',
      path: '/warnings',
      handler: (context) => ({
        json: { strict: context.state.strict, warnings: context.state.warnings.list(context.url.searchParams.get('exchange_number')).map(warningJson) },
      }),
    },
    { method: 'GET', path: '/faults', handler: () => ({ json: faultsJson(deliverer.faults) }) },
    { method: 'POST', path: '/faults', handler: (context) => setFaults(context, deliverer) },
    { method: 'POST', path: '/banks/:model/:code', handler: setBankStatus },
    { method: 'POST', path: '/bank-lists/verify-sign', handler: setVerifySign },
    {
      method: 'POST',
      path: '/reset',
      handler: (context) => {
        // Pending retries die with the payments they were for; faults are cleared with them.
        deliverer.reset()
        context.state.reset()
        return { json: { reset: true } }
      },
    },
  ]
  return routes.map((route) => (route.method === 'POST' ? { ...route, handler: fromProgramsOnly(route.handler) } : route))
}
