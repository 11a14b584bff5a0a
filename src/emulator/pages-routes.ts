import type { Bank } from './config.js'
import { type CallbackDeliverer, completePayment } from './delivery.js'
import { ApiError, notFound } from './errors.js'
import { type Context, type Handler, type Reply, type Route, readForm } from './http.js'
import { bankPagePath, bankSelectionPage, messagePage, redirectLostPage, redirectPage } from './pages.js'
import { approvalPage, bankLoginPage, decisionPage, simulatedBankPage } from './pages-bank.js'
import type { CompletionOutcome, PaymentRecord } from './state.js'

/** The spec's bank-selection time-out; tests shorten it with the emulator's bankPageTimeoutMs option. */
export const BANK_PAGE_TIMEOUT_MS = 3 * 60 * 1000

export interface HostedPageServices {
  readonly deliverer: CallbackDeliverer
  readonly bankPageTimeoutMs: number
}

/** A buyer's browser gets an HTML page for every refusal, not the API's JSON. */
function htmlErrors(handler: Handler): Handler {
  return async (context) => {
    try {
      return await handler(context)
    } catch (error) {
      if (!(error instanceof ApiError)) throw error
      const detail = error.fields === undefined ? error.message : `${error.message} (${Object.values(error.fields).join('; ')})`
      return { status: error.status, html: messagePage('This payment cannot go on', detail, error.status), headers: error.headers }
    }
  }
}

function seeOther(location: string): Reply {
  return { status: 303, html: '', headers: { location } }
}

function paymentOf(context: Context): PaymentRecord {
  const record = context.state.payment(context.params.exchange_number ?? '')
  if (record === undefined) throw notFound('no such payment')
  return record
}

/** The bank pages serve only a payment the bank has not answered yet. */
function unfinished(context: Context): PaymentRecord {
  const record = paymentOf(context)
  if (record.bank !== null) throw new ApiError(409, 'conflict', 'this payment already has its result; start a new payment to pay again')
  return record
}

function pageUrl(context: Context, record: PaymentRecord, suffix = ''): string {
  return `${context.state.baseUrl}${bankPagePath(record.exchangeNumber)}${suffix}`
}

function onlineBank(context: Context, record: PaymentRecord, code: string | undefined): Bank {
  const bank = context.state.banks(record.model).find((candidate) => candidate.code === code)
  if (bank === undefined) throw new ApiError(422, 'invalid_parameters', 'choose a bank from the list', { buyer_bank_code: 'not a bank of the list' })
  if (bank.status !== 'online') throw new ApiError(422, 'invalid_parameters', 'the bank is offline', { buyer_bank_code: 'the bank is offline' })
  return bank
}

function payeeOf(context: Context, record: PaymentRecord): string {
  return context.state.contextOf(record).merchant.name
}

function loginPage(context: Context, record: PaymentRecord, bank: Bank, typed?: { userId: string; problem: string }): string {
  const options = { payee: payeeOf(context, record), action: pageUrl(context, record, '/login'), authorizeAction: pageUrl(context, record, '/authorize') }
  return bankLoginPage(record, bank, typed === undefined ? options : { ...options, ...typed })
}

function remainingMs(context: Context, record: PaymentRecord, timeoutMs: number): number {
  return Math.max(0, Date.parse(record.createdAt) + timeoutMs - context.state.now().getTime())
}

