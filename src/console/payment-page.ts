/*
 * One payment's life on one page: what was asked, each delivery and what it was answered, each refusal and why,
 * confirmation, each handler run or failure, lookups, operators' actions, and where it stands now; with what the
 * service's API shows of it beside, when the receiver can ask.
 */
import type { InboxItem } from '../contract/inbox-queue.js'
import type { BookedPayment } from '../contract/payment-book.js'
import type { TimelineEntry } from '../contract/timeline.js'
import { fieldsTable } from './fields-table.js'
import type { Page } from './layout.js'
import { exchangeNumbers, lifeSteps, type LifeStep, sourceLabel, stepChain } from './life.js'
import { html, type Html, joinHtml } from './markup.js'
import type { ConsoleSource } from './source.js'
import { standing } from './standing.js'
import { age, ringgit, type View } from './view.js'

export interface PaymentQuery {
  readonly orderNumber?: string
  readonly exchangeNumber?: string
  readonly uid?: string
}

/** A problem reading one part: the rest of the page is still shown, with this said where the part would be. */
const problem = (text: string) => html`<p class="notice bad">${text}</p>`

async function attempt<T>(source: ConsoleSource, read: () => Promise<T>): Promise<{ value: T } | { error: string }> {
  try {
    return { value: await read() }
  } catch (error) {
    return { error: source.describe(error) }
  }
}

function summary(view: View, booked: BookedPayment | undefined, entries: readonly TimelineEntry[], records: readonly Record<string, unknown>[]): Html {
  const exchanges = [...new Set([...(booked?.exchangeNumber == null ? [] : [booked.exchangeNumber]), ...exchangeNumbers(entries)])]
  const latest = records[0]
  const fromRecord = (name: string) => (typeof latest?.[name] === 'string' && latest[name] !== '' ? (latest[name] as string) : null)
  const buyer = [booked?.buyerName ?? fromRecord('buyer_name'), booked?.buyerEmail ?? fromRecord('buyer_email')].filter((part) => part !== null)
  const rows: [string, Html | string][] = [
    ['Order number', html`<span class="mono">${booked?.orderNumber ?? entries.find((entry) => entry.verified && entry.orderNumber !== null)?.orderNumber ?? '-'}</span>`],
    ['exchange_number', exchanges.length === 0 ? '-' : joinHtml(exchanges.map((number) => html`<span class="mono">${number}</span>`), html`, `)],
  ]
  if (buyer.length > 0) rows.push(['Buyer', buyer.join(', ')])
  if (booked !== undefined) {
    const created = booked.kind === 'result' ? 'first seen from a verified result (not recorded by the client at creation)' : `created by the client (${booked.kind})`
    rows.push(
      [booked.kind === 'result' ? 'Amount' : 'Amount asked', booked.askedSen.length > 1 ? `${ringgit(booked.amountSen)} (asked before: ${booked.askedSen.slice(0, -1).map(ringgit).join(', ')})` : ringgit(booked.amountSen)],
      [booked.kind === 'result' ? 'First seen' : 'Created', `${view.time(booked.createdAt)} (${age(view.now.getTime() - booked.createdAt.getTime())} ago), ${created}`],
      ['Merchant (API UID)', booked.uid === '' ? 'not known' : html`<span class="mono">${booked.uid}</span>`],
      ['State handled', booked.state === null ? 'none yet' : `${booked.state}, at ${view.time(booked.settledAt)}`],
      ['Lookups', `${booked.lookups}; last ${view.time(booked.lastLookupAt)}; next ${view.time(booked.nextLookupAt)}`],
    )
    if (booked.failures > 0 && booked.lastFailure !== null)
      rows.push(['Handler failures', html`<strong>${booked.failures}</strong> since the state was last handled; the latest at ${view.time(booked.lastFailure.at)} (${booked.lastFailure.state}): ${booked.lastFailure.message}`])
    for (const [key, value] of Object.entries(booked.attached)) rows.push([`Attached: ${key}`, String(value)])
  }
  return html`<dl>${rows.map(([term, value]) => html`<dt>${term}</dt><dd>${value}</dd>`)}</dl>`
}

