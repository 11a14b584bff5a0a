import { ApiError, type FieldErrors, invalidParameters, notFound } from './errors.js'
import { basicAuth, type Context, type Reply, type Route } from './http.js'
import { listRecord, mytDate, statusRecord } from './records.js'
import { MAX_SEARCH_RESULTS } from './state.js'

export const DEFAULT_PER_PAGE = 10
export const MAX_PER_PAGE = 100
/** The data search window, counted in calendar days with both bounds included. */
export const WINDOW_DAYS = 90
const DAY_MS = 86_400_000

/** Status by order number: the latest attempt, because a buyer may retry an order. */
function statusByOrder(context: Context): Reply {
  const principal = basicAuth(context)
  const orderNumber = context.params.order_number ?? ''
  const record = context.state.latestAttempt(principal, orderNumber)
  if (record === undefined) throw notFound(`no payment with order_number ${orderNumber}`)
  return { json: statusRecord(record, context.state.contextOf(record)) }
}

function statusByReference(context: Context): Reply {
  const principal = basicAuth(context)
  const reference = context.params.reference ?? ''
  const found = context.state.paymentByReference(reference)
  const record = found !== undefined && context.state.canRead(principal, found) ? found : undefined
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
  /** Inclusive Malaysian calendar days, at most WINDOW_DAYS of them. */
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
  const offset = (query.page - 1) * query.perPage
  const { total, records } = context.state.listPage(principal, { ...query, offset, limit: query.perPage })
  const totalPage = Math.ceil(total / query.perPage)
  return {
    json: {
      next_page: query.page < totalPage ? query.page + 1 : null,
      current_page: query.page,
      per_page: query.perPage,
      total_page: totalPage,
      prev_page: query.page > 1 ? query.page - 1 : null,
      total_entries: total,
      transactions: records.map((payment) => listRecord(payment, context.state.contextOf(payment))),
    },
  }
}

/** The bank's reference (fpx_ref_number) is the FPX transaction id, known once the bank answered. */
const SEARCHABLE = ['fpx_ref_number', 'order_number', 'exchange_number'] as const
type SearchReference = (typeof SEARCHABLE)[number]

function transactionsSearch(context: Context): Reply {
  const principal = basicAuth(context)
  const kind = context.url.searchParams.get('search_reference') ?? ''
  const value = context.url.searchParams.get('reference_number') ?? ''
  const problems: FieldErrors = {}
  const known = (SEARCHABLE as readonly string[]).includes(kind)
  if (!known) problems.search_reference = `must be one of ${SEARCHABLE.join(', ')}`
  if (value === '') problems.reference_number = 'is required'
  if (!known || value === '') throw invalidParameters(problems)
  const found = context.state.search(principal, kind as SearchReference, value)
  // The spec's answer is a bare array, with no room to say more are left: the log and warnings say it instead.
  if (found.total > found.records.length)
    context.state.warnings.add('request', 'GET /v1/transactions/search', null, [
      `${found.total} payments have ${kind} ${JSON.stringify(value)}; answered the newest ${MAX_SEARCH_RESULTS}`,
    ])
  return { json: found.records.map((payment) => listRecord(payment, context.state.contextOf(payment))) }
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
