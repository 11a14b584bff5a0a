/*
 * Finding payments: by order number, exchange_number or buyer e-mail (the box on every page), and every payment
 * the store has seen by state and creation window, newest first, a page at a time.
 */
import { LIST_STATUSES } from '../contract/book-query.js'
import type { BookedPayment, ListQuery, ListStatus } from '../contract/payment-book.js'
import type { Page } from './layout.js'
import { html, type Html } from './markup.js'
import type { ConsoleSource } from './source.js'
import { age, ringgit, type View } from './view.js'

const STATUS_LABELS: Record<ListStatus, string> = {
  open: 'open (not paid yet)',
  succeeded: 'paid',
  failed: 'failed',
  abandoned: 'abandoned',
  paid_failing: 'paid, handler failing',
}

/** One payment's standing in a list: its book status, and above all a failing handler. */
function badge(payment: BookedPayment): Html {
  if (payment.failures > 0 && payment.lastFailure?.state === 'succeeded') return html`<span class="badge failing">paid, handler failing</span>`
  const tone = payment.status === 'open' && payment.state === 'pending' ? 'pending' : payment.status
  const label = payment.status === 'succeeded' ? 'paid' : payment.status === 'open' && payment.state === 'pending' ? 'pending approval (99)' : payment.status
  return html`<span class="badge ${tone}">${label}</span>${payment.failures > 0 ? html` <span class="badge failing">${payment.lastFailure?.state ?? ''} handler failing</span>` : ''}`
}

export function paymentRows(view: View, payments: readonly BookedPayment[]): Html {
  return html`<table class="payments"><thead><tr><th>Order</th><th>Status</th><th class="num">Amount</th><th>Buyer</th><th>Created (${view.zone})</th><th>Age</th><th>exchange_number</th><th class="num">Lookups</th></tr></thead><tbody>
${payments.length === 0 ? html`<tr><td colspan="8" class="muted">None.</td></tr>` : ''}
${payments.map(
  (payment) => html`<tr data-order="${payment.orderNumber}"><td><a class="mono" href="${view.link('/payment', { order: payment.orderNumber, uid: payment.uid === '' ? undefined : payment.uid })}">${payment.orderNumber}</a>${payment.kind === 'result' ? html` <span class="muted">(from a result)</span>` : ''}</td>
<td>${badge(payment)}</td><td class="num">${payment.kind === 'result' && payment.amountSen === 0 ? '-' : ringgit(payment.amountSen)}</td><td>${payment.buyerName ?? ''}${payment.buyerName !== null && payment.buyerEmail !== null ? html`<br>` : ''}<span class="muted">${payment.buyerEmail ?? ''}</span></td>
<td class="mono">${view.time(payment.createdAt)}</td><td>${age(view.now.getTime() - payment.createdAt.getTime())}</td>
<td class="mono">${payment.exchangeNumber ?? '-'}</td><td class="num">${payment.lookups}</td></tr>`,
)}</tbody></table>`
}

/** The list's filters from the address: status, creation days (at the console's offset), search, page. */
function listFilters(params: URLSearchParams): { status: ListStatus | undefined; from: string; to: string; search: string; cursor: string } {
  const status = params.get('status') ?? ''
  return {
    status: (LIST_STATUSES as readonly string[]).includes(status) ? (status as ListStatus) : undefined,
    from: params.get('from') ?? '',
    to: params.get('to') ?? '',
    search: (params.get('q') ?? '').trim().slice(0, 200),
    cursor: params.get('cursor') ?? '',
  }
}

function day(text: string, offsetMinutes: number, plusDays = 0): Date | undefined {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text)
  if (match === null) return undefined
  const at = Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]) + plusDays) - offsetMinutes * 60_000
  return Number.isFinite(at) ? new Date(at) : undefined
}

function filterForm(view: View, filters: ReturnType<typeof listFilters>): Html {
  const option = (value: string, label: string) => html`<option value="${value}"${value === (filters.status ?? '') ? html` selected` : ''}>${label}</option>`
  return html`<form method="get" action="${view.link('/payments')}" class="filters">
<label>Status<select name="status">${option('', 'any')}${LIST_STATUSES.map((status) => option(status, STATUS_LABELS[status]))}</select></label>
<label>Created from (${view.zone})<input type="date" name="from" value="${filters.from}"></label>
<label>to<input type="date" name="to" value="${filters.to}"></label>
<label>Order number, exchange_number or e-mail<input name="q" value="${filters.search}"></label>
<button type="submit">Show</button></form>`
}

/** The search box's answer when one payment is meant: straight to it. Also finds what the book does not hold. */
async function onlyOne(view: View, source: ConsoleSource, search: string, found: readonly BookedPayment[]): Promise<string | undefined> {
  const [first] = found
  if (found.length === 1 && first !== undefined) return view.link('/payment', { order: first.orderNumber, uid: first.uid === '' ? undefined : first.uid })
  if (found.length > 1) return undefined
  // Not in the book: a payment whose timeline is all there is, or a number only a refused delivery claimed.
  const byExchange = await source.timeline({ exchangeNumber: search }).catch(() => [])
  if (byExchange.length > 0) return view.link('/payment', { exchange: search })
  const byOrder = await source.timeline({ orderNumber: search }).catch(() => [])
  if (byOrder.length > 0) return view.link('/payment', { order: search })
  return undefined
}

export async function paymentsPage(view: View, source: ConsoleSource, params: URLSearchParams): Promise<Page | { location: string }> {
  const filters = listFilters(params)
  const query: ListQuery = {
    ...(filters.status === undefined ? {} : { status: filters.status }),
    ...(filters.search === '' ? {} : { search: filters.search }),
    ...(day(filters.from, view.offsetMinutes) === undefined ? {} : { from: day(filters.from, view.offsetMinutes) }),
    ...(day(filters.to, view.offsetMinutes, 1) === undefined ? {} : { to: day(filters.to, view.offsetMinutes, 1) }),
    ...(filters.cursor === '' ? {} : { cursor: filters.cursor }),
    limit: 50,
  }
  let payments: BookedPayment[] = []
  let next: string | null = null
  let trouble: string | undefined
  try {
    ;({ payments, next } = await source.book.list(query))
  } catch (error) {
    trouble = source.describe(error)
  }
  const searchOnly = filters.search !== '' && filters.status === undefined && filters.from === '' && filters.to === '' && filters.cursor === ''
  if (searchOnly) {
    const location = await onlyOne(view, source, filters.search, payments)
    if (location !== undefined) return { location }
    if (payments.length === 0)
      return {
        title: 'Search',
        section: 'payments',
        status: 404,
        body: html`<h1>Nothing found for <span class="mono">${filters.search}</span></h1><p>No payment the store has seen has this order number, exchange_number or buyer e-mail.</p>${trouble === undefined ? '' : html`<p class="notice bad">The payment book could not be read: ${trouble}</p>`}${filterForm(view, filters)}`,
      }
  }
  const title = filters.search !== '' ? 'Payments found' : filters.status === undefined ? 'Payments, newest first' : `Payments: ${STATUS_LABELS[filters.status]}`
  const nextLink = next === null ? '' : html`<p><a href="${view.link('/payments', { status: filters.status, from: filters.from, to: filters.to, q: filters.search, cursor: next })}" rel="next">Next page →</a></p>`
  const body = html`<h1>${title}</h1>
${filterForm(view, filters)}
${trouble === undefined ? '' : html`<p class="notice bad">The payment book could not be read: ${trouble}</p>`}
${paymentRows(view, payments)}
${nextLink}`
  return { title, section: 'payments', body }
}