function stepRow(view: View, step: LifeStep, confirming: boolean | undefined, index: number): Html {
  const { last } = step
  const claimed = step.entries.some((entry) => !entry.verified)
  const details = step.entries
    .filter((entry) => entry.message !== null || entry.code !== null)
    .map((entry) => html`<div>${entry.code === null ? '' : html`<span class="mono">${entry.code}</span>: `}${entry.message ?? ''}</div>`)
  const created = last.event === 'created'
  return html`<tr class="${index > 0 ? 'group' : ''}" data-event="${last.event}" data-source="${step.source}">
<td class="mono">${view.time(step.at)}</td>
<td>${sourceLabel(step.source)}</td>
<td>${stepChain(step, confirming).join(' → ')}${claimed ? html`<div class="claimed">Refused before its checksum matched: its numbers are what the message claimed, not the service’s word.</div>` : ''}</td>
<td>${last.state ?? '-'}</td>
<td class="num">${last.status ?? (created ? '' : '-')}</td>
<td>${details}</td>
</tr>`
}

type ShownItem = InboxItem & { readonly fields: Record<string, unknown> }

function inboxSection(view: View, items: readonly ShownItem[]): Html {
  if (items.length === 0) return html``
  return html`<h2>In the inbox</h2><table class="inbox"><thead><tr><th>exchange_number</th><th>State</th><th>Status</th><th class="num">Attempts</th><th>Next / dead since</th><th>Last error</th><th></th></tr></thead><tbody>
${items.map(
  (item) => html`<tr data-inbox="${item.status}"><td class="mono">${item.exchangeNumber}</td><td>${item.state}</td><td><span class="badge ${item.status === 'dead' ? 'failing' : 'open'}">${item.status === 'dead' ? 'dead letter' : 'pending'}</span></td><td class="num">${item.attempts}</td><td class="mono">${view.time(item.nextAttemptAt)}</td><td>${item.lastError ?? '-'}</td>
<td>${view.form('/inbox/retry', { entry: item.id, back: 'payment' }, 'Retry now')}</td></tr>
<tr><td colspan="7"><details><summary>The result as delivered (${item.source})</summary>${fieldsTable(item.fields, 'delivered')}</details></td></tr>`,
)}</tbody></table>`
}

/** The order's inbox entries with their fields: listed by order_number, then read by exchange_number. */
async function inboxEntries(inbox: NonNullable<ReturnType<ConsoleSource['inbox']>>, orderNumber: string): Promise<ShownItem[]> {
  const listed = await inbox.list({ orderNumber })
  const exchanges = [...new Set(listed.map((item) => item.exchangeNumber))]
  return (await Promise.all(exchanges.map((exchange) => inbox.show(exchange)))).flat().filter((item) => item.orderNumber === orderNumber)
}

function apiSection(records: { value: readonly Record<string, unknown>[] } | { error: string } | undefined): Html {
  if (records === undefined) return html`<h2>The service’s record</h2><p class="muted">This console cannot ask the service’s API (the receiver has no credentials, or the console runs over a store alone).</p>`
  if ('error' in records) return html`<h2>The service’s record</h2>${problem(`The status API could not be asked: ${records.error}`)}`
  if (records.value.length === 0) return html`<h2>The service’s record</h2><p class="muted">The status API has no payment with this order number.</p>`
  return html`<h2>The service’s record${records.value.length > 1 ? `s (${records.value.length} attempts, newest first)` : ''}</h2>${records.value.map((record) => fieldsTable(record, 'api-record'))}`
}

