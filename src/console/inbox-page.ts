/*
 * The inbox as an operator works it: the dead letters (results whose handlers failed on every attempt), each
 * with its last error and a retry, and a retry of all of them that match a filter once the cause is fixed.
 */
import { PAYMENT_STATES, type PaymentState } from '../core/payment.js'
import type { InboxItem, InboxStatus } from '../contract/inbox-queue.js'
import type { Page } from './layout.js'
import { html, type Html } from './markup.js'
import type { ConsoleInbox, ConsoleSource } from './source.js'
import type { View } from './view.js'

/** Which entries a listing (and a retry of all) takes. */
export interface InboxFilter {
  readonly status: InboxStatus
  readonly state: PaymentState | undefined
  readonly orderNumber: string | undefined
  /** Text the last error contains (case-insensitive). */
  readonly error: string | undefined
}

/** The most entries one listing reads, and one "retry all" retries. */
export const INBOX_PAGE_LIMIT = 1000

export function inboxFilter(params: URLSearchParams): InboxFilter {
  const text = (name: string) => {
    const value = params.get(name)?.trim()
    return value === undefined || value === '' ? undefined : value.slice(0, 200)
  }
  const state = text('state')
  return {
    status: params.get('status') === 'pending' ? 'pending' : 'dead',
    state: (PAYMENT_STATES as readonly string[]).includes(state ?? '') ? (state as PaymentState) : undefined,
    orderNumber: text('order'),
    error: text('error'),
  }
}

export function filterParams(filter: InboxFilter): Record<string, string | undefined> {
  return { status: filter.status, state: filter.state, order: filter.orderNumber, error: filter.error }
}

/** The entries the filter takes, oldest first. */
export async function matching(inbox: ConsoleInbox, filter: InboxFilter): Promise<InboxItem[]> {
  const listed = await inbox.list({ status: filter.status, limit: INBOX_PAGE_LIMIT, ...(filter.orderNumber === undefined ? {} : { orderNumber: filter.orderNumber }) })
  const needle = filter.error?.toLowerCase()
  return listed.filter((item) => (filter.state === undefined || item.state === filter.state) && (needle === undefined || (item.lastError ?? '').toLowerCase().includes(needle)))
}

function filterForm(view: View, filter: InboxFilter): Html {
  const option = (value: string, label: string, chosen: string | undefined) => html`<option value="${value}"${value === (chosen ?? '') ? html` selected` : ''}>${label}</option>`
  return html`<form method="get" action="${view.link('/inbox')}" class="filters">
<label>Status<select name="status">${option('dead', 'dead letters', filter.status)}${option('pending', 'pending', filter.status)}</select></label>
<label>State<select name="state">${option('', 'any', filter.state)}${PAYMENT_STATES.map((state) => option(state, state, filter.state))}</select></label>
<label>Order number<input name="order" value="${filter.orderNumber ?? ''}"></label>
<label>Last error contains<input name="error" value="${filter.error ?? ''}"></label>
<button type="submit">Show</button></form>`
}

export async function inboxPage(view: View, source: ConsoleSource, filter: InboxFilter, notice?: Html): Promise<Page> {
  const inbox = source.inbox()
  const title = filter.status === 'dead' ? 'Dead letters' : 'Pending inbox entries'
  if (inbox === undefined)
    return {
      title,
      section: 'inbox',
      body: html`<h1>${title}</h1><p class="notice">${source.origin === 'receiver' ? 'This receiver does not run in inbox mode (createReceiver({ store, inbox: {} })): results are handled as they arrive, and a failing handler answers 500 for the service to deliver again. There are no dead letters to show.' : 'This store keeps no inbox.'}</p>`,
    }
  let counts: { pending: number; dead: number } | undefined
  let items: InboxItem[] = []
  let trouble: string | undefined
  try {
    ;[counts, items] = await Promise.all([inbox.counts(), matching(inbox, filter)])
  } catch (error) {
    trouble = source.describe(error)
  }
  const retryAll =
    items.length > 0
      ? html`<p>${view.form('/inbox/retry', { all: 'matching', ...filterParams(filter) }, `Retry all ${items.length} shown`, { danger: true, name: 'retry-all' })} <span class="muted">makes every entry shown due now (dead ones start again from 0 attempts); each retry is noted on its payment’s timeline with your name.</span></p>`
      : ''
  const body = html`<h1>${title}</h1>
${notice ?? ''}
${counts === undefined ? '' : html`<div class="cards"><div class="card${counts.dead > 0 ? ' urgent' : ''}"><div class="n" data-count="dead">${counts.dead}</div>dead letters</div><div class="card"><div class="n" data-count="pending">${counts.pending}</div>pending</div></div>`}
${trouble === undefined ? '' : html`<p class="notice bad">The inbox could not be read: ${trouble}</p>`}
${filterForm(view, filter)}
${retryAll}
<table><thead><tr><th>Order</th><th>exchange_number</th><th>State</th><th>From</th><th class="num">Attempts</th><th>Received (${view.zone})</th><th>${filter.status === 'dead' ? 'Dead since' : 'Next attempt'}</th><th>Last error</th><th></th></tr></thead><tbody>
${items.length === 0 ? html`<tr><td colspan="9" class="muted">Nothing ${filter.status === 'dead' ? 'dead-lettered' : 'pending'} matches.</td></tr>` : ''}
${items.map(
  (item) => html`<tr data-inbox="${item.status}"><td>${item.orderNumber === null ? '-' : html`<a class="mono" href="${view.link('/payment', { order: item.orderNumber })}">${item.orderNumber}</a>`}</td><td class="mono">${item.exchangeNumber}</td><td>${item.state}</td><td>${item.source}</td><td class="num">${item.attempts}</td><td class="mono">${view.time(item.receivedAt)}</td><td class="mono">${view.time(item.nextAttemptAt)}</td><td>${item.lastError ?? '-'}</td>
<td>${view.form('/inbox/retry', { entry: item.id, ...filterParams(filter) }, 'Retry now')}</td></tr>`,
)}</tbody></table>
${items.length >= INBOX_PAGE_LIMIT ? html`<p class="muted">The first ${INBOX_PAGE_LIMIT} are shown; narrow the filter to see the rest.</p>` : ''}`
  return { title, section: 'inbox', body }
}
