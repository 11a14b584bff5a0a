/*
 * The overview: is anything stuck? The most urgent line first ("paid, handler failing": the money arrived and the
 * shop has not acted on it), apart from every kind of "not paid"; then the window's payments by state and its
 * results per hour, the open payments by age, the sweeper, the inbox and the refusals.
 */
import type { BookedPayment, BookOverview, PaymentPage, SweepStatus } from '../contract/payment-book.js'
import { resultsChart } from './chart.js'
import type { Page } from './layout.js'
import { html, type Html } from './markup.js'
import { paymentRows } from './payments-page.js'
import type { ConsoleSource } from './source.js'
import { age, type View } from './view.js'

const HOUR = 3_600_000
const DAY = 24 * HOUR
export const WINDOWS = { '24h': ['the last 24 hours', DAY], '7d': ['the last 7 days', 7 * DAY], '30d': ['the last 30 days', 30 * DAY] } as const
export type WindowName = keyof typeof WINDOWS

/** The overview's window: a named one, or whole days from a date to a date, in the console's offset. */
export interface OverviewWindow {
  readonly from: Date
  readonly to: Date
  readonly label: string
  readonly name: WindowName | undefined
  readonly fromDay?: string
  readonly toDay?: string
}

/** `2026-11-28` as the start of that day at the console's offset. */
function dayStart(day: string, offsetMinutes: number): Date | undefined {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day)
  if (match === null) return undefined
  const at = Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])) - offsetMinutes * 60_000
  return Number.isFinite(at) ? new Date(at) : undefined
}

export function overviewWindow(params: URLSearchParams, view: View): OverviewWindow {
  const fromDay = params.get('from') ?? ''
  const toDay = params.get('to') ?? ''
  const from = dayStart(fromDay, view.offsetMinutes)
  const toStart = dayStart(toDay, view.offsetMinutes)
  if (from !== undefined && toStart !== undefined && toStart.getTime() >= from.getTime() && toStart.getTime() - from.getTime() < 366 * DAY)
    return { from, to: new Date(toStart.getTime() + DAY), label: `${fromDay} to ${toDay}`, name: undefined, fromDay, toDay }
  const name = (Object.keys(WINDOWS) as WindowName[]).find((key) => key === params.get('window')) ?? '24h'
  const [label, length] = WINDOWS[name]
  return { from: new Date(view.now.getTime() - length), to: view.now, label, name }
}

const card = (count: number | string, label: Html | string, tone = '', key = '') =>
  html`<div class="card${tone === '' ? '' : ` ${tone}`}"><div class="n"${key === '' ? '' : html` data-count="${key}"`}>${count}</div>${label}</div>`

function windowChooser(view: View, window: OverviewWindow): Html {
  return html`<form method="get" action="${view.link('/')}" class="filters">${(Object.keys(WINDOWS) as WindowName[]).map((name) =>
    window.name === name ? html`<strong>${WINDOWS[name][0]}</strong>` : html`<a href="${view.link('/', { window: name })}">${WINDOWS[name][0]}</a>`,
  )}
<label>From (${view.zone})<input type="date" name="from" value="${window.fromDay ?? ''}"></label><label>To<input type="date" name="to" value="${window.toDay ?? ''}"></label><button type="submit">Show</button></form>`
}

function sweeperSection(view: View, status: SweepStatus | undefined): Html {
  if (status === undefined) return html``
  const pass = status.lastPass
  const rows: [string, Html | string][] = [
    ['Lock held by', status.holder === null ? 'nobody now' : html`<span class="mono">${status.holder}</span> until ${view.time(status.heldUntil)}`],
    ['Last pass', pass === null ? 'none noted yet' : html`${view.time(pass.at)} by <span class="mono">${pass.holder}</span>: ${pass.lookups} lookups, ${pass.found} found, ${pass.closed} closed`],
    ['Next turn', pass?.nextAt == null ? '-' : view.time(pass.nextAt)],
  ]
  const failures = pass?.failures ?? []
  return html`<h2>The sweeper</h2><dl data-sweeper>${rows.map(([term, value]) => html`<dt>${term}</dt><dd>${value}</dd>`)}
${failures.length === 0 ? '' : html`<dt>Failed lookups</dt><dd><ul>${failures.map((failure) => html`<li><a class="mono" href="${view.link('/payment', { order: failure.orderNumber })}">${failure.orderNumber}</a>: ${failure.message}</li>`)}</ul></dd>`}</dl>`
}

