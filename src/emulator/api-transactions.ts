import { ApiError, type FieldErrors, invalidParameters, notFound } from './errors.js'
import { basicAuth, type Context, type Reply, type Route } from './http.js'
import { listRecord, mytDate, statusRecord } from './records.js'
import type { PaymentRecord } from './state.js'

export const DEFAULT_PER_PAGE = 10
export const MAX_PER_PAGE = 100
/** The data search window, counted in calendar days with both bounds included. */
export const WINDOW_DAYS = 90
const DAY_MS = 86_400_000

/** Newest first; among payments created in the same millisecond, the later payment_id first. */
function newestFirst(a: PaymentRecord, b: PaymentRecord): number {
  return b.createdAt.localeCompare(a.createdAt) || b.paymentId - a.paymentId
}

/** Status by order number: the latest attempt, because a buyer may retry an order. */
function statusByOrder(context: Context): Reply {
  const principal = basicAuth(context)
  const orderNumber = context.params.order_number ?? ''
  const record = context.state.visiblePayments(principal).filter((payment) => payment.orderNumber === orderNumber).sort(newestFirst)[0]
  if (record === undefined) throw notFound(`no payment with order_number ${orderNumber}`)
  return { json: statusRecord(record, context.state.contextOf(record)) }
}

function statusByReference(context: Context): Reply {
  const principal = basicAuth(context)
  const reference = context.params.reference ?? ''
  const record = context.state.visiblePayments(principal).find((payment) => payment.merchantReferenceNumber === reference)
  if (record === undefined) throw notFound(`no payment with merchant_reference_number ${reference}`)
  return { json: statusRecord(record, context.state.contextOf(record)) }
}

function positiveInteger(value: string | null, fallback: number): number | undefined {
  if (value === null) return fallback
  return /^\d{1,9}$/.test(value) && Number(value) >= 1 ? Number(value) : undefined
}

/** Day number (days since the epoch) of a real yyyy-mm-dd date, or undefined. */
function dayNumber(value: string): number | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return undefined
  const time = Date.parse(`${value}T00:00:00Z`)
  // Date.parse rolls 2026-02-30 over to March; the round trip catches it.
  if (Number.isNaN(time) || new Date(time).toISOString().slice(0, 10) !== value) return undefined
  return time / DAY_MS
}

interface ListQuery {
  page: number
  perPage: number
  paymentStatus: 'true' | 'false' | 'all'
  /** Inclusive Malaysian calendar days. */
  fromDay: number
  toDay: number
}

function parseListQuery(context: Context): ListQuery {
  const query = context.url.searchParams
  const problems: FieldErrors = {}
  const page = positiveInteger(query.get('page'), 1)
  if (page === undefined) problems.page = 'must be a whole number from 1'
  const perPage = positiveInteger(query.get('per_page'), DEFAULT_PER_PAGE)
  if (perPage === undefined || perPage > MAX_PER_PAGE) problems.per_page = `must be a whole number from 1 to ${MAX_PER_PAGE}`
  const paymentStatus = query.get('payment_status') ?? 'true'
  if (paymentStatus !== 'true' && paymentStatus !== 'false' && paymentStatus !== 'all')
    problems.payment_status = 'must be true, false or all'
  const start = query.get('start_date')
  const end = query.get('end_date')
  const today = dayNumber(mytDate(context.state.now())) as number
  let fromDay = today - (WINDOW_DAYS - 1)
  let toDay = today
  if ((start === null) !== (end === null)) {
    problems[start === null ? 'start_date' : 'end_date'] = 'start_date and end_date must be given together'
  } else if (start !== null && end !== null) {
    const from = dayNumber(start)
    const to = dayNumber(end)
    if (from === undefined) problems.start_date = 'must be a date yyyy-mm-dd'
    if (to === undefined) problems.end_date = 'must be a date yyyy-mm-dd'
    if (from !== undefined && to !== undefined) {
      if (to < from) problems.end_date = 'must not be before start_date'
      else if (to - from + 1 > WINDOW_DAYS) problems.end_date = `the range may cover at most ${WINDOW_DAYS} days, both dates included`
      fromDay = from
      toDay = to
    }
  }
  if (Object.keys(problems).length > 0) throw invalidParameters(problems)
  return { page: page as number, perPage: perPage as number, paymentStatus: paymentStatus as ListQuery['paymentStatus'], fromDay, toDay }
}

function transactionsList(context: Context): Reply {
  const principal = basicAuth(context)
  const query = parseListQuery(context)
  const matching = context.state
    .visiblePayments(principal)
    .filter((payment) => {
      const day = dayNumber(mytDate(new Date(payment.createdAt))) as number
      if (day < query.fromDay || day > query.toDay) return false
      return query.paymentStatus === 'all' || String(payment.paymentStatus) === query.paymentStatus
    })
    .sort(newestFirst)
  const totalPage = Math.ceil(matching.length / query.perPage)
  const offset = (query.page - 1) * query.perPage
  return {
    json: {
      next_page: query.page < totalPage ? query.page + 1 : null,
      current_page: query.page,
      per_page: query.perPage,
      total_page: totalPage,
      prev_page: query.page > 1 ? query.page - 1 : null,
      total_entries: matching.length,
      transactions: matching.slice(offset, offset + query.perPage).map((payment) => listRecord(payment, context.state.contextOf(payment))),
    },
  }
}

const SEARCHABLE: Record<string, (payment: PaymentRecord) => string | null> = {
  // The bank's reference is the FPX transaction id, known once the bank answered.
  fpx_ref_number: (payment) => payment.bank?.transactionId ?? null,
  order_number: (payment) => payment.orderNumber,
  exchange_number: (payment) => payment.exchangeNumber,
}

function transactionsSearch(context: Context): Reply {
  const principal = basicAuth(context)
  const kind = context.url.searchParams.get('search_reference') ?? ''
  const value = context.url.searchParams.get('reference_number') ?? ''
  const problems: FieldErrors = {}
  const read = Object.hasOwn(SEARCHABLE, kind) ? SEARCHABLE[kind] : undefined
  if (read === undefined) problems.search_reference = `must be one of ${Object.keys(SEARCHABLE).join(', ')}`
  if (value === '') problems.reference_number = 'is required'
  if (read === undefined || value === '') throw invalidParameters(problems)
  const found = context.state.visiblePayments(principal).filter((payment) => read(payment) === value).sort(newestFirst)
  return { json: found.map((payment) => listRecord(payment, context.state.contextOf(payment))) }
}

function removed(): Reply {
  throw new ApiError(410, 'endpoint_removed', 'GET /v1/payments/list has been removed; use GET /v1/transactions/list instead')
}

export const transactionRoutes: Route[] = [
  { method: 'GET', path: '/v1/payments/status/merchant_reference_number/:reference', handler: statusByReference },
  { method: 'GET', path: '/v1/payments/status/:order_number', handler: statusByOrder },
  { method: 'GET', path: '/v1/transactions/list', handler: transactionsList },
  { method: 'GET', path: '/v1/transactions/search', handler: transactionsSearch },
  { method: 'GET', path: '/v1/payments/list', handler: removed },
]
