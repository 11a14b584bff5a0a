/*
 * The console's two actions, each a POST from its own page (the guard checked its token and origin first):
 * "look up now" for one payment, and "retry" of inbox entries (one, or all that match a filter). Each answers with
 * where to go next (the page the operator acted from, saying what was done), never a page of its own, so a reload
 * cannot repeat it.
 */
import { PAYMENT_STATES, type PaymentState } from '../core/payment.js'
import type { RetryItem } from '../receiver/operator.js'
import { filterParams, inboxFilter, matching } from './inbox-page.js'
import type { ConsoleSource } from './source.js'
import type { View } from './view.js'

/** Where to send the browser after an action, or why it could not be done (a 4xx for the page). */
export type ActionResult = { readonly location: string } | { readonly status: number; readonly message: string }

const text = (form: URLSearchParams, name: string): string | undefined => {
  const value = form.get(name)
  return value === null || value === '' ? undefined : value
}

export async function lookUpNow(view: View, source: ConsoleSource, form: URLSearchParams): Promise<ActionResult> {
  const orderNumber = text(form, 'order')
  if (orderNumber === undefined) return { status: 400, message: 'say which order to look up' }
  if (source.api === undefined) return { status: 409, message: 'this console cannot ask the service’s API: the receiver has no credentials (or the console runs over a store alone)' }
  const uid = text(form, 'uid')
  await source.api.lookUp({ orderNumber, ...(uid === undefined ? {} : { uid }) }, view.operator)
  return { location: view.link('/payment', { order: orderNumber, uid, done: 'lookup' }) }
}

export async function retry(view: View, source: ConsoleSource, form: URLSearchParams): Promise<ActionResult> {
  const inbox = source.inbox()
  if (inbox === undefined) return { status: 409, message: 'there is no inbox to retry from' }
  const filter = inboxFilter(form)
  let items: RetryItem[]
  if (form.get('all') === 'matching') items = await matching(inbox, filter)
  else {
    // One entry, by its id (`exchange_number:state`, as InboxItem.id); its order is read from the inbox, not from
    // the form, so the note goes on the timeline the entry belongs to.
    const entry = text(form, 'entry') ?? ''
    const at = entry.lastIndexOf(':')
    const state = entry.slice(at + 1)
    if (at <= 0 || !(PAYMENT_STATES as readonly string[]).includes(state)) return { status: 400, message: 'say which inbox entry to retry' }
    items = (await inbox.show(entry.slice(0, at))).filter((item) => item.state === (state as PaymentState))
  }
  const count = items.length === 0 ? 0 : await inbox.retry(items, view.operator)
  const done = { done: 'retry', count }
  if (form.get('back') === 'payment' && items[0]?.orderNumber != null) return { location: view.link('/payment', { order: items[0].orderNumber, ...done }) }
  return { location: view.link('/inbox', { ...filterParams(filter), ...done }) }
}