function ageTable(overview: BookOverview): Html {
  const bands = overview.openByAge
  const rows: [string, number][] = [
    ['under an hour', bands.underHour],
    ['an hour to a day', bands.underDay],
    ['a day to a week', bands.underWeek],
    ['older than a week', bands.older],
  ]
  return html`<table class="ages"><thead><tr><th>Open for</th><th class="num">Payments</th></tr></thead><tbody>${rows.map(
    ([label, count]) => html`<tr><td>${label}</td><td class="num" data-age="${label}">${count}</td></tr>`,
  )}</tbody></table>`
}

export async function overviewPage(view: View, source: ConsoleSource, params: URLSearchParams): Promise<Page> {
  const problems: string[] = []
  const read = async <T>(what: string, run: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await run()
    } catch (error) {
      problems.push(`${what}: ${source.describe(error)}`)
      return undefined
    }
  }
  const window = overviewWindow(params, view)
  const inbox = source.inbox()
  const [overview, failing, open, sweep, counts] = await Promise.all([
    read('the payment book', () => source.book.overview({ from: window.from, to: window.to })),
    read('the payments whose handler fails', (): Promise<PaymentPage> => source.book.list({ status: 'paid_failing', limit: 10 })),
    read('the open payments', (): Promise<BookedPayment[]> => source.book.listOpen({ limit: 10 })),
    read('the sweeper', () => source.book.sweepStatus()),
    inbox === undefined ? undefined : read('the inbox', () => inbox.counts()),
  ])
  const refusals = source.refusals()
  const statuses = overview?.byStatus
  const notPaid = statuses === undefined ? undefined : statuses.open + statuses.failed + statuses.abandoned
  const urgent = [
    overview === undefined ? '' : card(overview.paidFailing, html`<a href="${view.link('/payments', { status: 'paid_failing' })}">paid, handler failing</a>`, overview.paidFailing > 0 ? 'urgent' : '', 'paid_failing'),
    overview === undefined ? '' : card(overview.failing, 'with a failing handler (any state)', overview.failing > overview.paidFailing ? 'warn' : '', 'failing'),
    counts === undefined ? '' : card(counts.dead, html`<a href="${view.link('/inbox')}">dead letters</a>`, counts.dead > 0 ? 'urgent' : '', 'dead'),
    counts === undefined ? '' : card(counts.pending, 'inbox entries pending', '', 'pending'),
    refusals === undefined ? '' : card(refusals.total, html`<a href="${view.link('/refusals')}">refused deliveries</a>`, refusals.total > 0 ? 'warn' : '', 'refused'),
  ]
  const link = (status: string) => view.link('/payments', { status, from: window.fromDay, to: window.toDay })
  const created =
    statuses === undefined
      ? []
      : [
          card(statuses.succeeded, html`<a href="${link('succeeded')}">paid</a>`, '', 'succeeded'),
          card(notPaid ?? 0, 'not paid', '', 'not_paid'),
          card(statuses.open, html`<a href="${link('open')}">of them open</a>`, '', 'open'),
          card(statuses.failed, html`<a href="${link('failed')}">failed</a>`, '', 'failed'),
          card(statuses.abandoned, html`<a href="${link('abandoned')}">abandoned</a>`, '', 'abandoned'),
        ]
  const body = html`<h1>Overview</h1>
${problems.map((text) => html`<p class="notice bad">Could not read ${text}</p>`)}
<div class="cards">${urgent}</div>
${failing === undefined || failing.payments.length === 0 ? '' : html`<h2>Paid, handler failing: fix the handler, then retry</h2>${paymentRows(view, failing.payments)}`}
<h2>Payments created in ${window.label}</h2>
${windowChooser(view, window)}
<div class="cards">${created}</div>
<h2>Results per hour</h2>
${overview === undefined ? '' : resultsChart(view, overview.perHour)}
<div class="split"><div><h2>Open payments by age</h2>${overview === undefined ? '' : ageTable(overview)}</div><div>${sweeperSection(view, sweep)}</div></div>
<h2>Open payments, oldest first</h2>${open === undefined ? '' : paymentRows(view, open)}
${summaryLine(view, open)}`
  return { title: 'Overview', section: 'overview', body }
}

function summaryLine(view: View, open: readonly BookedPayment[] | undefined): Html {
  const oldest = open?.[0]
  return oldest === undefined ? html`` : html`<p class="muted">The oldest was created ${age(view.now.getTime() - oldest.createdAt.getTime())} ago.</p>`
}