export async function paymentPage(view: View, source: ConsoleSource, query: PaymentQuery, notice?: Html): Promise<Page> {
  const asked = query.orderNumber ?? query.exchangeNumber ?? ''
  let booked: BookedPayment | undefined
  let bookProblem: string | undefined
  let orderNumber = query.orderNumber
  // By exchange_number: the order its verified entries name, whose whole life is then read by order_number.
  if (orderNumber === undefined && query.exchangeNumber !== undefined) {
    const byExchange = await attempt(source, () => source.timeline({ exchangeNumber: query.exchangeNumber as string }))
    if ('value' in byExchange) orderNumber = byExchange.value.find((entry) => entry.verified && entry.orderNumber !== null)?.orderNumber ?? undefined
  }
  if (orderNumber !== undefined) {
    const found = await attempt(source, () => source.book.find(orderNumber as string, query.uid === undefined ? undefined : { uid: query.uid }))
    if ('value' in found) booked = found.value
    else bookProblem = found.error
  }
  const timeline = await attempt(source, () => source.timeline(orderNumber !== undefined ? { orderNumber } : { exchangeNumber: query.exchangeNumber ?? '' }))
  const entries = 'value' in timeline ? timeline.value : []
  const inbox = source.inbox()
  const { api } = source
  const [items, records] = await Promise.all([
    inbox === undefined || orderNumber === undefined ? undefined : attempt(source, () => inboxEntries(inbox, orderNumber as string)),
    api === undefined || orderNumber === undefined ? undefined : attempt(source, () => api.records({ orderNumber: orderNumber as string, ...(booked === undefined || booked.uid === '' ? {} : { uid: booked.uid }) })),
  ])
  if (booked === undefined && entries.length === 0 && (records === undefined || !('value' in records) || records.value.length === 0))
    return {
      status: 404,
      title: 'No such payment',
      section: 'payments',
      body: html`<h1>No payment known as <span class="mono">${asked}</span></h1><p>Neither the payment book nor the timeline holds it${records === undefined ? '' : ', and the status API shows none'}.</p>${bookProblem === undefined ? '' : problem(bookProblem)}${'error' in timeline ? problem(timeline.error) : ''}`,
    }
  const where = standing(booked, entries)
  const steps = lifeSteps(entries)
  const recordList = records !== undefined && 'value' in records ? records.value : []
  const actions: Html[] = []
  if (source.api !== undefined && orderNumber !== undefined)
    actions.push(view.form('/payment/lookup', { order: orderNumber, uid: booked?.uid || undefined }, 'Look up now', { name: 'lookup' }))
  const final = booked === undefined ? where.label : `${where.label}${booked.state === null ? '' : ` (state ${booked.state})`}`
  const heading = orderNumber === undefined ? 'exchange_number' : 'Order'
  const body = html`<h1>${heading} <span class="mono">${orderNumber ?? asked}</span> <span class="badge ${where.tone}" data-standing="${where.tone}">${where.label}</span></h1>
${notice ?? ''}
<p class="notice${where.tone === 'failing' ? ' bad' : ''}">${where.sentence}</p>
${actions.length > 0 ? html`<p>${actions} <span class="muted">asks the status API now and hands what it shows to the receiver’s handlers.</span></p>` : ''}
${items === undefined ? '' : 'error' in items ? problem(`The inbox could not be read: ${items.error}`) : inboxSection(view, items.value)}
<div class="split"><div>
${summary(view, booked, entries, recordList)}
${bookProblem === undefined ? '' : problem(`The payment book could not be read: ${bookProblem}`)}
<h2>Life, oldest first</h2>
${'error' in timeline ? problem(`The timeline could not be read: ${timeline.error}`) : ''}
<table class="life"><thead><tr><th>When (${view.zone})</th><th>From</th><th>What happened</th><th>State</th><th class="num">Answer</th><th>Explanation</th></tr></thead><tbody>
${steps.map((step, index) => stepRow(view, step, source.confirming, index))}
<tr class="group final"><td class="mono">${view.time(view.now)}</td><td>Now</td><td colspan="4"><strong>Final state so far: ${final}</strong></td></tr>
</tbody></table>
</div><div>${apiSection(records)}</div></div>`
  return { title: `${heading} ${orderNumber ?? asked}`, section: 'payments', body }
}