export function hostedPageRoutes(services: HostedPageServices): Route[] {
  const { deliverer, bankPageTimeoutMs } = services

  const selection: Handler = (context) => {
    const record = unfinished(context)
    // A bank chosen at the merchant (buyer_bank_code) skips the selection, as it does at the real service.
    if (record.buyerBankCode !== null) return { html: loginPage(context, record, onlineBank(context, record, record.buyerBankCode)) }
    const timeout =
      record.timeoutUrl === null ? null : { remainingMs: remainingMs(context, record, bankPageTimeoutMs), url: pageUrl(context, record, '/timeout') }
    const options = { action: pageUrl(context, record, '/bank'), cancelAction: record.cancelUrl === null ? null : pageUrl(context, record, '/cancel'), timeout }
    return { html: bankSelectionPage(record, payeeOf(context, record), context.state.banks(record.model), options) }
  }

  const chooseBank: Handler = async (context) => {
    const record = unfinished(context)
    const form = await readForm(context.req)
    // The page timed out while the buyer hesitated: the late choice goes where the time-out would have.
    if (record.timeoutUrl !== null && remainingMs(context, record, bankPageTimeoutMs) === 0) return seeOther(record.timeoutUrl)
    const bank = onlineBank(context, record, form.fields.get('buyer_bank_code'))
    return { html: loginPage(context, record, bank) }
  }

  // Any user ID and password log in (nothing is kept); an empty user ID is shown the log-in page again.
  const login: Handler = async (context) => {
    const record = unfinished(context)
    const form = await readForm(context.req)
    const bank = onlineBank(context, record, form.fields.get('bank_code'))
    const userId = (form.fields.get('user_id') ?? '').trim()
    if (userId === '' || (form.fields.get('password') ?? '') === '') {
      const problem = userId === '' ? 'Enter your user ID.' : 'Enter your password.'
      return { status: 422, html: loginPage(context, record, bank, { userId, problem }) }
    }
    return { html: simulatedBankPage(record, bank, payeeOf(context, record), userId, pageUrl(context, record, '/authorize')) }
  }

  const authorize: Handler = async (context) => {
    const record = unfinished(context)
    const form = await readForm(context.req)
    const outcome = form.fields.get('outcome') ?? ''
    if (!['approve', 'reject', 'cancel', 'pending'].includes(outcome))
      throw new ApiError(422, 'invalid_parameters', 'choose an answer', { outcome: 'must be approve, reject, cancel or pending' })
    const bank = onlineBank(context, record, form.fields.get('bank_code'))
    const { fields } = completePayment(context.state, deliverer, record.exchangeNumber, outcome as CompletionOutcome, bank.code)
    if (deliverer.faults.redirectLost || deliverer.loses(record)) return { html: redirectLostPage(record) }
    // With no redirect_url the buyer is shown the service's own status page (spec, Events).
    if (record.redirectUrl === null) return seeOther(String(fields.status_url))
    return { html: redirectPage(record, payeeOf(context, record), record.redirectUrl, fields) }
  }

  const leave = (target: 'cancelUrl' | 'timeoutUrl'): Handler => (context) => {
    const record = unfinished(context)
    const url = record[target]
    if (url === null) throw notFound(target === 'cancelUrl' ? 'this payment has no cancel_url' : 'this payment has no timeout_url')
    return seeOther(url)
  }

  const approval: Handler = (context) => {
    const record = paymentOf(context)
    if (record.bank?.debitAuthCode !== '99') throw new ApiError(409, 'conflict', 'this payment is not pending corporate approval')
    return { html: approvalPage(record, payeeOf(context, record), pageUrl(context, record, '/approval')) }
  }

  const decide: Handler = async (context) => {
    const record = paymentOf(context)
    const decision = (await readForm(context.req)).fields.get('decision')
    if (decision !== 'approve' && decision !== 'reject')
      throw new ApiError(422, 'invalid_parameters', 'approve or reject', { decision: 'must be approve or reject' })
    const { record: done } = completePayment(context.state, deliverer, record.exchangeNumber, decision)
    return { html: decisionPage(done, decision) }
  }

  const routes: Route[] = [
    { method: 'GET', path: '/pay/:exchange_number', handler: selection },
    { method: 'POST', path: '/pay/:exchange_number/bank', handler: chooseBank },
    { method: 'POST', path: '/pay/:exchange_number/login', handler: login },
    { method: 'POST', path: '/pay/:exchange_number/authorize', handler: authorize },
    { method: 'POST', path: '/pay/:exchange_number/cancel', handler: leave('cancelUrl') },
    { method: 'GET', path: '/pay/:exchange_number/timeout', handler: leave('timeoutUrl') },
    { method: 'GET', path: '/pay/:exchange_number/approval', handler: approval },
    { method: 'POST', path: '/pay/:exchange_number/approval', handler: decide },
  ]
  return routes.map((route) => ({ ...route, handler: htmlErrors(route.handler) }))
}
